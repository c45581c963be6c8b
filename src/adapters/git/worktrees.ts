/** Attempt worktrees and integration workspaces. See git.ts for the public API summary. */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { EffectError, ValidationError } from '../../events/errors.js';
import { isSafeId } from '../../events/ids.js';
import { assertSha, git } from './exec.js';
import { commitParents, commitTree, copyLooseObjects, gitCommonDir, objectsBetween, readRef, treeOf } from './repo.js';
import { writeIndexOfTree } from './tree-diff.js';
import { updateOwnRef } from './own-refs.js';

export interface CommitAndTree {
  readonly commit: string;
  readonly tree: string;
}

/**
 * An effect id that reaches a path or a ref: a safe id (R-8), or a safe id followed by `.<n>`
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

/**
 * Remove whatever is at `path` (a worktree we own), including a half-created one: a registered
 * worktree (even locked, e.g. by a `worktree add` that was killed), a stray directory, a stale
 * index.lock, or admin data whose directory vanished.
 */
async function clearWorktreePath(repo: string, path: string): Promise<void> {
  const target = real(path);
  // Removed first, without asking git: a git command run inside the workspace would read its
  // `.git` file, which the verified code could have rewritten (R-31).
  await rm(path, { recursive: true, force: true });
  // Its admin entry goes too (locked or not): any admin dir whose gitdir points into `path`. Not
  // `git worktree prune`, which would also judge the entries of workspaces other jobs are
  // creating at this moment (several integration jobs run at once).
  const adminRoot = join(await gitCommonDir(repo), 'worktrees');
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
  /** Set when the branch already holds the attempt's single commit on top of baseHead (R-18):
   *  adopt it instead of invoking the worker; the clone was left untouched. */
  readonly adoptable: CommitAndTree | null;
  /** The clone starts with a previous candidate's changes applied (rework), see prepareAttemptWorktree. */
  readonly reworked: boolean;
  /** Files where those changes conflicted with the new base: left with conflict markers to resolve. */
  readonly conflicts: readonly string[];
}

/**
 * Give an attempt its own clone (R-24, R-30) at `<worktreesDir>/<attemptId>`: a new repository
 * holding only baseHead and its history, checked out on `main`. Nothing the worker does to its
 * git config, hooks or attributes reaches the integrator's repository, which is never the
 * clone's remote. `repo` is the integrator's repository; the attempt branch lives there, written
 * only by the host (commitAttempt). Idempotent: whatever a crashed run left at the path is removed.
 * A branch holding exactly one commit on top of baseHead is an adoptable result: it is returned,
 * and the branch left untouched; any other history on the branch is refused (EffectError)
 * rather than deleted.
 */
export async function prepareAttemptWorktree(
  repo: string,
  worktreesDir: string,
  attemptId: string,
  branch: string,
  baseHead: string,
  reworkFrom?: string,
): Promise<PreparedAttempt> {
  assertEffectId(attemptId, 'attempt id');
  const ref = normalizeAttemptBranch(branch, attemptId);
  assertSha(baseHead, 'baseHead');
  const worktree = resolve(worktreesDir, attemptId);
  const found = await findAttemptCommit(repo, ref, baseHead);
  const tip = found === null ? await readRef(repo, ref) : null;
  if (tip !== null && tip !== baseHead) {
    throw new EffectError(`attempt branch ${ref} is at ${tip}, which is neither baseHead ${baseHead} nor one commit on top of it; refusing to delete it`);
  }
  // A fresh clone in any case; an adoptable commit stays on the branch, untouched, for the caller.
  await rm(worktree, { recursive: true, force: true });
  mkdirSync(worktreesDir, { recursive: true, mode: 0o700 });
  initRepository(worktree);
  // The clone takes baseHead's history from the integrator's repository (ours, trusted), never
  // the reverse: copied as loose object files when the host wrote them so (a short history of
  // the host's own commits: the fetch's six processes saved per attempt), else fetched.
  const history = await objectsBetween(repo, null, baseHead, CLONE_COPY_COMMITS, CLONE_COPY_OBJECTS);
  if (history !== null && (await copyLooseObjects(repo, worktree, history))) writeFileSync(join(worktree, '.git', 'refs', 'heads', 'main'), `${baseHead}\n`);
  else await git(worktree, ['fetch', '-q', '--no-tags', '--update-head-ok', resolve(repo), `${baseHead}:refs/heads/main`]);
  await git(worktree, ['reset', '-q', '--hard', 'main']);
  const applied = reworkFrom === undefined ? { reworked: false, conflicts: [] } : await applyCandidate(repo, worktree, normalizeAttemptBranch(reworkFrom));
  return { worktree, branch: ref, adoptable: found, ...applied };
}

/** An attempt's clone copies its history's objects itself up to this many commits and objects (each read and checked in-process); beyond, git fetches them. */
const CLONE_COPY_COMMITS = 256;
const CLONE_COPY_OBJECTS = 2000;

/**
 * What `git init -q --template= -b main DIR` makes, written in-process (a git process saved per
 * attempt): HEAD on an unborn `main`, a format-0 configuration, empty object and ref directories.
 */
function initRepository(dir: string): void {
  const g = join(dir, '.git');
  for (const d of ['objects/info', 'objects/pack', 'refs/heads', 'refs/tags']) mkdirSync(join(g, d), { recursive: true });
  writeFileSync(join(g, 'HEAD'), 'ref: refs/heads/main\n');
  writeFileSync(join(g, 'config'), '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n');
}

/**
 * Apply a previous candidate's changes (its branch's one commit) to the clone's files, three-way
 * (a rebase onto the new base, by the integrator's rules: the same-worktree rework of agent
 * builds). Where they conflict, the files are left with git's conflict markers for the worker to
 * resolve, and named. `reworked` false, with the clone back at its base, when the branch is gone
 * or the changes cannot be applied at all.
 */
async function applyCandidate(repo: string, worktree: string, branch: string): Promise<{ reworked: boolean; conflicts: string[] }> {
  const identity = ['-c', 'user.name=longbuild', '-c', 'user.email=longbuild@localhost'];
  try {
    await git(worktree, ['fetch', '-q', '--no-tags', resolve(repo), `${branch}:refs/heads/rework`]);
    const picked = await git(worktree, [...identity, 'cherry-pick', '--no-commit', 'rework'], { allowFail: true });
    const conflicts = picked.code === 0 ? [] : (await git(worktree, ['diff', '--name-only', '--diff-filter=U', '-z'])).stdout.split('\0').filter((p) => p !== '');
    if (picked.code !== 0 && conflicts.length === 0) throw new EffectError(`the candidate cannot be applied: ${picked.stderr.trim().split('\n')[0] ?? ''}`);
    // The index back at the base, the files as the three-way apply left them (markers and all).
    await git(worktree, ['reset', '-q']);
    return { reworked: true, conflicts: conflicts.sort() };
  } catch {
    await git(worktree, ['cherry-pick', '--abort'], { allowFail: true });
    await git(worktree, ['reset', '-q', '--hard', 'main']);
    await git(worktree, ['clean', '-qfdx']);
    return { reworked: false, conflicts: [] };
  }
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

export type AttemptCommitResult =
  | { readonly kind: 'committed'; readonly commit: string; readonly tree: string }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly rule: string; readonly reason: string };

/**
 * The host commits what the worker left in its clone (R-24, R-31): the files are read as data
 * with the integrator's own git directory and a private index, so nothing of the clone's `.git`
 * (config, hooks, filters, attributes) is ever used. Special files and files over
 * `maxFileBytes` are refused before anything is hashed. The commit (fixed identity and `date`,
 * parent baseHead) is recorded on the attempt branch in the integrator's repository.
 */
export async function commitAttempt(
  repo: string,
  worktree: string,
  branch: string,
  baseHead: string,
  message: string,
  date: string,
  opts: { maxFileBytes: number; indexFile: string; maxFiles?: number },
): Promise<AttemptCommitResult> {
  const ref = normalizeAttemptBranch(branch);
  assertSha(baseHead, 'baseHead');
  if (typeof message !== 'string' || message.trim() === '') throw new ValidationError('commit message must not be empty');
  // A candidate may hold the base's files and at most maxFiles more (R-31): counted before git hashes any.
  const budget = opts.maxFiles === undefined ? Infinity : (await baseFileCount(repo, baseHead)) + opts.maxFiles;
  const problem = worktreeProblem(worktree, opts.maxFileBytes, budget, opts.maxFiles ?? 0);
  if (problem !== null) return { kind: 'refused', rule: 'R-31', reason: problem };
  mkdirSync(dirname(opts.indexFile), { recursive: true, mode: 0o700 });
  rmSync(opts.indexFile, { force: true });
  const env = { GIT_INDEX_FILE: opts.indexFile, GIT_DIR: resolve(repo), GIT_WORK_TREE: resolve(worktree) };
  try {
    if (!(await writeIndexOfTree(repo, await treeOf(repo, baseHead), opts.indexFile))) await git(worktree, ['read-tree', baseHead], { env });
    const added = await git(worktree, ['add', '-A', '--', '.'], { env, allowFail: true });
    if (added.code !== 0) return { kind: 'refused', rule: 'R-31', reason: `the worktree cannot be committed: ${added.stderr.trim().split('\n')[0] ?? ''}` };
    const tree = (await git(worktree, ['write-tree'], { env })).stdout.trim();
    if (tree === (await treeOf(repo, baseHead))) return { kind: 'unchanged' };
    const commit = await commitTree(repo, tree, [baseHead], message, date);
    if ((await updateOwnRef(repo, ref, commit)) === null) await git(repo, ['update-ref', '-m', 'longbuild: attempt', ref, commit]);
    return { kind: 'committed', commit, tree };
  } finally {
    rmSync(opts.indexFile, { force: true });
  }
}

/** How many files (blobs and links) the base commit's tree holds. */
async function baseFileCount(repo: string, base: string): Promise<number> {
  const out = (await git(repo, ['ls-tree', '-r', '-z', '--name-only', base])).stdout;
  let n = 0;
  for (let i = 0; i < out.length; i++) if (out.charCodeAt(i) === 0) n++;
  return n;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A file name's bytes as text, or null when they are not UTF-8. */
function utf8Name(name: Buffer): string | null {
  try {
    return UTF8.decode(name);
  } catch {
    return null;
  }
}

/** A name's bytes shown safely: printable ASCII as is, every other byte as \xNN. */
function escapedName(name: Buffer): string {
  let out = '';
  for (const b of name) out += b >= 0x20 && b < 0x7f && b !== 0x5c ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return out;
}

/**
 * Why the worker's files cannot be committed (a name that is not UTF-8, a special file, an
 * oversized file, more files than `budget`), or null. Names are read as bytes (R-31): a name the
 * platform cannot round-trip through a string is refused by its escaped bytes, never stat'ed by a
 * mangled one.
 */
function worktreeProblem(root: string, maxFileBytes: number, budget: number, maxFiles: number): string | null {
  const stack: { rel: string; dir: Buffer }[] = [{ rel: '', dir: Buffer.from(root) }];
  let files = 0;
  while (stack.length > 0) {
    const { rel, dir } = stack.pop()!;
    for (const raw of readdirSync(dir, { encoding: 'buffer' })) {
      const name = utf8Name(raw);
      if (name === null) return `the file name '${rel === '' ? '' : `${rel}/`}${escapedName(raw)}' is not UTF-8: name files in UTF-8`;
      if (rel === '' && name === '.git') continue;
      const p = rel === '' ? name : `${rel}/${name}`;
      const full = Buffer.concat([dir, Buffer.from('/'), raw]);
      const st = lstatSync(full);
      if (st.isDirectory()) stack.push({ rel: p, dir: full });
      else if (st.isFile() || st.isSymbolicLink()) {
        if (++files > budget) return `the candidate adds more than ${maxFiles} files (maxFiles; the base holds ${budget - maxFiles})`;
        if (st.isFile() && st.size > maxFileBytes) return `${p} is ${st.size} bytes, over the limit of ${maxFileBytes} (R-31)`;
      } else return `${p} is not a regular file, directory or symlink (R-31)`;
    }
  }
  return null;
}

/** Per repository: the last of its worktree additions and removals (see oneAtATime). */
const worktreeTurns = new Map<string, Promise<void>>();

/**
 * Run `fn` after the repository's earlier worktree additions and removals. Git's worktree
 * bookkeeping is not safe against itself: `git worktree add` reads every other worktree's admin
 * directory while a concurrent add may be half way through writing its own ("fatal: failed to
 * read worktrees/job-2/commondir", with several integration jobs starting at once), and a removal
 * deletes admin directories. One controller holds a build, so taking turns in this process is
 * enough.
 */
function oneAtATime<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const key = resolve(repo);
  const run = (worktreeTurns.get(key) ?? Promise.resolve()).then(fn);
  worktreeTurns.set(key, run.then(() => undefined, () => undefined));
  return run;
}

/** Remove a worktree or workspace we created (forced; also when half-created). Idempotent. */
export async function removeWorkspace(repo: string, path: string): Promise<void> {
  await oneAtATime(repo, () => clearWorktreePath(repo, path));
}

/** `git worktree prune`: forget worktrees whose directories are gone. */
export async function pruneWorktrees(repo: string): Promise<void> {
  await oneAtATime(repo, () => git(repo, ['worktree', 'prune']));
}

/** Create a clean detached worktree of `commit` at `path`, replacing anything already there. */
export async function addDetachedWorkspace(repo: string, path: string, commit: string): Promise<void> {
  assertSha(commit, 'commit');
  await oneAtATime(repo, async () => {
    await clearWorktreePath(repo, path);
    mkdirSync(dirname(path), { recursive: true });
    await git(repo, ['worktree', 'add', '-q', '--detach', path, commit]);
  });
}

export { assertEffectId };
