/** Repository setup and object queries. See git.ts for the public API summary. */
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ValidationError } from '../../events/errors.js';
import { assertSha, git } from './exec.js';

export const INITIAL_COMMIT_MESSAGE = 'longbuild: initial commit';

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/**
 * Make `repoDir` a git repository with at least one commit and return its HEAD commit.
 * A new repo gets `git init -b main` and an empty initial commit with the fixed identity and
 * `date` (so its SHA is reproducible); the commit is made with plumbing so a user's staged
 * files are never swept into it. The build directory is added to .git/info/exclude.
 * Refuses a directory that is inside another repository's work tree but not its top level.
 */
export async function ensureRepo(repoDir: string, date: string, opts: { buildDir?: string } = {}): Promise<string> {
  mkdirSync(repoDir, { recursive: true });
  const top = await git(repoDir, ['rev-parse', '--show-toplevel'], { allowFail: true });
  if (top.code === 0) {
    const toplevel = top.stdout.trim();
    if (real(toplevel) !== real(repoDir)) {
      throw new ValidationError(`${repoDir} is inside the git repository ${toplevel} but is not its top level; pass --repo ${toplevel}`);
    }
  } else {
    await git(repoDir, ['init', '-q', '-b', 'main']);
  }
  let head = await readRef(repoDir, 'HEAD');
  if (head === null) {
    const emptyTree = (await git(repoDir, ['hash-object', '-t', 'tree', '-w', '--stdin'], { input: '' })).stdout.trim();
    const commit = (await git(repoDir, ['commit-tree', emptyTree, '-m', INITIAL_COMMIT_MESSAGE], { date })).stdout.trim();
    assertSha(commit, 'initial commit');
    // HEAD points at an unborn branch: create it (zero old value = must not exist yet).
    await git(repoDir, ['update-ref', '-m', 'longbuild: initial commit', 'HEAD', commit, '0'.repeat(commit.length)]);
    head = commit;
  }
  await addExclude(repoDir, opts.buildDir ?? '.longbuild');
  return head;
}

/** Append `/<buildDir>/` to the repository's info/exclude unless it is already there. */
async function addExclude(repoDir: string, buildDir: string): Promise<void> {
  const abs = isAbsolute(buildDir) ? buildDir : join(repoDir, buildDir);
  const rel = relative(resolve(repoDir), resolve(abs));
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return; // outside the work tree: nothing to hide
  const line = `/${rel.split(sep).join('/')}/`;
  const common = (await git(repoDir, ['rev-parse', '--git-common-dir'])).stdout.trim();
  const infoDir = resolve(repoDir, common, 'info');
  mkdirSync(infoDir, { recursive: true });
  const file = join(infoDir, 'exclude');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current.split('\n').includes(line)) return;
  appendFileSync(file, `${current === '' || current.endsWith('\n') ? '' : '\n'}${line}\n`);
}

/** The commit a ref (or any revision) points at, or null when it does not resolve to a commit. */
export async function readRef(repo: string, ref: string): Promise<string | null> {
  if (typeof ref !== 'string' || ref === '' || ref.startsWith('-') || ref.includes('\0')) {
    throw new ValidationError(`invalid ref ${JSON.stringify(ref)}`);
  }
  const r = await git(repo, ['rev-parse', '-q', '--verify', `${ref}^{commit}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

/** The tree object id of a commit. */
export async function treeOf(repo: string, commit: string): Promise<string> {
  assertSha(commit, 'commit');
  return (await git(repo, ['rev-parse', '--verify', `${commit}^{tree}`])).stdout.trim();
}

/** The parent commit ids of a commit, in order. */
export async function commitParents(repo: string, commit: string): Promise<string[]> {
  assertSha(commit, 'commit');
  const line = (await git(repo, ['rev-list', '--parents', '-n', '1', commit])).stdout.trim();
  return line.split(' ').slice(1);
}

/** True when `ancestor` is `descendant` or one of its ancestors. */
export async function isAncestor(repo: string, ancestor: string, descendant: string): Promise<boolean> {
  assertSha(ancestor, 'ancestor');
  assertSha(descendant, 'descendant');
  const r = await git(repo, ['merge-base', '--is-ancestor', ancestor, descendant], { allowFail: true });
  if (r.code === 0) return true;
  if (r.code === 1) return false;
  throw new ValidationError(`cannot compare ${ancestor} and ${descendant}: ${r.stderr.trim()}`);
}
