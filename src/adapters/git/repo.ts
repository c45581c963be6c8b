/** Repository setup and object queries (diffs of trees: tree-diff.ts). See git.ts for the public API summary. */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { deflateSync, inflateSync } from 'node:zlib';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ValidationError } from '../../events/errors.js';
import { assertSha, git, gitDate, isValidRefName, LONGBUILD_EMAIL, LONGBUILD_NAME } from './exec.js';
import { HEX40, readRefFiles } from './ref-files.js';

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
    const commit = await commitTree(repoDir, emptyTree, [], INITIAL_COMMIT_MESSAGE, date);
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
  const infoDir = join(await gitCommonDir(repoDir), 'info');
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
  // A branch is read from the files git keeps it in, without a git process (the controller reads
  // the integration ref at every step); anything else, or anything unusual there, asks git.
  if (ref.startsWith('refs/heads/') && isValidRefName(ref)) {
    const found = readRefFiles(await gitCommonDir(repo), ref);
    if (found !== undefined) return found;
  }
  const r = await git(repo, ['rev-parse', '-q', '--verify', `${ref}^{commit}`], { allowFail: true });
  return r.code === 0 ? r.stdout.trim() : null;
}

const commonDirs = new Map<string, string>();

/**
 * The repository's common git directory (where its branches live), once per repository. Where the
 * directory's layout says it as git's discovery would — a main worktree's `.git` directory (no
 * `commondir` in it), or the directory itself when it is a bare repository (`HEAD`, `objects/`,
 * `refs/`, no `.git`) — no git is spawned (each spawn cost a `run` or `step` ~5–10 ms at start);
 * anything else (a linked worktree's `.git` file, a subdirectory of a work tree) is asked of git.
 */
export async function gitCommonDir(repo: string): Promise<string> {
  const key = resolve(repo);
  let dir = commonDirs.get(key);
  if (dir === undefined) {
    dir = commonDirByLayout(key) ?? resolve(repo, (await git(repo, ['rev-parse', '--git-common-dir'])).stdout.trim());
    commonDirs.set(key, dir);
  }
  return dir;
}

function commonDirByLayout(dir: string): string | null {
  const isDir = (p: string): boolean => statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
  const dotGit = join(dir, '.git');
  if (existsSync(dotGit)) return isDir(dotGit) && !existsSync(join(dotGit, 'commondir')) ? dotGit : null;
  const bare = statSync(join(dir, 'HEAD'), { throwIfNoEntry: false })?.isFile() === true && isDir(join(dir, 'objects')) && isDir(join(dir, 'refs')) && !existsSync(join(dir, 'commondir'));
  return bare ? dir : null;
}

/** The tree object id of a commit. */
export async function treeOf(repo: string, commit: string): Promise<string> {
  assertSha(commit, 'commit');
  const loose = await looseCommit(repo, commit);
  if (loose !== null) return loose.tree;
  return (await git(repo, ['rev-parse', '--verify', `${commit}^{tree}`])).stdout.trim();
}

/** The parent commit ids of a commit, in order. */
export async function commitParents(repo: string, commit: string): Promise<string[]> {
  assertSha(commit, 'commit');
  const loose = await looseCommit(repo, commit);
  if (loose !== null) return [...loose.parents];
  const line = (await git(repo, ['rev-list', '--parents', '-n', '1', commit])).stdout.trim();
  return line.split(' ').slice(1);
}

/**
 * A commit's tree and parents read from its loose object file, without a git process (every
 * commit the host makes is loose: gc is off), or null — packed, elsewhere, or not a SHA-1
 * repository — and git is asked. The object's bytes are checked against its id first.
 */
export async function looseCommit(repo: string, commit: string): Promise<{ tree: string; parents: readonly string[] } | null> {
  if (!HEX40.test(commit)) return null;
  const o = readLooseObject(await gitCommonDir(repo), commit);
  if (o === null || o.type !== 'commit') return null;
  const text = o.body.toString('latin1');
  const header = text.slice(0, Math.max(0, text.indexOf('\n\n')));
  const tree = /^tree ([0-9a-f]{40})$/m.exec(header)?.[1];
  if (tree === undefined) return null;
  const parents = [...header.matchAll(/^parent ([0-9a-f]{40})$/gm)].map((m) => m[1]!);
  return { tree, parents };
}

export interface TreeEntry { readonly mode: string; readonly sha: string }

/** The entries of a loose tree object by name (modes as git prints them, six digits), or null. */
export function looseTree(common: string, id: string): Map<string, TreeEntry> | null {
  const o = readLooseObject(common, id);
  if (o === null || o.type !== 'tree') return null;
  const entries = new Map<string, TreeEntry>();
  const b = o.body;
  for (let i = 0; i < b.length;) {
    const space = b.indexOf(0x20, i);
    const nul = b.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > b.length) return null;
    entries.set(b.subarray(space + 1, nul).toString('utf8'), { mode: b.subarray(i, space).toString('latin1').padStart(6, '0'), sha: b.subarray(nul + 1, nul + 21).toString('hex') });
    i = nul + 21;
  }
  return entries;
}

export const isTree = (e: TreeEntry | undefined): boolean => e?.mode === '040000';

/** A loose blob's bytes (checked against its id), or null when it is not a loose blob. */
export async function looseBlob(repo: string, id: string): Promise<Buffer | null> {
  if (!HEX40.test(id)) return null;
  const o = readLooseObject(await gitCommonDir(repo), id);
  return o !== null && o.type === 'blob' ? o.body : null;
}

/**
 * Write a loose object (zlib-deflated `<type> <size>\0<body>`, named by its SHA-1) the way git
 * does: to a temporary file, then renamed into place; an object already there is kept. Returns
 * its id, or null when the repository is not one this can write (not SHA-1 loose objects).
 */
export async function writeLooseObject(repo: string, type: 'blob' | 'tree' | 'commit', body: Buffer): Promise<string | null> {
  const common = await gitCommonDir(repo);
  if (!isPlainSha1Repo(common)) return null;
  const raw = Buffer.concat([Buffer.from(`${type} ${body.length}\0`, 'latin1'), body]);
  const id = createHash('sha1').update(raw).digest('hex');
  const dir = join(common, 'objects', id.slice(0, 2));
  const path = join(dir, id.slice(2));
  if (existsSync(path)) return id;
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, `tmp_obj_${process.pid}_${Math.random().toString(36).slice(2)}`);
  writeFileSync(tmp, deflateSync(raw), { mode: 0o444 });
  renameSync(tmp, path);
  return id;
}

/**
 * `git commit-tree TREE [-p PARENT]... -m MESSAGE` with the fixed identity and date, as a loose
 * object written in-process (the same bytes git writes, so the same id); git itself where this
 * cannot write. Only for longbuild's own messages (one line, no trailing white space).
 */
export async function commitTree(repo: string, tree: string, parents: readonly string[], message: string, date: string): Promise<string> {
  assertSha(tree, 'tree');
  parents.forEach((p) => assertSha(p, 'parent'));
  if (HEX40.test(tree) && /^[^\n\r]*\S$/.test(message)) {
    const who = `${LONGBUILD_NAME} <${LONGBUILD_EMAIL}> ${gitDate(date)}`;
    const body = `tree ${tree}\n${parents.map((p) => `parent ${p}\n`).join('')}author ${who}\ncommitter ${who}\n\n${message}\n`;
    const id = await writeLooseObject(repo, 'commit', Buffer.from(body, 'utf8'));
    if (id !== null) return id;
  }
  const out = (await git(repo, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', message], { date })).stdout.trim();
  assertSha(out, 'commit');
  return out;
}

/** A repository whose objects this module may read and write itself: SHA-1 objects, the files ref backend. */
function isPlainSha1Repo(common: string): boolean {
  let config = '';
  try {
    config = readFileSync(join(common, 'config'), 'utf8');
  } catch {
    return false;
  }
  return !/^\s*objectformat\s*=|^\s*refstorage\s*=/im.test(config) && !existsSync(join(common, 'reftable'));
}

/**
 * The objects `newHead` adds to `oldHead` when it descends from it along first parents (the
 * integration head's history is a line): the commits in between, and every tree and blob each
 * adds to its parent's tree; `oldHead` null: the whole history, down to its root commit. Null
 * when one of them is not loose in `repo`, `oldHead` is not an ancestor within `limit` commits,
 * a merge is met, or there are more than `maxObjects` (git is then asked to move them).
 */
export async function objectsBetween(repo: string, oldHead: string | null, newHead: string, limit = 256, maxObjects = Infinity): Promise<string[] | null> {
  const common = await gitCommonDir(repo);
  const out: string[] = [];
  // Each commit and tree is read once: a commit's parent, and its tree, are the next step's own.
  const trees = new Map<string, Map<string, TreeEntry> | null>();
  const tree = (id: string): Map<string, TreeEntry> | null => {
    if (!trees.has(id)) trees.set(id, looseTree(common, id));
    return trees.get(id)!;
  };
  let commit = limit > 0 ? await looseCommit(repo, newHead) : null;
  for (let c: string | null = newHead, n = 0; c !== oldHead; n++) {
    if (c === null) return null; // the root reached, and oldHead was not on the way
    if (commit === null || commit.parents.length > 1) return null;
    const parentId: string | null = commit.parents[0] ?? null;
    const parent = parentId === null ? null : await looseCommit(repo, parentId);
    if (parentId !== null && parent === null && parentId !== oldHead) return null;
    out.push(c);
    if (!newTreeObjects(common, tree, parent?.tree ?? null, commit.tree, out) || out.length > maxObjects) return null;
    c = parentId;
    commit = n + 1 < limit ? parent : null;
  }
  return [...new Set(out)];
}

/** Trees and blobs in tree `b` that tree `a` (null: none) does not have at the same place; false when one is not loose. */
function newTreeObjects(common: string, tree: (id: string) => Map<string, TreeEntry> | null, aId: string | null, bId: string, out: string[]): boolean {
  if (aId === bId) return true;
  const b = tree(bId);
  if (b === null) return false;
  const a = aId === null ? new Map<string, TreeEntry>() : tree(aId);
  if (a === null) return false;
  out.push(bId);
  for (const [name, e] of b) {
    const old = a.get(name);
    if (old !== undefined && old.sha === e.sha) continue;
    if (e.mode === '160000') continue; // a gitlink names a commit of another repository
    if (isTree(e)) {
      if (!newTreeObjects(common, tree, isTree(old) ? old!.sha : null, e.sha, out)) return false;
    } else {
      if (readLooseObject(common, e.sha) === null) return false;
      out.push(e.sha);
    }
  }
  return true;
}

/**
 * Copy loose objects from one repository into another, byte for byte (their files are named by
 * their ids; tmp + rename). False when one is not loose in `from` (nothing half-copied matters:
 * an object is only ever complete or absent).
 */
export async function copyLooseObjects(from: string, to: string, ids: readonly string[]): Promise<boolean> {
  const src = await gitCommonDir(from);
  const dst = await gitCommonDir(to);
  if (!isPlainSha1Repo(dst)) return false;
  for (const id of ids) {
    const target = join(dst, 'objects', id.slice(0, 2), id.slice(2));
    if (existsSync(target)) continue;
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(src, 'objects', id.slice(0, 2), id.slice(2)));
    } catch {
      return false;
    }
    mkdirSync(dirname(target), { recursive: true });
    const tmp = `${dirname(target)}/tmp_obj_${process.pid}_${Math.random().toString(36).slice(2)}`;
    writeFileSync(tmp, bytes, { mode: 0o444 });
    renameSync(tmp, target);
  }
  return true;
}

/** True when the repository has the object as a loose file (a packed one is not looked for). */
export async function hasLooseObject(repo: string, id: string): Promise<boolean> {
  return HEX40.test(id) && existsSync(join(await gitCommonDir(repo), 'objects', id.slice(0, 2), id.slice(2)));
}

/** A loose object's type and body when its file exists and its bytes hash to its id; else null. */
export function readLooseObject(commonDir: string, id: string): { type: string; body: Buffer } | null {
  let raw: Buffer;
  try {
    raw = inflateSync(readFileSync(join(commonDir, 'objects', id.slice(0, 2), id.slice(2))));
  } catch {
    return null;
  }
  if (createHash('sha1').update(raw).digest('hex') !== id) return null;
  const nul = raw.indexOf(0);
  if (nul < 0) return null;
  const [type, size] = raw.subarray(0, nul).toString('latin1').split(' ');
  const body = raw.subarray(nul + 1);
  return type !== undefined && Number(size) === body.length ? { type, body } : null;
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
