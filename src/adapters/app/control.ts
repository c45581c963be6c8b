import { ControllerBusyError, takeControllerLease, waitForGitIn, type ControllerLease } from '../controller/lease.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { clearStaleOwnedLocks } from '../git/stale-locks.js';
import { buildExists, recordedLogSpec, type BuildPaths } from '../build-dir.js';
import { postgresTarget } from '../log/open-log.js';
import { outageLine, reconnectWindowMs, withSchema } from '../log/pg-connection.js';
import { LongbuildError, UsageError } from '../../events/errors.js';
import { pathsOf, type AppContext } from './context.js';
import type { OpenOptions } from '../session.js';

/**
 * Run a controller command (`step`, `run`) under the build's controller lease: a second
 * controller exits 3 before touching anything, and orphans of a dead controller are fenced first.
 */
export async function withControl<T>(ctx: AppContext, fn: (lease: ControllerLease) => Promise<T>): Promise<T> {
  const paths = pathsOf(ctx);
  // No build here: let the command report it (NotFound) without creating a build directory.
  if (!buildExists(paths)) return fn({ fenced: [], release() {} });
  const lease = await takeLease(ctx, paths);
  try {
    // Leftovers of a git command SIGKILLed with its controller: only longbuild's own refs and worktrees.
    await waitForGitIn([paths.repo, paths.dir]);
    const locks = await clearStaleOwnedLocks(paths.repo, [paths.worktrees, paths.workspaces]);
    if (existsSync(join(paths.integrator, 'HEAD'))) locks.push(...await clearStaleOwnedLocks(paths.integrator, [paths.workspaces]));
    if (locks.length > 0 && ctx.verbose) ctx.stderr(`longbuild: removed stale git locks: ${locks.join(', ')}\n`);
    if (lease.fenced.length > 0) {
      ctx.stderr(`longbuild: fenced ${lease.fenced.length} orphan process(es) of a dead controller: ${lease.fenced.map((o) => `${o.pid} in ${o.cwd}`).join(', ')}\n`);
    }
    return await fn(lease);
  } catch (err) {
    throw await lostLeaseOr(lease, err);
  } finally {
    await lease.release();
  }
}

/**
 * What a session opened under `lease` is told of it: the checks every append makes (the log's
 * fence, the lock file) and, for a lease actually taken, that no one else appends meanwhile.
 */
export function leaseOptions(lease: ControllerLease): Pick<OpenOptions, 'appendFence' | 'beforeAppend' | 'soleWriter' | 'beforeRefMove'> {
  const assertHeld = lease.assertHeld;
  const refFence = lease.confirm ?? (assertHeld ? async () => assertHeld() : undefined);
  return {
    ...(lease.appendFence ? { appendFence: lease.appendFence } : {}),
    ...(lease.assertHeld ? { beforeAppend: lease.assertHeld } : {}),
    ...(refFence ? { beforeRefMove: refFence } : {}),
    ...(lease.appendFence || lease.assertHeld ? { soleWriter: true } : {}),
  };
}

/** The lease-lost error when the lease was lost while `err` happened (exit 3), else `err` itself. */
async function lostLeaseOr(lease: ControllerLease, err: unknown): Promise<unknown> {
  if (err instanceof LongbuildError && err.code === 'CONCURRENCY') return err;
  try {
    await lease.confirm?.();
  } catch (lost) {
    if (lost instanceof LongbuildError && lost.code === 'CONCURRENCY') return lost;
  }
  return err; // still held (or it cannot be told now): the failure is what it says
}

/**
 * Run a command that rewrites the build's caches (`rebuild`) under the controller lease, without
 * the controller's git housekeeping: while a controller runs, it exits 3 and changes nothing.
 */
export async function withLease<T>(ctx: AppContext, fn: () => Promise<T>): Promise<T> {
  const paths = pathsOf(ctx);
  if (!buildExists(paths)) return fn();
  const lease = await takeLease(ctx, paths);
  try {
    return await fn();
  } finally {
    await lease.release();
  }
}

/**
 * The lease that fits the build's log: a PostgreSQL log is shared by hosts, so its lease
 * is a row in PostgreSQL with expiry and fencing token; any other log uses the local file lock.
 * `--standby` waits for the lease (and takes over when its holder dies) instead of exiting 3.
 */
async function takeLease(ctx: AppContext, paths: BuildPaths): Promise<ControllerLease> {
  const standby = ctx.standby === true;
  const fencedDirs = [paths.worktrees, paths.workspaces];
  const pg = postgresTarget(recordedLogSpec(paths) ?? 'sqlite');
  if (pg) {
    const { takePostgresLease } = await import('../controller/pg-lease.js');
    let waited = false;
    const lease = await takePostgresLease({
      ...pg, fencedDirs, wait: standby, timeoutMs: leaseTimeoutMs(ctx.env), reconnectMs: reconnectWindowMs(ctx.env),
      onOutage: (detail) => ctx.stderr(outageLine(withSchema(pg.url, pg.schema), reconnectWindowMs(ctx.env), detail)),
      onWait: (holder, ms) => {
        waited = true;
        ctx.stderr(`longbuild: standing by: controller lease held by ${holder} (expires in ${ms} ms unless renewed)\n`);
      },
    });
    if (waited) ctx.stderr(`longbuild: took over the controller lease (token ${lease.token})\n`);
    return lease;
  }
  for (let told = false; ; told = true) {
    try {
      return await takeControllerLease(paths.dir, fencedDirs);
    } catch (err) {
      if (!standby || !(err instanceof ControllerBusyError)) throw err;
      if (!told) ctx.stderr('longbuild: standing by: another controller holds the build\'s lease\n');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** LONGBUILD_LEASE_TIMEOUT_MS: how long a PostgreSQL lease outlives its holder's last renewal. */
function leaseTimeoutMs(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const raw = env.LONGBUILD_LEASE_TIMEOUT_MS;
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 100) throw new UsageError(`LONGBUILD_LEASE_TIMEOUT_MS must be an integer ≥ 100, got '${raw}'`);
  return ms;
}
