/**
 * Issue 7, harder faults: SIGKILL inside git operations, inside a multi-event append, two
 * controllers at once, and an orphan worker still running after its controller was killed.
 * Real git repositories, real child processes, real SIGKILL.
 */
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { takeControllerLease } from '../src/adapters/controller/lease.js';
import { BIN, cliJson, HELIOS, ROOT, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const types = (repo: string): string[] => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).type);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cmdlineOf = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
  } catch {
    return ''; // gone meanwhile
  }
};
/** Live processes whose command line contains `marker`. */
const withMarker = (marker: string): number[] => readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
  try {
    return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(marker) && !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
}).map(Number);

/** The tree and checkpoints of an uninterrupted helios run, for comparison. */
function cleanHelios(): { tree: string; checkpoints: string[] } {
  const repo = tempDir();
  cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
  cliJson(['run'], { cwd: repo });
  return { tree: git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'), checkpoints: cliJson(['status'], { cwd: repo }).checkpoints };
}

describe('harder faults (issue 7)', () => {
  it('R-3 a second controller on a build whose lease is held exits 3 and changes nothing', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    const before = readFileSync(join(repo, '.longbuild', 'events.db'));
    const lease = await takeControllerLease(join(repo, '.longbuild'), []);
    try {
      for (const cmd of [['step'], ['run']]) {
        const r = runCli(cmd, { cwd: repo });
        expect(r.code).toBe(3);
        expect(r.stderr).toMatch(/another controller is running.*nothing was changed/);
        expect(r.stderr).not.toMatch(/\(R-3\)/); // rule ids with --verbose only
      }
      expect(readFileSync(join(repo, '.longbuild', 'events.db')).equals(before)).toBe(true);
      expect(existsSync(join(repo, '.longbuild', 'worktrees'))).toBe(false);
    } finally {
      lease.release();
    }
    // The lease is a kernel lock: released, the next controller proceeds.
    expect(cliJson(['step'], { cwd: repo }).outcome).toBe('planned');
  });

  it('R-3 a lease whose lock file was deleted stops its holder before the next append (exit 3), even though a second controller could lock a new file', async () => {
    const dir = join(tempDir(), '.longbuild');
    const first = await takeControllerLease(dir, []);
    expect(() => first.assertHeld?.()).not.toThrow();
    rmSync(join(dir, 'controller.lock'));
    const second = await takeControllerLease(dir, []); // the hazard: a new file, a new lock
    try {
      expect(() => first.assertHeld?.()).toThrow(/controller lease .*controller\.lock was removed or replaced.*nothing more was changed/);
      expect(() => second.assertHeld?.()).not.toThrow();
    } finally {
      first.release();
      second.release();
    }
  });

  it('R-3 two controller processes started on one build: one proceeds to the end, the other exits 3', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', join(ROOT, 'test', 'fixtures', 'orbit.json')], { cwd: repo });
    const points = join(tempDir(), 'points');
    const first = spawn(process.execPath, [BIN, 'run', '--json'], { cwd: repo, env: { ...process.env, LONGBUILD_POINTS_FILE: points }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => first.on('close', (code) => r(code)));
    // The first controller holds the lease before it reaches its first point.
    while (!existsSync(points)) await sleep(10);
    const second = runCli(['run'], { cwd: repo });
    expect(second.code).toBe(3);
    expect(await exited).toBe(0);
    const status = cliJson(['status'], { cwd: repo });
    expect(status.completed).toBe(true);
    expect(status.checkpoints).toEqual(['foundations', 'service', 'client', 'release']);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  }, 60_000);

  it('R-1 a SIGKILL between the parts of a multi-event append (PlannerReturned + HorizonSealed) leaves nothing partial', () => {
    const inside = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: inside });
    // Both before-append points are reached before the one transaction: killed at the second, nothing of it is there.
    expect(runCli(['run'], { cwd: inside, env: { LONGBUILD_CRASH_AT: 'before-append:HorizonSealed:1' } }).signal).toBe('SIGKILL');
    expect(types(inside)).toEqual(['BuildInitialized', 'PlannerInvoked']);
    const after = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: after });
    // after-append:X is reached once X is durable, in the commit it shares with the decisions up to
    // the next effect (group commit, decision 0017): here the first dispatch's intent.
    expect(runCli(['run'], { cwd: after, env: { LONGBUILD_CRASH_AT: 'after-append:PlannerReturned:1' } }).signal).toBe('SIGKILL');
    expect(types(after)).toEqual(['BuildInitialized', 'PlannerInvoked', 'PlannerReturned', 'HorizonSealed', 'AttemptStarted']);
    expect(cliJson(['verify'], { cwd: after }).ok).toBe(true);
  });

  it.each(['in-thread', 'thread'])('R-1 a process SIGKILLed in the middle of large appends leaves only whole batches and a valid chain (rows stored %s)', async (writer) => {
    const dir = tempDir();
    const db = join(dir, 'events.db');
    const child = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'append-batches.mjs'), join(ROOT, 'dist'), db, '2000', writer], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    while (!out.includes('committed')) await sleep(5);
    await sleep(37); // somewhere inside a later batch's transaction
    child.kill('SIGKILL');
    await new Promise((r) => child.on('close', r));
    const { SqliteEventLog } = await import('../src/adapters/log/sqlite-log.js');
    const log = new SqliteEventLog({ path: db, catalogue: { validate() {}, currentVersion: () => 1 } as never });
    try {
      const head = log.headSync()!.position;
      expect(head % 2000).toBe(0);
      expect(log.verifyChainSync().ok).toBe(true);
    } finally {
      await log.close();
    }
  }, 60_000);

  it('SIGKILL inside git operations: a damaged attempt clone and stale ref locks (integrator and published) are cleaned; only longbuild\'s own things are touched', () => {
    const clean = cleanHelios();
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    git(repo, 'branch', 'user-feature'); // the user's: must survive
    writeFileSync(join(repo, '.git', 'refs', 'heads', 'user-feature.lock'), ''); // the user's lock: not ours to remove
    // Killed right before the worker: the attempt's clone exists and AttemptStarted is recorded.
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'before-effect:worker:1' } }).signal).toBe('SIGKILL');
    const wt = join(repo, '.longbuild', 'worktrees', 'catalog-api.1');
    expect(existsSync(join(wt, '.git'))).toBe(true);
    // What a `git add` killed half-way leaves in the clone, and missing files.
    writeFileSync(join(wt, '.git', 'index.lock'), '');
    rmSync(join(wt, '.git', 'HEAD'), { force: true });
    // What a `git update-ref` killed between lock and rename leaves on refs longbuild owns: the
    // integrator's ref, and the one published in the user's repository.
    writeFileSync(join(repo, '.longbuild', 'integrator.git', 'refs', 'heads', 'longbuild', 'integration.lock'), '');
    writeFileSync(join(repo, '.git', 'refs', 'heads', 'longbuild', 'integration.lock'), '');
    const resumed = runCli(['run', '--verbose'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('removed stale git locks');
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(clean.tree);
    expect(cliJson(['status'], { cwd: repo }).checkpoints).toEqual(clean.checkpoints);
    expect(git(repo, 'branch', '--list', 'user-feature')).toContain('user-feature');
    expect(existsSync(join(repo, '.git', 'refs', 'heads', 'user-feature.lock'))).toBe(true);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  }, 60_000);

  /**
   * A command-driven build whose worker, under LONGBUILD_TEST_SLOW=1, keeps working for 3 s before
   * it writes into its clone; its argv carries `marker`, so the test finds it in /proc from outside
   * any sandbox.
   */
  function slowWorkerBuild(sandbox: 'bwrap' | 'off', marker: string): string {
    const repo = tempDir();
    const cfg = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
    const worker = readFileSync(join(cfg, 'worker.mjs'), 'utf8');
    writeFileSync(join(cfg, 'worker.mjs'), worker.replace(
      "const packet = JSON.parse(readFileSync(0, 'utf8'));",
      `const packet = JSON.parse(readFileSync(0, 'utf8'));
import { writeFileSync as __w } from 'node:fs';
if (process.env.LONGBUILD_TEST_SLOW === '1') {
  await new Promise((r) => setTimeout(r, 3000));
  __w('orphan-wrote-this.txt', 'late\\n');
}`,
    ));
    const config = JSON.parse(readFileSync(join(cfg, 'longbuild.config.json'), 'utf8'));
    config.worker.command = [...config.worker.command, marker];
    config.sandbox = sandbox;
    config.env = { allow: ['LONGBUILD_TEST_SLOW'] };
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
    mkdirSync(join(repo), { recursive: true });
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
    return repo;
  }

  for (const sandbox of ['off', 'bwrap'] as const) {
    it(`R-30 a worker still running when its controller is SIGKILLed ${sandbox === 'bwrap' ? 'dies with it (the sandbox ends with its parent)' : 'is fenced (killed with its group) before the resumed controller settles'} (sandbox ${sandbox})`, async () => {
      const marker = `longbuild-orphan-marker-${process.pid}-${sandbox}-${Date.now()}`;
      const repo = slowWorkerBuild(sandbox, marker);
      // Only the first controller's worker is slow: the resumed one's re-invocation is the plain worker.
      const controller = spawn(process.execPath, [BIN, 'run', '--json'], { cwd: repo, stdio: 'ignore', env: { ...process.env, LONGBUILD_TEST_SLOW: '1' } });
      const gone = new Promise((r) => controller.on('close', r));
      while (withMarker(marker).length === 0) await sleep(10);
      const workerStarted = Date.now();
      await sleep(200);
      controller.kill('SIGKILL');
      await gone;
      if (sandbox === 'off') {
        expect(withMarker(marker).length).toBeGreaterThan(0); // its own process group: the SIGKILL did not reach it
      } else {
        for (let i = 0; i < 100 && withMarker(marker).length > 0; i++) await sleep(20);
        expect(withMarker(marker)).toEqual([]); // no process of the call outlives the controller
      }
      const resumed = runCli(['run', '--verbose'], { cwd: repo });
      expect(resumed.code, resumed.stderr).toBe(0);
      if (sandbox === 'off') expect(resumed.stderr).toMatch(/fenced \d+ orphan process/);
      expect(withMarker(marker)).toEqual([]);
      // Outlive the worker's schedule (3 s from its start): nothing it would have written was committed.
      await sleep(Math.max(0, workerStarted + 3300 - Date.now()));
      expect(git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration')).not.toContain('orphan-wrote-this.txt');
      const status = cliJson(['status'], { cwd: repo });
      expect(status.completed).toBe(true);
      expect(status.calls.worker).toBe(4); // three nodes, plus the one in-doubt re-invocation
    }, 60_000);
  }
});

describe('a crash between an intent and its call (issue 17, fault 8)', () => {
  const types = (r: string) => runCli(['log', '--json'], { cwd: r }).stdout.trim().split('\n').map((l) => JSON.parse(l).type);
  let clean: string | undefined;
  const cleanRun = (): string => {
    if (clean === undefined) {
      clean = tempDir();
      cliJson(['init', '--blueprint', HELIOS], { cwd: clean });
      cliJson(['run'], { cwd: clean });
    }
    return clean;
  };

  it.each(['AttemptStarted', 'PlannerInvoked'])('R-18 killed right after %s, before the call started: the resumed run starts it once and records no re-invocation; the log has the event types of an uninterrupted run', (type) => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: `after-append:${type}:1` } }).signal).toBe('SIGKILL');
    cliJson(['run'], { cwd: repo });
    expect(types(repo)).not.toContain('EffectReinvoked');
    expect(types(repo)).toEqual(types(cleanRun()));
    expect(cliJson(['status'], { cwd: repo }).calls).toEqual(cliJson(['status'], { cwd: cleanRun() }).calls);
  });

  it.each(['planner', 'worker'])('R-18 a crash after the re-invocation of a %s call is recorded but before it starts: resumed again, it records no second EffectReinvoked', (effect) => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: `after-effect:${effect}:1` } }).signal).toBe('SIGKILL');
    // The resume records the re-invocation, then dies before the call starts...
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-append:EffectReinvoked:1' } }).signal).toBe('SIGKILL');
    // ...and the next one makes that recorded invocation without recording another: the same crash point is never reached.
    const finished = runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-append:EffectReinvoked:1' } });
    expect(finished.code, finished.stderr).toBe(0);
    expect(types(repo).filter((t) => t === 'EffectReinvoked')).toHaveLength(1);
    const calls = cliJson(['status'], { cwd: repo }).calls;
    const cleanCalls = cliJson(['status'], { cwd: cleanRun() }).calls;
    expect(calls).toEqual({ ...cleanCalls, [effect]: cleanCalls[effect] + 1 });
  });

  it.each(['planner', 'worker'])('R-18 a crash after a %s call returned and its outcome was kept: the resumed run records that outcome, calls nothing again, and the log is an uninterrupted run\'s', (effect) => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: `after-keep:${effect}:1` } }).signal).toBe('SIGKILL');
    const resumed = cliJson(['run'], { cwd: repo });
    expect(resumed.outcome).toBe('horizon_complete');
    expect(types(repo)).toEqual(types(cleanRun()));
    expect(cliJson(['status'], { cwd: repo }).calls).toEqual(cliJson(['status'], { cwd: cleanRun() }).calls);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(git(cleanRun(), 'rev-parse', 'refs/heads/longbuild/integration^{tree}'));
  });

  it('R-18 a worker call that did start before the kill is still re-invoked, and recorded as such', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-effect:worker:1' } }).signal).toBe('SIGKILL');
    cliJson(['run'], { cwd: repo });
    expect(types(repo).filter((t) => t === 'EffectReinvoked')).toHaveLength(1);
  });
});

describe('verification processes of a killed controller (issue 17, fault 6)', () => {
  for (const sandbox of ['off', 'bwrap'] as const) {
    it(`R-30 kill -9 of the controller's whole process group during verification: the verification ${sandbox === 'bwrap' ? 'dies with it (its sandbox ends with its parent)' : 'is fenced by the next controller before anything else, which says so'}; no workspace stays registered (sandbox ${sandbox})`, async () => {
      const marker = `longbuild-verify-orphan-${process.pid}-${sandbox}-${Date.now()}`;
      const repo = tempDir();
      const cfg = tempDir('longbuild-cfg-');
      cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
      const config = JSON.parse(readFileSync(join(cfg, 'longbuild.config.json'), 'utf8'));
      // A verification that hangs (two minutes) when it starts before the test writes its release
      // file, and passes at once when it starts after: the first controller's hangs until the kill,
      // the resumed controller's passes — whatever the machine's load, no deadline to miss. The
      // release file's directory is on the controllers' PATH, which the sandbox keeps visible
      // (read-only) under its private /tmp; unsandboxed, a hanging verification says so there
      // (`.hanging`), and the release waits for that.
      const release = join(tempDir('longbuild-release-'), 'release');
      const env = { ...process.env, PATH: `${dirname(release)}${delimiter}${process.env.PATH ?? ''}` };
      config.verify = [['node', '-e', "const fs = require('fs'); if (!fs.existsSync(process.argv[1])) { try { fs.writeFileSync(`${process.argv[1]}.hanging`, ''); } catch {} setTimeout(() => {}, 120000); }", release, marker]];
      config.sandbox = sandbox;
      writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
      cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
      const controller = spawn(process.execPath, [BIN, 'run', '--json'], { cwd: repo, stdio: 'ignore', detached: true, env });
      const gone = new Promise((r) => controller.on('close', r));
      // Killed once the verification command itself runs (not while bwrap, whose argv also holds
      // the marker, is still starting: before its die-with-parent is set a kill leaves it behind).
      while (!withMarker(marker).some((p) => cmdlineOf(p).startsWith('node\0-e\0'))) await sleep(20);
      process.kill(-controller.pid!, 'SIGKILL'); // the controller's group, as a terminal's kill would
      await gone;
      if (sandbox === 'off') {
        expect(withMarker(marker).length).toBeGreaterThan(0); // its own process group: the SIGKILL did not reach it
        // Released only once it hangs: a release it saw at its start would let it pass and exit before the next controller fences it.
        while (!existsSync(`${release}.hanging`) && withMarker(marker).length > 0) await sleep(20);
      } else {
        for (let i = 0; i < 100 && withMarker(marker).length > 0; i++) await sleep(20);
        expect(withMarker(marker)).toEqual([]);
      }
      writeFileSync(release, '');
      const resumed = runCli(['run'], { cwd: repo, env: { PATH: env.PATH } });
      expect(resumed.code, resumed.stderr).toBe(0);
      if (sandbox === 'off') expect(resumed.stderr).toMatch(/^longbuild: fenced \d+ orphan process\(es\) of a dead controller: \d+ in \S+workspaces\/job-1/m);
      expect(withMarker(marker)).toEqual([]);
      expect(git(join(repo, '.longbuild', 'integrator.git'), 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ') && l.includes('workspaces'))).toEqual([]);
      expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    }, 90_000);
  }
});
