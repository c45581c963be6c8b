/** Attempt worktrees and integration workspaces. See git.ts for the public API summary. */
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { EffectError, ValidationError } from '../../events/errors.js';
import { isSafeId } from '../../events/ids.js';
import { assertSha, git } from './exec.js';
import { commitParents, readRef, treeOf } from './repo.js';

export interface CommitAndTree {
  readonly commit: string;
  readonly tree: string;
}

/**
 * An effect id that reaches a path or a ref: a safe id, or a safe id followed by `.<n>`
 * (attempt ids are `<nodeId>.<n>`, which may exceed the 64 characters of a node id), that git
 * accepts as a ref component.
 */
export function isSafeEffectId(id: unknown): id is string {
  // Git also refuses ref components ending in '.' or '.lock'.
  if (typeof id !== 'string' || id.includes('..') || id.endsWith('.') || id.endsWith('.lock')) return false;
  if (isSafeId(id)) return true;
  const m = /^(.+)\.([1-9][0-9]{0,5})$/.exec(id);
  return m !== null && isSafeId(m[1]);
}

function assertEffectId(id: unknown, what: string): asserts id is string {
  if (!isSafeEffectId(id)) {
    throw new ValidationError(`unsafe ${what} ${JSON.stringify(id)}: must be a safe id (^[a-z0-9][a-z0-9._-]{0,63}$, no '..'), optionally followed by .<n>`, 'R-8');
  }
}

export const ATTEMPT_BRANCH_PREFIX = 'refs/heads/longbuild/attempts/';

/** The branch of an attempt: refs/heads/longbuild/attempts/<attemptId>. */
export function attemptBranch(attemptId: string): string {
  assertEffectId(attemptId, 'attempt id');
  return ATTEMPT_BRANCH_PREFIX + attemptId;
}

/** Accept the attempt branch as a full ref or as `longbuild/attempts/<id>`; anything else is refused. */
function normalizeAttemptBranch(branch: string, attemptId?: string): string {
  const full = branch.startsWith('refs/') ? branch : `refs/heads/${branch}`;
  if (!full.startsWith(ATTEMPT_BRANCH_PREFIX)) {
    throw new ValidationError(`attempt branch must be under ${ATTEMPT_BRANCH_PREFIX}, got ${JSON.stringify(branch)}`, 'R-29');
  }
  const id = full.slice(ATTEMPT_BRANCH_PREFIX.length);
  assertEffectId(id, 'attempt branch id');
  if (attemptId !== undefined && id !== attemptId) {
    throw new ValidationError(`attempt branch ${full} does not belong to attempt ${attemptId}`, 'R-29');
  }
  return full;
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

interface WorktreeEntry {
  path: string;
  locked: boolean;
}

async function listWorktrees(repo: string): Promise<WorktreeEntry[]> {
  const out = (await git(repo, ['worktree', 'list', '--porcelain', '-z'])).stdout;
  const entries: WorktreeEntry[] = [];
  let cur: WorktreeEntry | null = null;
  for (const field of out.split('\0')) {
    if (field === '') {
      if (cur) entries.push(cur);
      cur = null;
      continue;
    }
    if (field.startsWith('worktree ')) cur = { path: field.slice('worktree '.length), locked: false };
    else if (cur && (field === 'locked' || field.startsWith('locked '))) cur.locked = true;
  }
  if (cur) entries.push(cur);
  return entries;
}

async function commonDir(repo: string): Promise<string> {
  return resolve(repo, (await git(repo, ['rev-parse', '--git-common-dir'])).stdout.trim());
}

/**
 * Remove whatever is at `path` (a worktree we own), including a half-created one: a registered
 * worktree (even locked, e.g. by a `worktree add` that was killed), a stray directory, a stale
 * index.lock, or admin data whose directory vanished.
 */
async function clearWorktreePath(repo: string, path: string): Promise<void> {
  const target = real(path);
  for (const wt of await listWorktrees(repo)) {
    if (real(wt.path) !== target) continue;
    if (wt.locked) await git(repo, ['worktree', 'unlock', wt.path], { allowFail: true });
    await git(repo, ['worktree', 'remove', '--force', '--force', wt.path], { allowFail: true });
  }
  rmSync(path, { recursive: true, force: true });
  await git(repo, ['worktree', 'prune']);
  // A locked admin entry survives prune: drop any admin dir whose gitdir points into `path`.
  const adminRoot = join(await commonDir(repo), 'worktrees');
  if (!existsSync(adminRoot)) return;
  for (const name of readdirSync(adminRoot)) {
    const gitdirFile = join(adminRoot, name, 'gitdir');
    let pointsTo: string;
    try {
      pointsTo = readFileSync(gitdirFile, 'utf8').trim();
    } catch {
      continue;
    }
    if (resolve(dirname(pointsTo)) === resolve(path) || real(dirname(pointsTo)) === target) {
      rmSync(join(adminRoot, name), { recursive: true, force: true });
    }
  }
}

export interface PreparedAttempt {
  readonly worktree: string;
  readonly branch: string;
  /** Set when the branch already holds the attempt's single commit on top of baseHead:
   *  adopt it instead of invoking the worker; the worktree was left untouched. */
  readonly adoptable: CommitAndTree | null;
}

/**
 * Give an attempt its own worktree at `<worktreesDir>/<attemptId>` on its branch, checked out at
 * baseHead. Idempotent and crash-safe: a half-created worktree (stray directory, stale
 * index.lock, locked admin entry) is removed and recreated; a branch still at baseHead is reset.
 * A branch holding exactly one commit on top of baseHead is an adoptable result and is returned
 * untouched; any other history on the branch is refused (EffectError) rather than deleted.
 */
export async function prepareAttemptWorktree(
  repo: string,
  worktreesDir: string,
  attemptId: string,
  branch: string,
  baseHead: string,
): Promise<PreparedAttempt> {
  assertEffectId(attemptId, 'attempt id');
  const ref = normalizeAttemptBranch(branch, attemptId);
  assertSha(baseHead, 'baseHead');
  const worktree = resolve(worktreesDir, attemptId);
  const found = await findAttemptCommit(repo, ref, baseHead);
  if (found !== null) return { worktree, branch: ref, adoptable: found };
  const tip = await readRef(repo, ref);
  if (tip !== null && tip !== baseHead) {
    throw new EffectError(`attempt branch ${ref} is at ${tip}, which is neither baseHead ${baseHead} nor one commit on top of it; refusing to delete it`);
  }
  await clearWorktreePath(repo, worktree);
  mkdirSync(worktreesDir, { recursive: true });
  // -B: (re)create the branch at baseHead; it is at baseHead or absent, so nothing is lost.
  await git(repo, ['worktree', 'add', '-q', '-B', ref.slice('refs/heads/'.length), worktree, baseHead]);
  return { worktree, branch: ref, adoptable: null };
}

/** The attempt's commit if `branch` holds exactly one commit on top of baseHead (adoption, R-18), else null. */
export async function findAttemptCommit(repo: string, branch: string, baseHead: string): Promise<CommitAndTree | null> {
  const ref = normalizeAttemptBranch(branch);
  assertSha(baseHead, 'baseHead');
  const tip = await readRef(repo, ref);
  if (tip === null || tip === baseHead) return null;
  const parents = await commitParents(repo, tip);
  if (parents.length !== 1 || parents[0] !== baseHead) return null;
  return { commit: tip, tree: await treeOf(repo, tip) };
}

/**
 * Stage everything in `worktree` (additions, changes, deletions; .gitignore respected) and commit
 * it with the fixed identity and `date`. Returns the new commit and tree, or null when nothing changed.
 */
export async function commitWorktree(worktree: string, message: string, date: string): Promise<CommitAndTree | null> {
  if (typeof message !== 'string' || message.trim() === '') throw new ValidationError('commit message must not be empty');
  await git(worktree, ['add', '-A', '--', '.']);
  const diff = await git(worktree, ['diff', '--cached', '--quiet'], { allowFail: true });
  if (diff.code === 0) return null;
  if (diff.code !== 1) throw new EffectError(`git diff --cached failed in ${worktree}: ${diff.stderr.trim()}`);
  await git(worktree, ['commit', '-q', '--no-verify', '--cleanup=strip', '-m', message], { date });
  const commit = (await git(worktree, ['rev-parse', '--verify', 'HEAD'])).stdout.trim();
  return { commit, tree: await treeOf(worktree, commit) };
}

/** Remove a worktree or workspace we created (forced; also when half-created). Idempotent. */
export async function removeWorkspace(repo: string, path: string): Promise<void> {
  await clearWorktreePath(repo, path);
}

/** `git worktree prune`: forget worktrees whose directories are gone. */
export async function pruneWorktrees(repo: string): Promise<void> {
  await git(repo, ['worktree', 'prune']);
}

/** Create a clean detached worktree of `commit` at `path`, replacing anything already there. */
export async function addDetachedWorkspace(repo: string, path: string, commit: string): Promise<void> {
  assertSha(commit, 'commit');
  await clearWorktreePath(repo, path);
  mkdirSync(dirname(path), { recursive: true });
  await git(repo, ['worktree', 'add', '-q', '--detach', path, commit]);
}

export { assertEffectId };
