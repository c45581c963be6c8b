/**
 * Issue 16, warm caches across builds: a verification cache that several builds of one repository
 * share (config `cache.path`, or LONGBUILD_CACHE_DIR), still authenticated by the key kept in it
 * and hidden from every sandboxed process: a second build of the same work, or a rebuilt
 * build directory, replays every verification the first passed; a worker cannot reach it.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

const receipts = (repo: string): { cacheHit: boolean }[] =>
  runCli(['log', '--type', 'IntegrationPromoted', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data.receipt);

describe('a verification cache shared by builds (issue 16)', () => {
  it('R-27 a second build of the same blueprint with LONGBUILD_CACHE_DIR replays every verification the first ran; the same tree, and cache stats name the shared directory', () => {
    const shared = tempDir('longbuild-shared-cache-');
    const env = { LONGBUILD_CACHE_DIR: shared };
    const first = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: first, env });
    cliJson(['run'], { cwd: first, env });
    expect(receipts(first).some((r) => r.cacheHit)).toBe(false);
    const second = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: second, env });
    const run = cliJson(['run'], { cwd: second, env });
    expect(run.outcome).toBe('horizon_complete');
    const r2 = receipts(second);
    expect(r2.length).toBeGreaterThan(0);
    expect(r2.every((r) => r.cacheHit)).toBe(true);
    expect(cliJson(['status'], { cwd: second }).integrationHead).toBe(cliJson(['status'], { cwd: first }).integrationHead);
    // Nothing was written to the second build's own cache; `cache stats` reads the shared one.
    expect(existsSync(join(second, '.longbuild', 'cache', 'entries'))).toBe(false);
    const stats = cliJson(['cache', 'stats'], { cwd: second, env });
    expect(stats.dir).toBe(shared);
    expect(stats.stats.hits).toBeGreaterThanOrEqual(r2.length);
    // Without the variable the second build's cache is its own (and empty): nothing is replayed.
    const third = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: third });
    cliJson(['run'], { cwd: third });
    expect(receipts(third).every((r) => !r.cacheHit)).toBe(true);
  });

  it('R-30 R-32 config cache.path: shared by a rebuilt build directory, never visible to a worker that tries to plant an entry in it', () => {
    const cfg = tempDir('longbuild-cfg-');
    const cache = join(cfg, 'shared-cache');
    writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'mod', kind: 'writable', deps: [] }] }], coarse: [] }));\n");
    // A hostile worker: it looks for the shared cache's entries and tries to plant one, then does its job.
    writeFileSync(join(cfg, 'worker.mjs'), `import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';\nconst dir = ${JSON.stringify(join(cache, 'entries'))};\nlet seen = -1; try { seen = readdirSync(dir).length; } catch {}\ntry { mkdirSync(dir, { recursive: true }); writeFileSync(dir + '/planted', 'x'); } catch {}\nconsole.log('entries seen: ' + seen);\nwriteFileSync('mod.txt', 'module\\n');\n`);
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'one module' }));
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
      planner: { command: ['node', './planner.mjs'] }, worker: { command: ['node', './worker.mjs'] },
      verify: [['node', '-e', "require('fs').readFileSync('mod.txt')"]], cache: { path: './shared-cache' },
    }));
    mkdirSync(cache, { recursive: true });
    const build = () => {
      const repo = tempDir();
      cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
      expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
      return repo;
    };
    build();
    expect(existsSync(join(cache, 'entries', 'planted'))).toBe(false);
    expect(readdirSync(join(cache, 'entries')).length).toBeGreaterThan(0);
    const second = build();
    expect(receipts(second).every((r) => r.cacheHit)).toBe(true);
    // The worker of the second build saw none of the entries the first build stored, and planted nothing.
    expect(cliJson(['evidence', 'mod.1'], { cwd: second }).streams[0].text).toMatch(/^entries seen: -1/);
    expect(existsSync(join(cache, 'entries', 'planted'))).toBe(false);
  });
});
