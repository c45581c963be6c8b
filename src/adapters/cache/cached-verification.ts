/**
 * Trusted verification with the cache in front (R-26, R-27). Same contract as git's
 * runVerification — commands re-parsed strictly, explicit env, run one after the other, stop at
 * the first failure, the workspace clean (ignored files count) before and after — plus, per
 * command: look the key up first (a hit replays the exact cached bytes, cacheHit true); on a miss
 * run it, and store it only when it passed: exit 0, no timeout, no leftover process, and the
 * workspace still clean afterwards. Failures are never stored. A dirty workspace is never a hit.
 */
import { trustedEnvSha256 } from '../../commands/verification-cache.js';
import { verificationResult, workspaceStatus, type CommandRun, type VerificationResult } from '../git/git.js';
import { parseTrustedCommand, runProcess } from '../process/run-process.js';
import type { VerificationCache } from './verification-cache.js';

export interface CachedCommandRun extends CommandRun {
  readonly cacheHit: boolean;
}

export interface CachedVerificationResult extends VerificationResult {
  readonly commands: readonly CachedCommandRun[];
}

export interface CachedVerificationOptions {
  readonly workspace: string;
  /** The git tree checked out in `workspace` (the cache key's tree). */
  readonly tree: string;
  readonly commands: readonly (readonly string[])[];
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** null: the cache is off — every command runs, receipts keep the same shape (cacheHit false). */
  readonly cache: VerificationCache | null;
}

export async function verifyWithCache(o: CachedVerificationOptions): Promise<CachedVerificationResult> {
  const argvs = o.commands.map((c) => parseTrustedCommand(c));
  const before = await workspaceStatus(o.workspace);
  if (before.length > 0) {
    return { passed: false, reason: `workspace not clean before verification: ${before.slice(0, 5).join('; ')}`, commands: [], cleanBefore: false, cleanAfter: false, dirty: before };
  }
  const envSha256 = trustedEnvSha256(o.env);
  const runs: CachedCommandRun[] = [];
  let reason: string | undefined;
  let after: string[] = [];
  for (const argv of argvs) {
    const identity = { tree: o.tree, argv, envSha256 };
    const label = JSON.stringify(argv);
    const hit = o.cache?.lookup(identity) ?? null;
    if (hit !== null) {
      runs.push({ argv, exitCode: 0, signal: null, stdout: hit.stdout, stderr: hit.stderr, durationMs: hit.durationMs, timedOut: false, leftover: false, cacheHit: true });
      // The hit stands only on a workspace that is still clean (nothing ran, but check: R-27).
      after = await workspaceStatus(o.workspace);
      if (after.length > 0) {
        reason = `workspace not clean after verification: ${after.slice(0, 5).join('; ')}`;
        break;
      }
      continue;
    }
    const r = await runProcess({ argv, cwd: o.workspace, env: o.env, timeoutMs: o.timeoutMs });
    runs.push({ argv, exitCode: r.exitCode, signal: r.signal, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, timedOut: r.timedOut, leftover: r.leftover, cacheHit: false });
    if (r.spawnError !== undefined) reason = `${label} could not start: ${r.spawnError}`;
    else if (r.timedOut) reason = `${label} timed out after ${o.timeoutMs} ms`;
    else if (r.exitCode !== 0) reason = `${label} exited with ${r.exitCode === null ? `signal ${r.signal}` : r.exitCode}`;
    else if (r.leftover) reason = `${label} left processes behind (killed)`;
    if (reason !== undefined) break;
    after = await workspaceStatus(o.workspace);
    if (after.length > 0) {
      reason = `workspace not clean after verification: ${after.slice(0, 5).join('; ')}`;
      break;
    }
    o.cache?.store(identity, r);
  }
  if (reason !== undefined && after.length === 0) after = await workspaceStatus(o.workspace);
  return verificationResult(runs, reason, after);
}
