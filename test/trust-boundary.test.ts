/**
 * The trust boundary (R-29..R-33), proved by attacks: each test is a hostile planner, worker
 * or verified program doing what issue 12 found it could do, with real git repositories, real
 * bubblewrap sandboxes and real processes, and each asserts what a user would check — what is
 * on the integration ref, what the receipt says, what changed on disk, which processes are alive.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HAVE_BWRAP } from './support/bwrap.js';
import { revealed } from './support/revealed.js';
import { cliJson, ROOT, runCli, tempDir, userRepo } from './support/cli.js';

if (!HAVE_BWRAP) console.log('trust-boundary tests skipped: bubblewrap is not installed or cannot create user namespaces here (apt-get install bubblewrap)');
// CI installs bubblewrap and can run it: there, a missing sandbox is a failure, not a skip.
const maybe = HAVE_BWRAP ? describe : describe.skip;
describe('the sandbox can run where CI runs', () => {
  it.runIf(process.env.CI === 'true')('R-30 bubblewrap is installed and creates its namespaces in CI', () => {
    expect(HAVE_BWRAP).toBe(true);
  });
});

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
const events = (repo: string): { type: string; data: any }[] =>
  runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
const integrationFiles = (repo: string) => git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration').split('\n').filter((l) => l !== '');

/** SHA-256 of every file under `dir` (symlinks by target), keyed by relative path. */
function snapshot(dir: string, skip: (rel: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      const p = rel === '' ? name : `${rel}/${name}`;
      if (skip(p)) continue;
      const st = statSync(join(dir, p), { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(p);
      else out[p] = createHash('sha256').update(st ? readFileSync(join(dir, p)) : 'dangling').digest('hex');
    }
  };
  walk('');
  return out;
}

const FAILING_TEST = `"use strict";\nrequire("node:test")("attack", () => { throw new Error("this code must never be promoted"); });\n`;

/**
 * A command-driven build of one feature ("hello"): the example planner (or `planner`), and a
 * worker that is `workerScript` (sh), run after the example worker wrote its files. The paths
 * of the user's repository and build directory reach the scripts as ATTACK_REPO / ATTACK_BUILD,
 * as a prompt-injected agent would learn them.
 */
function attackBuild(o: { workerScript?: string; plannerScript?: string; verify?: string[][]; config?: Record<string, unknown>; features?: string[] }): { repo: string; cfg: string } {
  const repo = userRepo();
  const cfg = tempDir('longbuild-cfg-');
  cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ title: 'attack', features: o.features ?? ['hello'] }));
  writeFileSync(join(cfg, 'worker.sh'), `set -u\nnode ${join(cfg, 'worker.mjs')} >/dev/null\n${o.workerScript ?? ''}\nexit 0\n`);
  writeFileSync(join(cfg, 'planner.sh'), `set -u\n${o.plannerScript ?? ''}\nexec node ${join(cfg, 'planner.mjs')}\n`);
  const config = {
    planner: { command: ['sh', join(cfg, 'planner.sh')], timeoutSeconds: 60, route: 'test:attack' },
    worker: { command: ['sh', join(cfg, 'worker.sh')], timeoutSeconds: 60 },
    verify: o.verify ?? [['node', '--test']],
    env: { allow: ['ATTACK_REPO', 'ATTACK_BUILD'] },
    maxAttempts: 1,
    ...o.config,
  };
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, cfg };
}

const attackEnv = (repo: string) => ({ ATTACK_REPO: repo, ATTACK_BUILD: join(repo, '.longbuild') });

/** Live processes whose command line holds `marker` (read from outside every sandbox). */
function withMarker(marker: string): number[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(marker) && !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z ');
    } catch {
      return false;
    }
  }).map(Number);
}

maybe('trust boundary: attacks that must fail (R-29..R-33)', () => {
  it('R-31 attack 1: a git filter driver planted in the shared git config and attributes never runs in the integrator; the failing test is what is verified', () => {
    const { repo } = attackBuild({
      workerScript: `
common=$(git rev-parse --git-common-dir)
printf '[filter "x"]\\n\\tsmudge = printf "require(\\\\"node:test\\\\")(\\\\"ok\\\\",()=>{})"\\n\\tclean = cat\\n' >> "$common/config"
mkdir -p "$common/info" && echo '*.test.js filter=x' >> "$common/info/attributes"
echo '*.test.js filter=x' > .gitattributes
printf '%s' '${FAILING_TEST.replace(/'/g, "'\\''")}' > test/attack.test.js
# and straight into the user's repository, as a linked worktree could
printf '[filter "x"]\\n\\tsmudge = true\\n' >> "$ATTACK_REPO/.git/config" 2>/dev/null || true
`,
    });
    const userConfig = readFileSync(join(repo, '.git', 'config'), 'utf8');
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1); // blocked: the node failed its only attempt
    expect(integrationFiles(repo)).not.toContain('test/attack.test.js');
    const v = events(repo).find((e) => e.type === 'VerificationFinished')!;
    expect(v.data.passed).toBe(false);
    expect(v.data.evidence[0].exitCode).not.toBe(0);
    expect(events(repo).some((e) => e.type === 'IntegrationPromoted')).toBe(false);
    expect(readFileSync(join(repo, '.git', 'config'), 'utf8')).toBe(userConfig);
    expect(existsSync(join(repo, '.longbuild', 'integrator.git', 'info', 'attributes')) && readFileSync(join(repo, '.longbuild', 'integrator.git', 'info', 'attributes'), 'utf8')).toBe('');
    // The integrator's own config defines no filter: the planted one never reached it.
    expect(readFileSync(join(repo, '.longbuild', 'integrator.git', 'config'), 'utf8')).not.toMatch(/filter/);
  }, 120_000);

  it('R-32 attack 2: a worker writing a passing cache entry through ../../cache reaches nothing; a forged entry is never a hit', () => {
    const { repo } = attackBuild({
      workerScript: `
for d in ../../cache "$ATTACK_BUILD/cache"; do mkdir -p "$d/keys" "$d/entries" 2>/dev/null && echo forged > "$d/keys/$(printf %064d 0)" 2>/dev/null; done
printf '%s' '${FAILING_TEST.replace(/'/g, "'\\''")}' > test/attack.test.js
`,
    });
    expect(runCli(['run'], { cwd: repo, env: attackEnv(repo) }).code).toBe(1);
    const cacheDir = join(repo, '.longbuild', 'cache');
    // The forged key is not there (the head's own tests, measured for the ratchet, may be: a real pass).
    expect(existsSync(join(cacheDir, 'keys')) ? readdirSync(join(cacheDir, 'keys')) : []).not.toContain('0'.repeat(64));
    const v = events(repo).find((e) => e.type === 'VerificationFinished')!;
    expect(v.data).toMatchObject({ passed: false });
    expect(v.data.evidence[0].cacheHit).toBe(false);
    expect(integrationFiles(repo)).not.toContain('test/attack.test.js');
  }, 120_000);

  it('R-30 attack 3: a setsid daemon started by a worker dies with its call; one left by a verification fails it and is not cached', async () => {
    const marker = `lb-daemon-${process.pid}-${Date.now()}`;
    const { repo } = attackBuild({
      workerScript: `setsid sh -c 'sleep 30; git -C "$ATTACK_REPO" update-ref refs/heads/longbuild/integration HEAD' ${marker}-worker </dev/null >/dev/null 2>&1 &\nsleep 0.2`,
      verify: [['sh', '-c', `setsid sh -c 'sleep 30' ${marker}-verify </dev/null >/dev/null 2>&1 & sleep 0.2; exit 0`]],
    });
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1);
    expect(withMarker(marker)).toEqual([]); // nothing of either call is alive
    const v = events(repo).find((e) => e.type === 'VerificationFinished')!;
    expect(v.data.passed).toBe(false);
    expect(v.data.reason).toMatch(/left processes behind/);
    expect(existsSync(join(repo, '.longbuild', 'cache', 'keys')) ? readdirSync(join(repo, '.longbuild', 'cache', 'keys')) : []).toEqual([]);
    expect(integrationFiles(repo)).toEqual(['README.md']);
  }, 120_000);

  it('R-29 R-30 attack 4: a worker cannot write outside its clone, and a symlink leaving the tree is refused (R-31)', () => {
    const { repo } = attackBuild({
      workerScript: `
echo pwned > "$ATTACK_REPO/pwned.txt" 2>/dev/null
echo pwned > "$ATTACK_REPO/.git/pwned" 2>/dev/null
git -C "$ATTACK_REPO" config core.hooksPath /tmp/evil-hooks 2>/dev/null
echo pwned > "$ATTACK_BUILD/pwned" 2>/dev/null
echo pwned > ../../pwned 2>/dev/null; echo pwned > ../pwned 2>/dev/null
echo pwned > /proc/$PPID/cwd/pwned 2>/dev/null
ln -s /etc/passwd passwd-link
`,
    });
    const skip = (rel: string) => rel.startsWith('.longbuild');
    const beforeRepo = snapshot(repo, skip);
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1);
    expect(snapshot(repo, skip)).toEqual(beforeRepo); // work tree and .git (config, hooks, attributes) unchanged
    const buildFiles = Object.keys(snapshot(join(repo, '.longbuild')));
    expect(buildFiles.filter((f) => f.includes('pwned'))).toEqual([]);
    const finished = events(repo).find((e) => e.type === 'AttemptFinished')!;
    expect(finished.data.outcome).toBe('failed');
    expect(finished.data.reason).toMatch(/R-31.*symlink 'passwd-link' points outside the tree/);
    expect(integrationFiles(repo)).toEqual(['README.md']);
  }, 120_000);

  it('R-31 attack 4c: a file name that is not UTF-8 is refused by its escaped bytes and wedges nothing: the node fails, `retry` and a second run go on, `cancel` ends it', () => {
    const { repo } = attackBuild({ workerScript: `printf pwned > "$(printf 'f\\377\\376.txt')"` });
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.stderr).not.toMatch(/internal error|ENOENT/);
    expect(r.code).toBe(1);
    const finished = events(repo).filter((e) => e.type === 'AttemptFinished');
    expect(finished.at(-1)!.data).toMatchObject({ outcome: 'failed', reason: "R-31: the file name 'f\\xff\\xfe.txt' is not UTF-8: name files in UTF-8" });
    // The operator's way out works: retry runs the node again (refused again, no crash), cancel gives it up.
    expect(runCli(['retry', 'hello-module'], { cwd: repo }).code).toBe(0);
    const again = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(again.stderr).not.toMatch(/internal error|ENOENT/);
    expect(events(repo).filter((e) => e.type === 'AttemptFinished')).toHaveLength(2);
    const cancel = runCli(['cancel', 'hello-module'], { cwd: repo });
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(integrationFiles(repo)).toEqual(['README.md']);
  }, 120_000);

  it('R-31 attack 4d: a two-hop symlink chain (d/up -> .., gp -> d/up/../..) is judged where it ends: refused, nothing on the integration ref', () => {
    const { repo } = attackBuild({ workerScript: 'mkdir -p d && ln -s .. d/up && ln -s d/up/../.. gp' });
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1);
    const finished = events(repo).find((e) => e.type === 'AttemptFinished' && e.data.outcome === 'failed') ?? events(repo).find((e) => e.type === 'IntegrationFailed');
    expect(JSON.stringify(finished!.data)).toMatch(/R-31.*symlink 'gp' points outside the tree: it leads above the tree through 1 more link/);
    expect(integrationFiles(repo)).toEqual(['README.md']);
  }, 120_000);

  it('R-31 attack 4e: a candidate of more files than maxFiles allows beyond the base is refused before git hashes any', () => {
    const { repo } = attackBuild({ workerScript: 'mkdir -p many && for i in $(seq 1 60); do : > many/f$i; done', config: { maxFiles: 50 } });
    const r = runCli(['run', '--json'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1);
    const failed = events(repo).find((e) => e.type === 'AttemptFinished')!;
    expect(failed.data).toMatchObject({ outcome: 'failed', reason: 'R-31: the candidate adds more than 50 files (maxFiles; the base holds 1)' });
    expect(integrationFiles(repo)).toEqual(['README.md']);
  }, 120_000);

  it('R-56 attack 4f: control sequences an agent prints (an OSC title, a clear-screen, an OSC 8 javascript: link, a bidi override) reach no terminal: evidence, log and the error line show them escaped; evidence --raw gives the bytes', () => {
    const seq = "\\033]0;pwned\\007\\033[2J\\033]8;;javascript:alert(1)\\033\\\\click\\033]8;;\\033\\\\ \\342\\200\\256evil";
    const { repo } = attackBuild({ workerScript: `printf '${seq}\\n'; printf '${seq}\\n' >&2; exit 3` });
    const r = runCli(['run'], { cwd: repo, env: attackEnv(repo) });
    expect(r.code).toBe(1);
    const raw = /[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
    const shown = [r.stdout, r.stderr, runCli(['evidence', 'hello-module.1'], { cwd: repo }).stdout, runCli(['log'], { cwd: repo }).stdout, runCli(['status'], { cwd: repo }).stdout];
    for (const text of shown) expect(text).not.toMatch(raw);
    const evidence = shown[2]!;
    expect(evidence).toContain('\\x1b]0;pwned\\x07\\x1b[2J\\x1b]8;;javascript:alert(1)\\x1b\\click');
    expect(evidence).toContain('\\u202eevil');
    const bytes = runCli(['evidence', 'hello-module.1', '--raw'], { cwd: repo }).stdout;
    expect(bytes).toContain('\x1b]0;pwned\x07');
    expect(bytes).toContain('\u202eevil');
  }, 120_000);

  it('R-29 R-30 attack 4b: a planner cannot write into its read-only export, into the repository (even through /proc/$PPID/cwd) or create a ref', () => {
    const { repo } = attackBuild({
      plannerScript: `
echo pwned > ./pwned.txt 2>/dev/null; chmod -R u+w . 2>/dev/null; echo pwned > ./README.md 2>/dev/null
echo pwned > "$ATTACK_REPO/pwned.txt" 2>/dev/null
echo pwned > /proc/$PPID/cwd/pwned.txt 2>/dev/null
git -C "$ATTACK_REPO" update-ref refs/heads/evil HEAD 2>/dev/null
git -C "$ATTACK_BUILD/integrator.git" update-ref refs/heads/evil HEAD 2>/dev/null
`,
    });
    const skip = (rel: string) => rel.startsWith('.longbuild');
    const before = snapshot(repo, skip);
    expect(cliJson(['run'], { cwd: repo, env: attackEnv(repo) }).outcome).toBe('horizon_complete');
    const after = snapshot(repo, skip);
    // Only longbuild's own publication of the integration ref (and its provenance notes, R-62) may change in .git.
    const changed = Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
    const own = ['.git/refs/heads/longbuild/integration', '.git/logs/refs/heads/longbuild/integration', '.git/refs/notes/longbuild/provenance', '.git/logs/refs/notes/longbuild/provenance'];
    expect(changed.every((k) => own.includes(k) || k.startsWith('.git/objects/')), changed.join(', ')).toBe(true);
    expect(git(repo, 'for-each-ref', '--format=%(refname)', 'refs/heads/evil')).toBe('');
    expect(git(join(repo, '.longbuild', 'integrator.git'), 'for-each-ref', '--format=%(refname)', 'refs/heads/evil')).toBe('');
    expect(integrationFiles(repo)).not.toContain('pwned.txt');
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toBe('the user\'s project\n');
  }, 120_000);

  it('R-33 attack 5: an integration ref moved behind the integrator\'s back is reset to the logged head, recorded with the stray commit, and blames nobody', () => {
    const { repo } = attackBuild({ features: ['hello', 'goodbye'] });
    cliJson(['run', '--max-steps', '4'], { cwd: repo }); // seal, hello dispatched, integrated, checkpoint
    const logged = cliJson(['status'], { cwd: repo }).integrationHead as string;
    // A stray commit with failing code, put on the integration ref in both repositories.
    writeFileSync(join(repo, 'stray.test.js'), FAILING_TEST);
    git(repo, 'add', 'stray.test.js');
    git(repo, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-q', '-m', 'stray');
    const stray = git(repo, 'rev-parse', 'HEAD');
    git(repo, 'update-ref', 'refs/heads/longbuild/integration', stray);
    git(repo, 'push', '-q', join(repo, '.longbuild', 'integrator.git'), `${stray}:refs/heads/longbuild/integration`, '-f');
    // `verify` sees it before anything is repaired.
    const v = runCli(['verify'], { cwd: repo });
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`ref refs/heads/longbuild/integration is at ${stray} but the log says ${logged} \\(the next \`longbuild step\` or \`run\` resets it`));
    const done = cliJson(['run'], { cwd: repo });
    expect(done.outcome).toBe('horizon_complete');
    const evs = events(repo);
    const repairs = evs.filter((e) => e.type === 'RefRepaired').map((e) => e.data);
    expect(repairs).toEqual(expect.arrayContaining([
      expect.objectContaining({ where: 'integrator', found: stray, expected: logged }),
      expect.objectContaining({ where: 'published', found: stray, expected: logged }),
    ]));
    expect(evs.some((e) => e.type === 'IntegrationFailed')).toBe(false);
    expect(integrationFiles(repo)).not.toContain('stray.test.js');
    expect(cliJson(['status'], { cwd: repo }).integrationHead).toBe(git(repo, 'rev-parse', 'refs/heads/longbuild/integration'));
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  }, 120_000);

  it('R-30 the network: verification has none by default; a worker reaches 127.0.0.1 when allowed and not when denied', async () => {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const fetchScript = (tag: string) => `node -e "fetch('http://127.0.0.1:${port}/${tag}').then(()=>process.exit(0),()=>process.exit(0))"`;
      const allowed = attackBuild({ workerScript: fetchScript('worker-allowed'), verify: [['node', '-e', `fetch('http://127.0.0.1:${port}/verify').then(()=>process.exit(0),()=>process.exit(0))`], ['node', '--test']] });
      expect((await runAsync(allowed.repo)).code).toBe(0);
      const denied = attackBuild({ workerScript: fetchScript('worker-denied'), config: { sandbox: { mode: 'bwrap', network: { worker: false } } } });
      expect((await runAsync(denied.repo)).code).toBe(0);
      expect(hits).toEqual(['/worker-allowed']); // the verification and the denied worker reached nothing
    } finally {
      server.close();
    }
  }, 120_000);

  it('R-30 "sandbox": "off" runs without bubblewrap, is recorded in the first event and shown by status; without it a command build refuses to start', () => {
    const { repo } = attackBuild({ config: { sandbox: 'off' } });
    const first = events(repo)[0]!;
    expect(first.data.sandbox).toMatchObject({ mode: 'off', bwrapVersion: null });
    expect(cliJson(['run'], { cwd: repo, env: { LONGBUILD_BWRAP: '/nonexistent/bwrap' } }).outcome).toBe('horizon_complete');
    expect(cliJson(['status'], { cwd: repo }).sandbox).toMatch(/^off/);
    expect(runCli(['status'], { cwd: repo }).stdout).toMatch(/sandbox: off/);
    // A command-driven build that wants the sandbox on a machine without bubblewrap: one line, no build.
    const repo2 = tempDir();
    const r = runCli(['init', '--request', join(ROOT, 'examples', 'scripts', 'request.json'), '--config', join(ROOT, 'examples', 'scripts', 'longbuild.config.json')], { cwd: repo2, env: { LONGBUILD_BWRAP: '/nonexistent/bwrap' } });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/bubblewrap \(bwrap\) is not installed: install it .*apt-get install bubblewrap.* or set "sandbox": "off"/);
    expect(existsSync(join(repo2, '.longbuild', 'events.db'))).toBe(false);
    // A sandboxed build records bubblewrap's version.
    const sandboxed = attackBuild({});
    expect(events(sandboxed.repo)[0]!.data.sandbox).toMatchObject({ mode: 'bwrap', bwrapVersion: expect.stringMatching(/^bubblewrap \d/) });
    // Where bubblewrap has gone since, reading commands still work; a sandboxed call is refused in one line.
    const noBwrap = { LONGBUILD_BWRAP: '/nonexistent/bwrap' };
    expect(runCli(['status'], { cwd: sandboxed.repo, env: noBwrap }).code).toBe(0);
    const refused = runCli(['run'], { cwd: sandboxed.repo, env: noBwrap });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^longbuild: this build was initialised with the bubblewrap sandbox, but bubblewrap \(bwrap\) is not installed/);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  }, 120_000);

  it('R-30 the build directory is private: 0700, driver.json and evidence 0600; secrets reach verification only (the worker when secretTo says so), and no form of them (as written, base64 at any alignment, URL-safe base64, hex, percent-encoded) is kept in evidence', () => {
    const SECRET = 's3cr3t/value+42 ok?';
    const printForms = [
      'echo "plain $ATTACK_SECRET"',
      'printf "%s" "x$ATTACK_SECRET" | base64 -w0; echo',
      'printf "%s" "xy$ATTACK_SECRET" | base64 -w0; echo',
      'printf "%s" "$ATTACK_SECRET" | base64 -w0 | tr "+/" "-_"; echo',
      'printf "%s" "$ATTACK_SECRET" | od -An -tx1 | tr -d " \\n"; echo',
      'node -e "console.log(encodeURIComponent(process.env.ATTACK_SECRET))"',
    ].join('; ');
    const build = (secretTo?: Record<string, boolean>) => attackBuild({
      workerScript: 'echo "worker sees [${ATTACK_SECRET:-}]"',
      verify: [['sh', '-c', printForms], ['node', '--test']],
      config: { env: { allow: ['ATTACK_REPO', 'ATTACK_BUILD'], secret: ['ATTACK_SECRET'], ...(secretTo ? { secretTo } : {}) } },
    }).repo;
    const texts = (repo: string) => readdirSync(join(repo, '.longbuild', 'evidence')).map((f) => readFileSync(join(repo, '.longbuild', 'evidence', f), 'utf8'));
    const repo = build();
    expect(cliJson(['run'], { cwd: repo, env: { ...attackEnv(repo), ATTACK_SECRET: SECRET } }).outcome).toBe('horizon_complete');
    const dir = join(repo, '.longbuild');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'driver.json')).mode & 0o777).toBe(0o600);
    const evidence = readdirSync(join(dir, 'evidence'));
    for (const f of evidence) expect(statSync(join(dir, 'evidence', f)).mode & 0o777).toBe(0o600);
    const kept = texts(repo);
    expect(kept.some((t) => t.includes('worker sees []'))).toBe(true); // the worker never had it
    const verifyOut = kept.find((t) => t.startsWith('plain '))!;
    expect(verifyOut.match(/\*\*\*/g)!.length).toBeGreaterThanOrEqual(6); // verification had it, in every form, and it was masked
    for (const t of kept) expect(revealed(t, SECRET), t).toEqual([]);
    // Given to the worker on purpose: it sees it, and its evidence keeps only ***.
    const trusted = build({ worker: true });
    expect(cliJson(['run'], { cwd: trusted, env: { ...attackEnv(trusted), ATTACK_SECRET: SECRET } }).outcome).toBe('horizon_complete');
    expect(texts(trusted).some((t) => t.includes('worker sees [***]'))).toBe(true);
  }, 120_000);
});

/** `longbuild run` as an async child (the test's own HTTP server must keep answering meanwhile). */
async function runAsync(repo: string): Promise<{ code: number | null; stderr: string }> {
  const { execFile } = await import('node:child_process');
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'longbuild.js'), 'run'], { cwd: repo, env: { ...process.env, NO_COLOR: '1' } }, (err, _out, stderr) => {
      resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, stderr });
    });
  });
}
