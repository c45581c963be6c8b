/**
 * Git adapter. Every call goes through the process runner with a controlled,
 * HOME-independent environment (GIT_CONFIG_NOSYSTEM=1, GIT_CONFIG_GLOBAL=/dev/null, no hooks,
 * no background gc), identity "longbuild <longbuild@localhost>", and — for every commit — the
 * given ISO date as author and committer date, so the same inputs give the same commit SHAs.
 * Errors: ValidationError for bad ids/refs/SHAs/dates (refused before reaching git);
 * EffectError when git itself fails unexpectedly (message includes git's stderr).
 *
 * PUBLIC API (all async unless noted; `repo` = path of the main work tree)
 *
 * Repository
 *   ensureRepo(repoDir, date, { buildDir = '.longbuild' }?) -> head: string
 *       `git init -b main` if needed; empty deterministic initial commit if no commit yet;
 *       adds `/<buildDir>/` to .git/info/exclude. Returns HEAD's commit.
 *   readRef(repo, ref) -> string | null                  commit a ref/revision points at
 *   treeOf(repo, commit) -> string                       tree id
 *   commitParents(repo, commit) -> string[]
 *   isAncestor(repo, ancestor, descendant) -> boolean
 *
 * The integrator's repository: `<build dir>/integrator.git`, bare, private to the host;
 *   the integration ref and attempt branches live there; `publishRef` mirrors the integration
 *   head into the user's repository. `repo` below is that repository unless said otherwise.
 *
 * Attempts (one clone per attempt, R-24, R-30)
 *   attemptBranch(attemptId) -> 'refs/heads/longbuild/attempts/<attemptId>'   (sync)
 *   isSafeEffectId(id) -> boolean   safe id, or safe id + '.<n>' (attempt/job ids)   (sync)
 *   prepareAttemptWorktree(repo, worktreesDir, attemptId, branch, baseHead)
 *       -> { worktree, branch, adoptable: {commit, tree} | null }
 *       Worktree at <worktreesDir>/<attemptId> on `branch` at baseHead; idempotent, cleans a
 *       half-created worktree (stray dir, stale index.lock, locked admin entry). If the branch
 *       already holds exactly one commit on baseHead, returns it as `adoptable` (don't invoke the
 *       worker; R-18) and leaves everything untouched. Other history on the branch -> EffectError.
 *   findAttemptCommit(repo, branch, baseHead) -> {commit, tree} | null    adoption check only
 *   commitAttempt(repo, clone, branch, baseHead, message, date, {maxFileBytes, indexFile})
 *       -> committed {commit, tree} | unchanged | refused {rule, reason}: the host reads the
 *       clone's files with its own git directory and index; nothing of the clone's .git is used.
 *
 * Integration
 *   changedPaths(repo, base, commit) -> string[]
 *   integrateCandidates(repo, workspacesDir, jobId, head, candidates, date)
 *       -> { kind: 'applied', workspace, resultCommit, tree, fastForward }
 *        | { kind: 'conflict', candidate, index, detail }   (workspace already removed)
 *       Clean detached workspace <workspacesDir>/<jobId> at head; single candidate whose parent
 *       is head = fast-forward; else cherry-pick each in order with committer date `date`.
 *   workspaceStatus(workspace, { gitDir, includeIgnored = true }) -> porcelain entries
 *   candidateProblem(repo, base, commit, limits) -> {rule, reason} | null  
 *   publishRef(userRepo, repo, ref, commit, expectedOld | null) -> boolean
 *   (Verification itself: cache/cached-verification.ts, the one pipeline.)
 *   promote(repo, ref, newCommit, expectedOld | null) -> 'promoted' | { conflict: actual | null }
 *       One compare-and-set `git update-ref ref new old`.
 *   isPromoted(repo, ref, commit) -> boolean     ref is at commit or has moved past it
 *   removeWorkspace(repo, path)                  forced, idempotent (worktrees and workspaces)
 *   pruneWorktrees(repo)
 *
 * Low level: git(cwd, args, { date?, input?, allowFail? }), gitEnv(date?), gitDate(iso).
 */
export { git, gitDate, gitEnv, isValidRefName, LONGBUILD_EMAIL, LONGBUILD_NAME } from './exec.js';
export type { GitOptions, GitOutput } from './exec.js';
export { commitParents, ensureRepo, gitCommonDir, INITIAL_COMMIT_MESSAGE, isAncestor, looseBlob, readRef, treeOf } from './repo.js';
export { changedFilesOf, looseDiff, type TreeChange } from './tree-diff.js';
export { listRefFiles, readRefFiles } from './ref-files.js';
export {
  addDetachedWorkspace,
  ATTEMPT_BRANCH_PREFIX,
  attemptBranch,
  commitAttempt,
  findAttemptCommit,
  isSafeEffectId,
  prepareAttemptWorktree,
  pruneWorktrees,
  removeWorkspace,
} from './worktrees.js';
export type { AttemptCommitResult, CommitAndTree, PreparedAttempt } from './worktrees.js';
export {
  ALWAYS_PROTECTED,
  candidateProblem,
  changedPaths,
  integrateCandidates,
  isPromoted,
  promote,
  publishRef,
  verifyNamedPaths,
  workspaceGitDir,
  workspaceStatus,
  verificationResult,
} from './integrate.js';
export type { CandidateLimits, CommandRun, IntegrationResult, VerificationResult } from './integrate.js';
export { ensureIntegratorRepo } from './integrator-repo.js';
