/** Integration: protected paths, candidates onto head, verification, CAS promotion. See git.ts. */
import { readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { EffectError, ValidationError } from '../../events/errors.js';
import type { ProcessResult } from '../process/run-process.js';
import { assertRefName, assertSha, git } from './exec.js';
import { commitParents, isAncestor, readRef, treeOf } from './repo.js';
import { addDetachedWorkspace, assertEffectId, removeWorkspace } from './worktrees.js';

/** Paths no candidate may touch, whatever the configuration adds. */
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

export type IntegrationResult =
  | { readonly kind: 'applied'; readonly workspace: string; readonly gitDir: string; readonly resultCommit: string; readonly tree: string; readonly fastForward: boolean }
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
  // Read while the workspace is still the host's alone: later git calls name this directory
  // explicitly instead of following a `.git` file the verified code could rewrite.
  const gitDir = workspaceGitDir(workspace);
  const only = candidates.length === 1 ? candidates[0] : undefined;
  if (only !== undefined) {
    const parents = await commitParents(repo, only);
    if (parents.length === 1 && parents[0] === head) {
      await git(workspace, ['checkout', '-q', '--detach', only]);
      return { kind: 'applied', workspace, gitDir, resultCommit: only, tree: await treeOf(repo, only), fastForward: true };
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
  return { kind: 'applied', workspace, gitDir, resultCommit, tree: await treeOf(repo, resultCommit), fastForward: false };
}

/** One verification command's run: the process runner's result. */
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

/** The git directory of a linked workspace, from its `.git` file (read before anything untrusted ran there). */
export function workspaceGitDir(workspace: string): string {
  const text = readFileSync(join(workspace, '.git'), 'utf8');
  const m = /^gitdir: (.+)$/m.exec(text);
  if (m === null) throw new EffectError(`${workspace}/.git does not name a git directory`);
  return resolve(workspace, m[1]!.trim());
}

/**
 * `git status --porcelain` entries of a workspace, untracked files included, and ignored ones
 * unless `includeIgnored` is false. The git directory is given explicitly, never discovered.
 */
export async function workspaceStatus(workspace: string, opts: { gitDir: string; includeIgnored?: boolean }): Promise<string[]> {
  const args = ['status', '--porcelain=v1', '-z', '--untracked-files=all'];
  if (opts.includeIgnored !== false) args.push('--ignored=matching');
  const env = { GIT_DIR: opts.gitDir, GIT_WORK_TREE: resolve(workspace) };
  return (await git(workspace, args, { env })).stdout.split('\0').filter((l) => l !== '');
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

/**
 * Move `ref` from `expectedOld` (null: must not exist) to `newCommit` with ONE compare-and-set
 * `git update-ref`. Returns 'promoted', or `{ conflict: actual }` when the ref was
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

/** What the integrator checks on every candidate, besides protected paths. */
export interface CandidateLimits {
  /** Largest file a candidate may add or change, in bytes. */
  readonly maxFileBytes: number;
  /** Paths no candidate may touch (configured, plus the build directory). */
  readonly protectedPaths: readonly string[];
  /** The trusted verification commands: every in-tree file they name is protected too. */
  readonly verify: readonly (readonly string[])[];
}

/**
 * The in-tree files a verification argv names: every argument that is not an option and
 * looks like a relative file path (`test/run.js`, `./verify.sh`), normalised, unless it names a
 * directory of the base tree (a test directory stays open for new tests).
 */
export function verifyNamedPaths(verify: readonly (readonly string[])[]): string[] {
  const out = new Set<string>();
  for (const argv of verify) {
    for (const a of argv.slice(1)) {
      if (a.startsWith('-') || a.includes('=') || a.includes(':') || isAbsoluteLike(a)) continue;
      if (!a.includes('/') && !/\.[A-Za-z0-9]+$/.test(a)) continue;
      const p = posix.normalize(a).replace(/\/+$/, '');
      if (p === '.' || p.startsWith('../') || p === '..') continue;
      out.add(p);
    }
  }
  return [...out].sort();
}

const isAbsoluteLike = (a: string): boolean => a.startsWith('/') || a.startsWith('~');

/**
 * Why a candidate commit is refused, or null: a changed path under a protected path
 * or naming a file a verification command runs; a symlink whose target leaves the tree; a
 * submodule (gitlink); a file over the size limit.
 */
export async function candidateProblem(repo: string, base: string, commit: string, limits: CandidateLimits): Promise<{ rule: string; reason: string } | null> {
  assertSha(base, 'base');
  assertSha(commit, 'commit');
  const out = (await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', base, commit])).stdout.split('\0');
  const changed: { mode: string; sha: string; path: string }[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) {
    const meta = out[i]!.split(' ');
    changed.push({ mode: meta[1]!, sha: meta[3]!, path: out[i + 1]! });
  }
  const protectedPaths = [...ALWAYS_PROTECTED, ...limits.protectedPaths];
  const baseDirs = new Set((await git(repo, ['ls-tree', '-r', '-d', '-z', '--name-only', base])).stdout.split('\0').filter((p) => p !== ''));
  const named = verifyNamedPaths(limits.verify).filter((p) => !baseDirs.has(p));
  for (const c of changed) {
    const prot = protectedPaths.find((pp) => isUnder(c.path, pp));
    if (prot !== undefined) return { rule: 'R-29', reason: `the candidate changes protected path '${c.path}'` };
    if (named.includes(c.path)) return { rule: 'R-31', reason: `the candidate changes '${c.path}', which a verification command runs` };
    if (c.mode === '000000') continue; // deleted
    if (c.mode === '160000') return { rule: 'R-31', reason: `the candidate adds a submodule (gitlink) at '${c.path}'` };
    if (c.mode === '120000') {
      const target = (await git(repo, ['cat-file', 'blob', c.sha])).stdout;
      const resolved = posix.normalize(posix.join(posix.dirname(c.path), target));
      if (target.startsWith('/') || resolved === '..' || resolved.startsWith('../')) {
        return { rule: 'R-31', reason: `the candidate's symlink '${c.path}' points outside the tree (${JSON.stringify(target)})` };
      }
      continue;
    }
    const size = Number((await git(repo, ['cat-file', '-s', c.sha])).stdout.trim());
    if (size > limits.maxFileBytes) return { rule: 'R-31', reason: `the candidate's file '${c.path}' is ${size} bytes, over the limit of ${limits.maxFileBytes}` };
  }
  return null;
}

/**
 * Publish the integration head to the user's repository: fetch its objects from the
 * integrator's repository, then move the user's ref with one compare-and-set from `expectedOld`
 * (null: force it, a repair). Returns false when the user's ref was elsewhere.
 */
export async function publishRef(userRepo: string, integratorRepo: string, ref: string, commit: string, expectedOld: string | null): Promise<boolean> {
  await assertRefName(userRepo, ref);
  assertSha(commit, 'commit');
  const have = await git(userRepo, ['cat-file', '-e', `${commit}^{commit}`], { allowFail: true });
  if (have.code !== 0) {
    await git(userRepo, ['fetch', '-q', '--no-tags', '--no-write-fetch-head', resolve(integratorRepo), `+${commit}:refs/longbuild/incoming`]);
    await git(userRepo, ['update-ref', '-d', 'refs/longbuild/incoming'], { allowFail: true });
  }
  const args = ['update-ref', '-m', 'longbuild: publish', ref, commit];
  if (expectedOld !== null) args.push(expectedOld);
  const r = await git(userRepo, args, { allowFail: true });
  return r.code === 0;
}
