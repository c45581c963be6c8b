/** Integration: protected paths, candidates onto head, verification, CAS promotion. See git.ts. */
import { resolve } from 'node:path';
import { sha256Hex } from '../../events/hash.js';
import { EffectError, ValidationError } from '../../events/errors.js';
import type { CommandEvidence } from '../../events/catalogue.js';
import { parseTrustedCommand, runProcess, type ProcessResult } from '../process/run-process.js';
import { assertRefName, assertSha, git } from './exec.js';
import { commitParents, isAncestor, readRef, treeOf } from './repo.js';
import { addDetachedWorkspace, assertEffectId, removeWorkspace } from './worktrees.js';

/** Paths no candidate may touch, whatever the configuration adds (R-29). */
export const ALWAYS_PROTECTED: readonly string[] = ['.longbuild/'];

/** Paths changed between two commits (added, modified, deleted; renames as delete + add). */
export async function changedPaths(repo: string, base: string, commit: string): Promise<string[]> {
  assertSha(base, 'base');
  assertSha(commit, 'commit');
  const out = (await git(repo, ['diff', '--name-only', '-z', '--no-renames', base, commit])).stdout;
  return out.split('\0').filter((p) => p !== '');
}

/** True when `path` is `protectedPath` or inside it (a trailing `/` marks a directory). */
function isUnder(path: string, protectedPath: string): boolean {
  const p = protectedPath.replace(/\/+$/, '');
  return path === p || path.startsWith(p + '/');
}

/** The changed paths of `commit` (vs base) that fall under a protected path; [] when allowed. */
export async function protectedPathViolations(repo: string, base: string, commit: string, protectedPaths: readonly string[] = []): Promise<string[]> {
  const all = [...ALWAYS_PROTECTED, ...protectedPaths];
  return (await changedPaths(repo, base, commit)).filter((p) => all.some((prot) => isUnder(p, prot)));
}

/** Throw a ValidationError (R-29) naming the offending paths if the candidate touches protected paths. */
export async function assertNoProtectedChanges(repo: string, base: string, commit: string, protectedPaths: readonly string[] = []): Promise<void> {
  const bad = await protectedPathViolations(repo, base, commit, protectedPaths);
  if (bad.length > 0) {
    const shown = bad.slice(0, 10).join(', ') + (bad.length > 10 ? `, … (${bad.length} paths)` : '');
    throw new ValidationError(`candidate ${commit} changes protected paths: ${shown} (R-29: a worker can change only its own work, never the build directory or protected paths)`, 'R-29');
  }
}

export type IntegrationResult =
  | { readonly kind: 'applied'; readonly workspace: string; readonly resultCommit: string; readonly tree: string; readonly fastForward: boolean }
  | { readonly kind: 'conflict'; readonly candidate: string; readonly index: number; readonly detail: string };

/**
 * Apply candidates onto `head` in a clean detached workspace `<workspacesDir>/<jobId>` (replacing
 * any leftover of a crashed run). One candidate whose only parent is head is a fast-forward
 * (result = candidate). Otherwise each candidate is cherry-picked in order with the fixed
 * committer and `date`, so the same inputs give the same result commit. On a conflict the
 * cherry-pick is aborted, the workspace removed, and the conflicting candidate named.
 */
export async function integrateCandidates(
  repo: string,
  workspacesDir: string,
  jobId: string,
  head: string,
  candidates: readonly string[],
  date: string,
): Promise<IntegrationResult> {
  assertEffectId(jobId, 'job id');
  assertSha(head, 'head');
  if (candidates.length === 0) throw new ValidationError('integrateCandidates needs at least one candidate commit');
  candidates.forEach((c, i) => assertSha(c, `candidate ${i}`));
  const workspace = resolve(workspacesDir, jobId);
  await addDetachedWorkspace(repo, workspace, head);
  const only = candidates.length === 1 ? candidates[0] : undefined;
  if (only !== undefined) {
    const parents = await commitParents(repo, only);
    if (parents.length === 1 && parents[0] === head) {
      await git(workspace, ['checkout', '-q', '--detach', only]);
      return { kind: 'applied', workspace, resultCommit: only, tree: await treeOf(repo, only), fastForward: true };
    }
  }
  for (const [index, candidate] of candidates.entries()) {
    const r = await git(workspace, ['cherry-pick', '--allow-empty', '--keep-redundant-commits', candidate], { date, allowFail: true });
    if (r.code !== 0) {
      await git(workspace, ['cherry-pick', '--abort'], { allowFail: true });
      await removeWorkspace(repo, workspace);
      return { kind: 'conflict', candidate, index, detail: (r.stdout + r.stderr).trim() };
    }
  }
  const resultCommit = (await git(workspace, ['rev-parse', '--verify', 'HEAD'])).stdout.trim();
  return { kind: 'applied', workspace, resultCommit, tree: await treeOf(repo, resultCommit), fastForward: false };
}

/** One verification command's run: the process runner's result (R-26). */
export type CommandRun = Omit<ProcessResult, 'spawnError'>;

export interface VerificationResult {
  /** Every command exited 0, none left a process behind, the workspace was clean before and after. */
  readonly passed: boolean;
  /** Why it did not pass (first reason), absent when passed. */
  readonly reason?: string;
  readonly commands: readonly CommandRun[];
  readonly cleanBefore: boolean;
  readonly cleanAfter: boolean;
  /** `git status --porcelain` lines of a dirty workspace (before, else after). */
  readonly dirty: readonly string[];
}

/** `git status --porcelain` entries, untracked and ignored files included ("ignoring nothing"). */
export async function workspaceStatus(workspace: string, opts: { includeIgnored?: boolean } = {}): Promise<string[]> {
  const args = ['status', '--porcelain=v1', '-z', '--untracked-files=all'];
  if (opts.includeIgnored !== false) args.push('--ignored=matching');
  return (await git(workspace, args)).stdout.split('\0').filter((l) => l !== '');
}

/**
 * Run the trusted verification commands (each parsed again with parseTrustedCommand, R-26) in
 * `workspace` with exactly `env`, one after the other, stopping at the first failing command.
 * The workspace must be clean (ignored files count) before and after.
 */
export async function runVerification(
  workspace: string,
  commands: readonly (readonly string[])[],
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
  opts: { includeIgnored?: boolean } = {},
): Promise<VerificationResult> {
  const argvs = commands.map((c) => parseTrustedCommand(c));
  const before = await workspaceStatus(workspace, opts);
  if (before.length > 0) {
    return { passed: false, reason: `workspace not clean before verification: ${before.slice(0, 5).join('; ')}`, commands: [], cleanBefore: false, cleanAfter: false, dirty: before };
  }
  const runs: CommandRun[] = [];
  let reason: string | undefined;
  for (const argv of argvs) {
    const r = await runProcess({ argv, cwd: workspace, env, timeoutMs });
    runs.push({ argv, exitCode: r.exitCode, signal: r.signal, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, timedOut: r.timedOut, leftover: r.leftover });
    const label = JSON.stringify(argv);
    if (r.spawnError !== undefined) reason = `${label} could not start: ${r.spawnError}`;
    else if (r.timedOut) reason = `${label} timed out after ${timeoutMs} ms`;
    else if (r.exitCode !== 0) reason = `${label} exited with ${r.exitCode === null ? `signal ${r.signal}` : r.exitCode}`;
    else if (r.leftover) reason = `${label} left processes behind (killed)`;
    if (reason !== undefined) break;
  }
  const after = await workspaceStatus(workspace, opts);
  if (reason === undefined && after.length > 0) reason = `workspace not clean after verification: ${after.slice(0, 5).join('; ')}`;
  return verificationResult(runs, reason, after);
}

/** The result of a verification whose workspace was clean before: passed unless `reason`. */
export function verificationResult<R extends CommandRun>(runs: readonly R[], reason: string | undefined, dirtyAfter: readonly string[]): VerificationResult & { readonly commands: readonly R[] } {
  return {
    passed: reason === undefined,
    ...(reason === undefined ? {} : { reason }),
    commands: runs,
    cleanBefore: true,
    cleanAfter: dirtyAfter.length === 0,
    dirty: dirtyAfter,
  };
}

/** The log form of a command run: hashes of the exact bytes, not the bytes. */
export function commandEvidence(run: CommandRun, cacheHit = false): CommandEvidence {
  return {
    argv: [...run.argv],
    exitCode: run.exitCode,
    stdoutSha256: sha256Hex(run.stdout),
    stderrSha256: sha256Hex(run.stderr),
    durationMs: Math.max(0, Math.round(run.durationMs)),
    cacheHit,
  };
}

/**
 * Move `ref` from `expectedOld` (null: must not exist) to `newCommit` with ONE compare-and-set
 * `git update-ref` (R-24). Returns 'promoted', or `{ conflict: actual }` when the ref was
 * elsewhere (actual null: the ref does not exist). Other failures throw EffectError.
 */
export async function promote(repo: string, ref: string, newCommit: string, expectedOld: string | null): Promise<'promoted' | { conflict: string | null }> {
  await assertRefName(repo, ref);
  assertSha(newCommit, 'newCommit');
  if (expectedOld !== null) assertSha(expectedOld, 'expectedOld');
  const old = expectedOld ?? '0'.repeat(newCommit.length);
  const r = await git(repo, ['update-ref', '-m', 'longbuild: promote', ref, newCommit, old], { allowFail: true });
  if (r.code === 0) return 'promoted';
  const actual = await readRef(repo, ref);
  if (actual === expectedOld) {
    throw new EffectError(`update-ref ${ref} failed although it is at the expected ${expectedOld ?? '(absent)'}: ${r.stderr.trim()}`);
  }
  return { conflict: actual };
}

/** True when `ref` is at `commit` or has moved past it (commit is an ancestor): the promotion happened (R-18 adoption). */
export async function isPromoted(repo: string, ref: string, commit: string): Promise<boolean> {
  await assertRefName(repo, ref);
  assertSha(commit, 'commit');
  const tip = await readRef(repo, ref);
  if (tip === null) return false;
  if (tip === commit) return true;
  const exists = await git(repo, ['cat-file', '-e', `${commit}^{commit}`], { allowFail: true });
  return exists.code === 0 && (await isAncestor(repo, commit, tip));
}
