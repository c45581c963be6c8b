import { existsSync } from 'node:fs';
import { takeControllerLease, waitForGitIn, type ControllerLease } from '../controller/lease.js';
import { clearStaleOwnedLocks } from '../git/stale-locks.js';
import { pathsOf } from './open-build.js';
import type { CommandContext } from './types.js';

/**
 * Run a controller command (`step`, `run`) under the build's controller lease: a second
 * controller exits 3 before touching anything, and orphans of a dead controller are fenced first.
 */
export async function withControl<T>(ctx: CommandContext, fn: (lease: ControllerLease) => Promise<T>): Promise<T> {
  const paths = pathsOf(ctx);
  // No build here: let the command report it (NotFound) without creating a build directory.
  if (!existsSync(paths.events)) return fn({ fenced: [], release() {} });
  const lease = await takeControllerLease(paths.dir, [paths.worktrees, paths.workspaces]);
  try {
    // Leftovers of a git command SIGKILLed with its controller: only longbuild's own refs and worktrees.
    await waitForGitIn(paths.repo);
    const locks = await clearStaleOwnedLocks(paths.repo, [paths.worktrees, paths.workspaces]);
    if (locks.length > 0 && ctx.verbose) ctx.stderr(`longbuild: removed stale git locks: ${locks.join(', ')}\n`);
    if (lease.fenced.length > 0 && ctx.verbose) {
      ctx.stderr(`longbuild: fenced ${lease.fenced.length} orphan process(es) of a dead controller: ${lease.fenced.map((o) => `${o.pid} in ${o.cwd}`).join(', ')}\n`);
    }
    return await fn(lease);
  } finally {
    lease.release();
  }
}
