import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, ROOT, runCli, tempDir } from './support/cli.js';

// A real project's history through the verification of issue 14: nine consecutive upstream commits
// of brace-expansion (a runtime dependency, balanced-match; a test framework, tape), replayed one
// node per commit. Each step is verified with the project's own `npm test` after a real
// `npm install` from the registry in the sandbox (node_modules/ is git-ignored upstream), and the
// build ends with upstream's tree. It needs the npm registry from the verification sandbox and
// takes about two minutes (a cold npm install per step), so it runs when LONGBUILD_REPLAY=1:
//   npm run build && LONGBUILD_REPLAY=1 npx vitest run test/real-project-replay.test.ts

const FIXTURE = join(ROOT, 'test', 'fixtures', 'replay');
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe.skipIf(process.env.LONGBUILD_REPLAY !== '1')('replaying a real npm project (brace-expansion, 9 upstream commits; LONGBUILD_REPLAY=1)', () => {
  it('R-26 R-27 every step verified by the project\'s own tests after npm install, first time; the build ends with upstream\'s tree', () => {
    const manifest = JSON.parse(readFileSync(join(FIXTURE, 'commits.json'), 'utf8')) as { base: string; commits: string[]; finalTree: string };
    const upstream = tempDir('longbuild-upstream-');
    execFileSync('git', ['clone', '-q', '--bare', join(FIXTURE, 'brace-expansion.bundle'), upstream]);
    // The user's repository starts at the commit before the range.
    const repo = tempDir();
    git(repo, 'init', '-q', '-b', 'main');
    execFileSync('tar', ['-x', '-f', '-'], { cwd: repo, input: execFileSync('git', ['--git-dir', upstream, 'archive', manifest.base]) });
    git(repo, 'add', '-A');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'upstream base');
    const cfg = tempDir('longbuild-replay-cfg-');
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'replay brace-expansion 1.1.7..1.1.11' }));
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
      planner: { command: ['node', join(FIXTURE, 'planner.mjs')] },
      worker: { command: ['node', join(FIXTURE, 'worker.mjs')] },
      // The install writes no lock file (upstream has none) and keeps its cache in the sandbox's own /tmp.
      setup: [['npm', 'install', '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error']],
      verify: [['npm', 'test']],
      verifyTimeoutSeconds: 300,
      env: { allow: ['npm_config_cache', 'npm_config_update_notifier'] },
      sandbox: { mode: 'bwrap', network: { planner: false, worker: false, verify: true } },
      // Upstream changed what it changed: its nodes declare it (the planner reads the bundle), and
      // tests it stopped passing would be recorded as retired (R-49..R-51).
      testChanges: 'record',
      maxAttempts: 1,
    }));
    const env = { npm_config_cache: '/tmp/npm-cache', npm_config_update_notifier: 'false' };
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env });
    const started = Date.now();
    const run = runCli(['run'], { cwd: repo, env, timeoutMs: 900_000 });
    expect(run.code, run.stderr).toBe(0);
    const seconds = (Date.now() - started) / 1000;

    const events = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'IntegrationFailed')).toEqual([]);
    const verifications = events.filter((e) => e.type === 'VerificationFinished');
    expect(verifications).toHaveLength(manifest.commits.length);
    for (const v of verifications) {
      expect(v.data.passed).toBe(true);
      expect(v.data.evidence.map((c: { argv: string[]; exitCode: number }) => [c.argv[1], c.exitCode])).toEqual([['install', 0], ['test', 0]]);
    }
    // The project's own tests ran (tape's summary in the last job's evidence).
    const last = cliJson(['evidence', verifications.at(-1).data.jobId], { cwd: repo });
    expect(last.streams.find((s: { name: string }) => s.name.startsWith('npm test') && s.name.endsWith('stdout')).text).toMatch(/# ok/);
    // tape's TAP was read: every step's tests ratcheted; upstream's first commit changed a dependency, declared.
    expect(verifications.map((v) => [v.data.tests?.passed, v.data.tests?.lostCount])).toEqual(verifications.map(() => [172, 0]));
    const sealed = events.find((e) => e.type === 'HorizonSealed');
    expect(sealed.data.nodes.find((n: { id: string }) => n.id === 'c1').changes).toEqual(['verification']);
    const head = cliJson(['status'], { cwd: repo }).integrationHead as string;
    expect(git(repo, 'rev-parse', `${head}^{tree}`)).toBe(manifest.finalTree);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    console.log(`replay: ${manifest.commits.length} upstream commits verified in ${seconds.toFixed(0)} s (npm install + npm test each)`);
  }, 900_000);
});
