/**
 * Setup without giving the code the network (R-57), with real parts: a real npm registry in a
 * child process (test/support/npm-registry.mjs), real `npm ci` and `npm test` in real bubblewrap
 * sandboxes, real git. What is checked is what a user would: what reached the registry (an
 * exfiltration is a request it logged), what is on the integration ref, what is on disk.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HAVE_BWRAP } from './support/bwrap.js';
import { events, git, onRef, promoted } from './support/outcomes.js';
import { cliJson, runCli, tempDir } from './support/cli.js';
import { startRegistry, type LocalRegistry } from './support/npm-registry.js';

if (!HAVE_BWRAP) console.log('setup-phase tests skipped: bubblewrap is not installed or cannot create user namespaces here (apt-get install bubblewrap)');
const maybe = HAVE_BWRAP || process.env.CI === 'true' ? describe : describe.skip;


/** A lifecycle script that calls the registry it was installed from: a request logged there is code that had the network. */
const phoneHome = (what: string) => `node -e "fetch(process.env.npm_config_registry + 'exfil-${what}').catch(() => {})"`;

let registry: LocalRegistry | null = null;
const theRegistry = (): LocalRegistry => {
  registry ??= startRegistry([{
    name: 'tiny-dep', version: '1.0.0',
    manifest: { main: 'index.js', scripts: { postinstall: phoneHome('dep-postinstall') } },
    files: { 'index.js': 'module.exports = (n) => n * 2;\n' },
  }]);
  return registry;
};
afterAll(() => registry?.stop());

/** npm's own cache on the host, for making the lock file: never the build's. */
const HOST_NPM = { npm_config_cache: tempDir('longbuild-npm-host-'), npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };

/**
 * The user's npm project: `double` from the registry's tiny-dep, a test of it, a lock file, and a
 * build whose worker writes what `attacks` says for each node.
 */
function userProject(): string {
  const reg = theRegistry();
  const repo = tempDir();
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'package.json'), `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, scripts: { test: 'node --test' }, dependencies: { 'tiny-dep': '1.0.0' } }, null, 2)}\n`);
  writeFileSync(join(repo, '.npmrc'), `registry=${reg.url}\n`);
  writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
  execFileSync('mkdir', ['-p', join(repo, 'src'), join(repo, 'test')]);
  writeFileSync(join(repo, 'src', 'double.js'), "module.exports = require('tiny-dep');\n");
  writeFileSync(join(repo, 'test', 'double.test.js'), "const test = require('node:test');\nconst assert = require('node:assert');\ntest('doubles', () => assert.strictEqual(require('../src/double.js')(21), 42));\n");
  execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts'], { cwd: repo, env: { ...process.env, ...HOST_NPM }, stdio: 'pipe' });
  git(repo, 'add', '.');
  git(repo, '-c', 'user.name=u', '-c', 'user.email=u@x', 'commit', '-q', '-m', 'the user\'s project');
  return repo;
}

function project(o: { features: { id: string; changes?: string[] }[]; attacks: Record<string, Record<string, string>>; config: Record<string, unknown> }): string {
  const repo = userProject();
  const cfg = tempDir('longbuild-cfg-');
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ title: 'calc', features: o.features }));
  writeFileSync(join(cfg, 'attacks.json'), JSON.stringify(o.attacks));
  writeFileSync(join(cfg, 'planner.mjs'), `import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
const nodes = input.request.features.map((f) => ({ id: f.id, kind: 'writable', title: f.id, deps: [], ...(f.changes ? { changes: f.changes } : {}) }));
process.stdout.write(JSON.stringify({ detailed: [{ id: 'm', title: 'calc', nodes }], coarse: [] }));
`);
  writeFileSync(join(cfg, 'worker.mjs'), `import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
const packet = JSON.parse(readFileSync(0, 'utf8'));
const files = JSON.parse(readFileSync(join(${JSON.stringify(cfg)}, 'attacks.json'), 'utf8'))[packet.nodeId] ?? {};
for (const [p, text] of Object.entries(files)) { mkdirSync(dirname(p), { recursive: true }); writeFileSync(p, text); }
`);
  const config = {
    planner: { command: ['node', join(cfg, 'planner.mjs')], timeoutSeconds: 60, route: 'test:setup-phase' },
    worker: { command: ['node', join(cfg, 'worker.mjs')], timeoutSeconds: 60 },
    maxAttempts: 1,
    ...o.config,
  };
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return repo;
}

const test = (name: string, body: string) => `const test = require('node:test');\nconst assert = require('node:assert');\ntest('${name}', async () => {\n${body}\n});\n`;

maybe('setup without giving the code the network (R-57)', () => {
  it('R-57 the README recipe ("setup": [["npm", "ci"]]) works under the default sandbox; no lifecycle script, test or candidate reaches the network or the package cache', () => {
    const reg = theRegistry();
    const repo = project({
      features: [{ id: 'benign' }, { id: 'lifecycle', changes: ['verification'] }, { id: 'net-test' }, { id: 'poison' }],
      attacks: {
        benign: { 'src/quad.js': "const double = require('tiny-dep');\nmodule.exports = (n) => double(double(n));\n", 'test/quad.test.js': test('quadruples', "  assert.strictEqual(require('../src/quad.js')(2), 8);") },
        // A planned change of the verification files: its own lifecycle scripts, and an .npmrc asking npm to run them.
        lifecycle: {
          'package.json': `${JSON.stringify({ name: 'calc', version: '1.0.0', private: true, scripts: { preinstall: phoneHome('preinstall'), postinstall: phoneHome('postinstall'), prepare: phoneHome('prepare'), test: 'node --test' }, dependencies: { 'tiny-dep': '1.0.0' } }, null, 2)}\n`,
          '.npmrc': `registry=${reg.url}\nignore-scripts=false\n`,
        },
        // The code under test calls the registry while its tests run.
        'net-test': { 'test/net.test.js': test('calls out', `  await fetch(${JSON.stringify(`${reg.url}exfil-test`)}).catch(() => {});`) },
        // The code under test writes into the package cache, for the next job's install to read.
        poison: { 'test/poison.test.js': test('poisons', "  const fs = require('node:fs');\n  for (const d of ['npm', 'npm/_cacache']) { try { fs.writeFileSync(process.env.LONGBUILD_PACKAGES + '/' + d + '/poison', 'x'); } catch {} }") },
      },
      config: { setup: [['npm', 'ci']], verify: [['npm', 'test']] },
    });
    const before = reg.requests().length; // making the lock file asked for the packument
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(promoted(repo).sort()).toEqual(['benign', 'lifecycle', 'net-test', 'poison']);
    expect(onRef(repo, 'src/quad.js')).not.toBeNull();
    const requests = reg.requests().slice(before);
    // Setup reached the registry; nothing else did.
    expect(requests.filter((q) => q.includes('exfil'))).toEqual([]);
    // Every job and the base measurement installed; the tarball came over the network once: the build's cache served the rest.
    const installs = events(repo).filter((e) => e.type === 'VerificationFinished').length;
    expect(installs).toBeGreaterThanOrEqual(4);
    expect(requests.filter((q) => q.endsWith('.tgz'))).toEqual(['GET /tiny-dep/-/tiny-dep-1.0.0.tgz']);
    // The cache is the build's own, on the host; nothing the code under test wrote is in it.
    const cache = join(repo, '.longbuild', 'packages', 'npm');
    expect(readdirSync(cache)).toContain('_cacache');
    expect(existsSync(join(cache, 'poison'))).toBe(false);
    expect(existsSync(join(cache, '_cacache', 'poison'))).toBe(false);
    // The evidence says which phase each command ran in.
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  }, 400_000);

  it('R-57 an install in verification (no network) fails at once with one line saying so, not at its timeout', () => {
    const reg = theRegistry();
    const repo = project({ features: [{ id: 'benign' }], attacks: { benign: { 'src/x.js': 'module.exports = 1;\n' } }, config: { verify: [['npm', 'ci'], ['npm', 'test']], verifyTimeoutSeconds: 900 } });
    const before = reg.requests().length;
    const started = Date.now();
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 300_000 });
    const seconds = (Date.now() - started) / 1000;
    expect(r.code).not.toBe(0);
    const reasons = events(repo).filter((e) => e.type === 'VerificationFinished' || e.type === 'IntegrationFailed').map((e) => e.data.reason).filter((x) => typeof x === 'string');
    expect(reasons.some((x) => /^\["npm","ci"\] exited with 1: it needs the network, and verification has none \(install dependencies in "setup", which has it; R-57\)/.test(x)), reasons.join('\n')).toBe(true);
    expect(reg.requests().slice(before)).toEqual([]);
    console.log(`an install without the network failed the build in ${seconds.toFixed(1)} s (the timeout is 900 s a command)`);
  }, 400_000);

  it('R-57 a blueprint takes the same setup: its npm project installs in the setup phase and verifies offline; status names each phase\'s network', () => {
    const repo = userProject();
    const bp = join(tempDir('longbuild-bp-'), 'blueprint.json');
    writeFileSync(bp, JSON.stringify({
      request: { title: 'calc' }, setup: [['npm', 'ci']], verify: [['npm', 'test']], detailedWindow: 1,
      milestones: [{ id: 'm', title: 'quad', nodes: [{ id: 'quad', kind: 'writable', deps: [], files: {
        'src/quad.js': "const double = require('tiny-dep');\nmodule.exports = (n) => double(double(n));\n",
        'test/quad.test.js': test('quadruples', "  assert.strictEqual(require('../src/quad.js')(2), 8);"),
      } }] }],
    }));
    cliJson(['init', '--blueprint', bp], { cwd: repo });
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(promoted(repo)).toEqual(['quad']);
    expect(onRef(repo, 'src/quad.js')).not.toBeNull();
    expect(runCli(['status'], { cwd: repo }).stdout).toMatch(/network: planner on, worker on, verify off, setup on/);
  }, 400_000);
});
