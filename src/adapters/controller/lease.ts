/**
 * One controller per build, and no orphan from a dead one.
 *
 * The lease is an exclusive SQLite lock on `<build dir>/controller.lock`, held by `step`/`run` for
 * as long as they run. It is a kernel file lock, so the kernel drops it the instant its holder dies
 * — a SIGKILLed controller never leaves a stale lease behind, and there is no expiry to tune. A
 * second controller fails at once with a ConcurrencyError (exit 3) before it reads or writes
 * anything; the log's expected-revision check remains the last line of defence.
 *
 * Fencing: whoever takes the lease knows every earlier controller is dead, so any process still
 * working inside this build's attempt worktrees or integration workspaces is an orphan of a dead
 * controller (a worker or a verification command in its own process group). It is killed, with
 * its whole group, before the new controller settles anything, so it cannot write into a worktree
 * the new controller re-creates, commit to an attempt branch, or be adopted half-done.
 */
import type Database from 'better-sqlite3';
import { openGuarded } from '../../projections/storage-guard.js';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { LongbuildError } from '../../events/errors.js';
import type { AppendFence } from '../log/postgres-log.js';

/** The lock file this controller locked was removed or replaced: another controller may hold a new one. */
export class LeaseLostError extends LongbuildError {
  constructor(path: string) {
    super('CONCURRENCY', `the controller lease ${path} was removed or replaced while this controller held it; stopping before the next append (another controller may be running); nothing more was changed`, 'R-3');
  }
}

export class ControllerBusyError extends LongbuildError {
  constructor(dir: string) {
    super('CONCURRENCY', `another controller is running on the build in ${dir} (its lease ${join(dir, 'controller.lock')} is held); nothing was changed`, 'R-3');
  }
}

/**
 * The controller lease port: one holder per build. Implementations: this file's kernel file lock
 * (SQLite builds, one host) and a lease row with expiry and fencing token (PostgreSQL builds,
 * many hosts: controller/pg-lease.ts).
 */
export interface ControllerLease {
  /** Process groups of a dead controller that were killed when the lease was taken. */
  readonly fenced: readonly { pid: number; pgid: number; cwd: string }[];
  /** A remote log's check of the fencing token, run inside every append transaction. */
  readonly appendFence?: AppendFence;
  /** Throws (ConcurrencyError, exit 3) when the lease is no longer this controller's; run before every append. */
  readonly assertHeld?: () => void;
  /**
   * Rejects (ConcurrencyError) when the lease was lost, checked now (for PostgreSQL, against the
   * lease row). Asked after a command failed: a controller that was frozen and fenced meets a
   * world its successor changed (a worktree removed under it), and must say it lost the lease
   * (exit 3), not report what it tripped over.
   */
  readonly confirm?: () => Promise<void>;
  release(): void | Promise<void>;
}

/** Take the build's controller lease (or throw ControllerBusyError), then fence orphans. */
export async function takeControllerLease(dir: string, fencedDirs: readonly string[]): Promise<ControllerLease> {
  mkdirSync(dir, { recursive: true });
  const lockPath = join(dir, 'controller.lock');
  const db = await lockExclusively(lockPath, dir);
  let fenced: { pid: number; pgid: number; cwd: string }[] = [];
  try {
    fenced = await fenceOrphans(fencedDirs);
  } catch (err) {
    db.close();
    throw err;
  }
  // The lock lives on the file's inode: a `rm` of the path would let a second controller lock a
  // new file. Every append first checks that the path still names the inode we locked.
  const held = inodeOf(lockPath);
  const assertHeld = (): void => {
    const now = inodeOf(lockPath);
    if (now === null || held === null || now.ino !== held.ino || now.dev !== held.dev) throw new LeaseLostError(lockPath);
  };
  return {
    fenced,
    assertHeld,
    async confirm() {
      assertHeld();
    },
    release() {
      if (db.open) db.close();
    },
  };
}

/** How long a controller keeps trying for a lease that is busy (a race, not a running holder) before exit 3. */
const LEASE_TRIES = 12;

/**
 * The exclusive lock on the lease file. Two controllers starting at the same instant can both
 * hold SQLite's SHARED lock on the way to EXCLUSIVE and so both be refused: each refused one
 * closes its connection (dropping its SHARED lock), waits a random 2–12 ms and tries again, so one
 * of them wins; only a lock still held after every try (about 100 ms) means another controller
 * runs (exit 3).
 */
async function lockExclusively(lockPath: string, dir: string): Promise<Database.Database> {
  for (let attempt = 1; ; attempt++) {
    const db = openGuarded(lockPath, { timeout: 0 });
    try {
      db.pragma('locking_mode = EXCLUSIVE');
      db.exec('BEGIN EXCLUSIVE');
      return db;
    } catch (err) {
      db.close();
      const code = (err as { code?: string }).code;
      if (code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') throw err;
      if (attempt >= LEASE_TRIES) throw new ControllerBusyError(dir);
      await new Promise((r) => setTimeout(r, 2 + Math.floor(Math.random() * 10)));
    }
  }
}

/** The lock file's inode, by stat: opening and closing the file would drop this process's POSIX locks on it. */
function inodeOf(path: string): { ino: number; dev: number } | null {
  try {
    const st = statSync(path);
    return { ino: st.ino, dev: st.dev };
  } catch {
    return null;
  }
}

function procStat(pid: number): { pgid: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pgid: Number(rest[2]) };
  } catch {
    return null;
  }
}

/** Processes (other than this one's group) whose working directory lies inside one of `dirs`. */
export function processesInside(dirs: readonly string[]): { pid: number; pgid: number; cwd: string }[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return []; // no procfs (not Linux): nothing to fence by this means
  }
  const ownGroup = procStat(process.pid)?.pgid ?? -1;
  const found: { pid: number; pgid: number; cwd: string }[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      continue; // gone, or not ours to inspect
    }
    if (!dirs.some((d) => cwd === d || cwd.startsWith(d.endsWith(sep) ? d : d + sep))) continue;
    const st = procStat(pid);
    if (!st || st.pgid === ownGroup) continue;
    found.push({ pid, pgid: st.pgid, cwd });
  }
  return found;
}

const alive = (pid: number): boolean => procStat(pid) !== null && !isZombie(pid);

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

/** Kill (SIGKILL) the process groups of orphans working inside `dirs`, and wait until they are gone. */
export async function fenceOrphans(dirs: readonly string[]): Promise<{ pid: number; pgid: number; cwd: string }[]> {
  const orphans = processesInside(dirs);
  if (orphans.length === 0) return [];
  for (const o of orphans) {
    try {
      // The whole group: workers and verification commands run in a process group of their own.
      process.kill(-o.pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 5000;
  while (orphans.some((o) => alive(o.pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return orphans;
}

/**
 * Wait (up to `timeoutMs`) for git processes working in any of `dirs` to finish (one scan of the
 * process table each round): a git command the dead controller started runs in its own process
 * group and may still hold a lock for a moment. They are waited for, never killed — killing one
 * is exactly what leaves a stale lock behind.
 */
export async function waitForGitIn(dirs: readonly string[], timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = processesInside(dirs).filter((p) => {
      try {
        return readFileSync(`/proc/${p.pid}/comm`, 'utf8').trim() === 'git';
      } catch {
        return false;
      }
    });
    if (busy.length === 0 || Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}
