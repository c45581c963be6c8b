/**
 * Issue 17, faults 2 and 5: a full disk and files made unwritable while a build runs. The build
 * directory lives on a real tmpfs of a few MB (mounted by the test, as root), filled with a real
 * file; `chattr +i` makes the log's shared-memory index immutable mid-run. Each failure must end
 * in one line naming the file (exit 1), append nothing for an effect that did not start, and the
 * build must resume exactly once the disk is writable again.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { StorageError } from '../src/events/errors.js';
import { guardDatabase, storageErrorOf } from '../src/projections/storage-guard.js';
import { writeAtomically } from '../src/adapters/atomic-write.js';
import { gitStorageFailure } from '../src/adapters/git/exec.js';
import { BIN, cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const mounts: string[] = [];
afterAll(() => {
  for (const m of mounts) spawnSync('umount', ['-l', m]);
});

/** A private tmpfs of `mb` MB (the real thing: a filesystem that runs out of space). */
function tmpfs(mb: number): string | null {
  const dir = tempDir('longbuild-tmpfs-');
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m`, 'tmpfs', dir]);
  if (r.status !== 0) return null;
  mounts.push(dir);
  return dir;
}
const canMount = (() => {
  const probe = tmpfs(1);
  return probe !== null;
})();
if (!canMount && process.env.CI) throw new Error('storage-faults.test.ts needs to mount a tmpfs (run as root, as CI does)');

function events(repo: string, dir: string): { type: string }[] {
  return runCli(['log', '--json', '--dir', dir], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
}

/** Fill the filesystem holding `dir` until `leaveKiB` are left. */
function fill(dir: string, leaveKiB: number): string {
  const s = statfsSync(dir);
  const free = Number(s.bavail) * Number(s.bsize);
  const filler = join(dir, 'filler');
  writeFileSync(filler, Buffer.alloc(Math.max(0, free - leaveKiB * 1024)));
  return filler;
}

let clean: { types: string[]; tree: string; calls: unknown } | undefined;
function cleanRun(): { types: string[]; tree: string; calls: Record<string, number> } {
  if (clean === undefined) {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    clean = {
      types: runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).type),
      tree: git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'),
      calls: cliJson(['status'], { cwd: repo }).calls,
    };
  }
  return clean as { types: string[]; tree: string; calls: Record<string, number> };
}

describe('a full disk (issue 17, fault 2)', () => {
  // Where the wall is hit differs with how much is left and how far the build got: the log's
  // append, the projections, the WAL index, git objects of an attempt's clone, the evidence, the
  // kept worker outcome, the signed checkpoints. Each case below hit a different one when written.
  it.skipIf(!canMount).each([
    { steps: 3, leaveKiB: 60 },
    { steps: 12, leaveKiB: 120 },
  ])('R-18 $steps steps, then $leaveKiB KiB left: every run fails in one line naming a file of the build (exit 1), no phantom event is recorded, and with space back the build resumes to the uninterrupted result', ({ steps, leaveKiB }) => {
    const fs = tmpfs(4)!;
    const repo = tempDir();
    const dir = join(fs, 'build');
    cliJson(['init', '--blueprint', HELIOS, '--dir', dir], { cwd: repo });
    for (let i = 0; i < steps; i++) cliJson(['step', '--dir', dir], { cwd: repo });
    const filler = fill(fs, leaveKiB);

    const positions: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = runCli(['run', '--dir', dir, '--progress', 'off'], { cwd: repo });
      expect(r.code, r.stderr).toBe(1);
      const lines = r.stderr.trim().split('\n');
      const failure = lines[lines.length - 1]!;
      expect(failure).not.toMatch(/internal error|    at /);
      expect(failure).toMatch(new RegExp(`^longbuild: (no space left for|I/O error on) ${fs}/`));
      expect(failure).toMatch(/free on its filesystem|disk I\/O error/);
      expect(failure).toMatch(/`longbuild run` resumes/);
      // Anything else said is the projections warning, also one line naming its file.
      for (const l of lines.slice(0, -1)) expect(l).toMatch(/^longbuild: \S+projections\.db could not be updated/);
      positions.push(events(repo, dir).length);
    }
    // A retry may get a step further (SQLite gives space back when it checkpoints its WAL), never
    // by a phantom: everything recorded is compared with the uninterrupted run below.
    expect(positions[2]).toBeGreaterThanOrEqual(positions[0]!);

    rmSync(filler);
    const resumed = runCli(['run', '--dir', dir, '--progress', 'off'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(cliJson(['verify', '--dir', dir], { cwd: repo }).ok).toBe(true);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(cleanRun().tree);
    // At most one real re-invocation (a call that ran and whose answer could not be kept), counted as such.
    const types = events(repo, dir).map((e) => e.type);
    const reinvoked = types.filter((t) => t === 'EffectReinvoked').length;
    expect(reinvoked).toBeLessThanOrEqual(1);
    expect(types.filter((t) => t !== 'EffectReinvoked')).toEqual(cleanRun().types);
    const calls = cliJson(['status', '--dir', dir], { cwd: repo }).calls as { planner: number; worker: number };
    const cleanCalls = cleanRun().calls as { planner: number; worker: number };
    expect(calls.planner + calls.worker).toBe(cleanCalls.planner + cleanCalls.worker + reinvoked);
  }, 120_000);
});

describe('reading a build on a full disk (issue 45)', () => {
  it.skipIf(!canMount)('status, show, log, evidence and diff answer as before the disk filled (no byte left); run says which file, in one line', () => {
    const fs = tmpfs(4)!;
    const repo = tempDir();
    const dir = join(fs, 'build');
    cliJson(['init', '--blueprint', HELIOS, '--dir', dir], { cwd: repo });
    for (let i = 0; i < 8; i++) cliJson(['step', '--dir', dir], { cwd: repo });
    const reads = [['status'], ['status', '--json'], ['show'], ['log'], ['log', '--json'], ['evidence', 'job-1'], ['diff', '3', '9']];
    const before = reads.map((args) => runCli([...args, '--dir', dir], { cwd: repo }));
    for (const [i, r] of before.entries()) expect(r.code, `${reads[i]!.join(' ')}: ${r.stderr}`).toBe(0);
    const filler = fill(fs, 0);
    for (const [i, args] of reads.entries()) {
      const r = runCli([...args, '--dir', dir], { cwd: repo });
      expect(r.code, `${args.join(' ')} on a full disk: ${r.stderr}`).toBe(0);
      expect(r.stdout, args.join(' ')).toBe(before[i]!.stdout);
    }
    const run = runCli(['run', '--dir', dir, '--progress', 'off'], { cwd: repo });
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(new RegExp(`^longbuild: no space left for ${fs}/`));
    rmSync(filler);
    expect(runCli(['run', '--dir', dir, '--progress', 'off'], { cwd: repo }).code).toBe(0);
  }, 120_000);
});

describe('files made unwritable mid-run (issue 17, fault 5)', () => {
  const chattrWorks = (() => {
    const f = join(tempDir(), 'probe');
    writeFileSync(f, '');
    const ok = spawnSync('chattr', ['+i', f]).status === 0;
    spawnSync('chattr', ['-i', f]);
    return ok;
  })();

  it.skipIf(!chattrWorks).each([
    { file: 'events.db-shm', code: 1, says: /^longbuild: \S+events\.db-shm cannot be written \(EPERM: the file is read-only or immutable.*the log is intact up to position \d+; make it writable, then `longbuild run` resumes$/m },
    { file: 'projections.db-shm', code: 0, says: /^longbuild: \S+projections\.db could not be updated \(EPERM.*the log is intact and the projections catch up on the next run$/m },
  ])('R-4 $file made immutable while the controller is inside a worker call: no SIGBUS, exit $code with one line naming it; writable again, the build resumes exactly', async ({ file, code, says }) => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['step'], { cwd: repo });
    const child = spawn(process.execPath, [BIN, 'run', '--progress', 'off'], { cwd: repo, env: { ...process.env, LONGBUILD_PAUSE_AT: 'before-effect:worker:1:2500' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const paused = new Promise<void>((resolve) => child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes('paused at')) resolve();
    }));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s })));
    await paused;
    const target = join(repo, '.longbuild', file);
    expect(spawnSync('chattr', ['+i', target]).status).toBe(0);
    let end;
    try {
      end = await exited;
    } finally {
      spawnSync('chattr', ['-i', target]);
    }
    expect(end.signal, stderr).toBeNull();
    expect(end.code, stderr).toBe(code);
    expect(stderr).toMatch(says);
    expect(stderr).not.toMatch(/internal error|    at /);
    cliJson(['run'], { cwd: repo });
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    const types = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).type);
    expect(types).toEqual(cleanRun().types);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(cleanRun().tree);
  }, 60_000);
});

describe('storage errors name their file', () => {
  it('SQLite and errno failures map to a named StorageError; anything else is left alone', () => {
    const full = storageErrorOf(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }), '/b/events.db');
    expect(full).toBeInstanceOf(StorageError);
    expect(full!.problem).toBe('full');
    expect(full!.message).toMatch(/^no space left for \/b\/events\.db \(database or disk is full; .* free on its filesystem\); nothing more was recorded; free some space/);
    expect(storageErrorOf(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), '/b/x')!.problem).toBe('io');
    expect(storageErrorOf(Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY_DBMOVED' }), '/b/x')!.problem).toBe('read-only');
    expect(storageErrorOf(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }), '/b/x')).toBeNull();
    expect(storageErrorOf(new Error('plain'), '/b/x')).toBeNull();
    expect(full!.at(41).message).toMatch(/the log is intact up to position 41/);
  });

  it('a guarded database names its file on every failure path (statement, exec, transaction)', () => {
    const path = join(tempDir(), 'ro.db');
    const setup = new Database(path);
    setup.exec('CREATE TABLE t (x)');
    setup.close();
    const db = guardDatabase(new Database(path, { readonly: true }), path);
    try {
      for (const write of [() => db.prepare('INSERT INTO t VALUES (1)').run(), () => db.exec('INSERT INTO t VALUES (2)'), () => db.transaction(() => db.prepare('INSERT INTO t VALUES (3)').run())()]) {
        expect(write).toThrow(StorageError);
        expect(write).toThrow(`${path} cannot be written`);
      }
      expect([...db.prepare('SELECT x FROM t').iterate()]).toEqual([]); // reads still work
    } finally {
      db.close();
    }
  });

  it('git reporting a full disk or an I/O error is a StorageError naming the file it quotes, never a verdict', () => {
    const e = gitStorageFailure("fatal: could not write to 'worktrees/job-2/locked': No space left on device\n", '/b/integrator.git');
    expect(e?.path).toBe('/b/integrator.git/worktrees/job-2/locked');
    expect(e?.problem).toBe('full');
    expect(gitStorageFailure("fatal: sha1 file '/b/index/x.lock' write error. Out of diskspace", '/b')?.path).toBe('/b/index/x.lock');
    expect(gitStorageFailure('error: unable to read: Input/output error', '/b/wt')?.problem).toBe('io');
    expect(gitStorageFailure('CONFLICT (content): Merge conflict in a.txt', '/b')).toBeNull();
  });

  it.skipIf(!canMount)('an atomic write that runs out of space leaves no partial file, and names the file', () => {
    const fs = tmpfs(1)!;
    const target = join(fs, 'evidence', 'big');
    mkdirSync(join(fs, 'evidence'));
    expect(() => writeAtomically(target, Buffer.alloc(2 * 1024 * 1024))).toThrow(`no space left for ${target}`);
    expect(spawnSync('ls', ['-A', join(fs, 'evidence')], { encoding: 'utf8' }).stdout).toBe('');
  });
});
