/** Trees read from loose objects where they can be (git is asked otherwise): what a commit changes, an index of a tree. */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { assertSha, git } from './exec.js';
import { HEX40 } from './ref-files.js';
import { gitCommonDir, isTree, looseCommit, looseTree } from './repo.js';

/** One path a commit changes against another, as `git diff-tree -r` reports it: the new mode ('000000': deleted) and object. */
export interface TreeChange {
  readonly mode: string;
  readonly sha: string;
  readonly path: string;
  /** The blob the base had at the path (absent: the base had none there, the change adds it). */
  readonly old?: string;
}

/**
 * `git diff-tree -r --no-renames BASE COMMIT` read from loose objects, in git's order (full paths
 * byte-wise), or null when an object it needs is not loose (git is asked then).
 */
export async function looseDiff(repo: string, base: string, commit: string): Promise<TreeChange[] | null> {
  const a = await looseCommit(repo, base);
  const b = await looseCommit(repo, commit);
  return a === null || b === null ? null : treeChanges(repo, a.tree, b.tree);
}

/** `looseDiff` of two trees. */
async function treeChanges(repo: string, aTree: string, bTree: string): Promise<TreeChange[] | null> {
  const out: TreeChange[] = [];
  const ok = diffTrees(await gitCommonDir(repo), aTree, bTree, '', out);
  return ok ? out.sort((x, y) => Buffer.compare(Buffer.from(x.path), Buffer.from(y.path))) : null;
}

/**
 * The paths a commit changes against its parent, as `git diff-tree -r -z --name-only --no-renames
 * COMMIT` lists them (nothing for a root commit or a merge): read from loose objects for a commit
 * with one parent (the host's own), else asked of git.
 */
export async function changedFilesOf(repo: string, commit: string): Promise<string[]> {
  assertSha(commit, 'commit');
  const c = await looseCommit(repo, commit);
  const parent = c !== null && c.parents.length === 1 ? await looseCommit(repo, c.parents[0]!) : null;
  const changed = parent !== null ? await treeChanges(repo, parent.tree, c!.tree) : null;
  if (changed !== null) return changed.map((change) => change.path);
  const out = (await git(repo, ['diff-tree', '-r', '-z', '--name-only', '--no-commit-id', '--no-renames', commit])).stdout;
  return out.split('\0').filter((p) => p !== '');
}

/** Every blob under a tree as added (or, with `deleted`, as removed) changes; false when an object is not loose. */
function listTree(common: string, id: string, prefix: string, deleted: boolean, out: TreeChange[]): boolean {
  const t = looseTree(common, id);
  if (t === null) return false;
  for (const [name, e] of t) {
    const path = `${prefix}${name}`;
    if (isTree(e)) {
      if (!listTree(common, e.sha, `${path}/`, deleted, out)) return false;
    } else out.push(deleted ? { mode: '000000', sha: '0'.repeat(40), path, old: e.sha } : { mode: e.mode, sha: e.sha, path });
  }
  return true;
}

function diffTrees(common: string, aId: string, bId: string, prefix: string, out: TreeChange[]): boolean {
  if (aId === bId) return true;
  const a = looseTree(common, aId);
  const b = looseTree(common, bId);
  if (a === null || b === null) return false;
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(name);
    const y = b.get(name);
    const path = `${prefix}${name}`;
    if (x !== undefined && y !== undefined && x.mode === y.mode && x.sha === y.sha) continue;
    if (isTree(x) && isTree(y)) {
      if (!diffTrees(common, x!.sha, y!.sha, `${path}/`, out)) return false;
      continue;
    }
    if (isTree(x) && !listTree(common, x!.sha, `${path}/`, true, out)) return false;
    if (x !== undefined && !isTree(x) && (y === undefined || isTree(y))) out.push({ mode: '000000', sha: '0'.repeat(40), path, old: x.sha });
    if (isTree(y) && !listTree(common, y!.sha, `${path}/`, false, out)) return false;
    if (y !== undefined && !isTree(y)) out.push({ mode: y.mode, sha: y.sha, path, ...(x !== undefined && !isTree(x) ? { old: x.sha } : {}) });
  }
  return true;
}

/**
 * `git read-tree TREE` into a new index file, in-process: every blob of the tree (recursively,
 * from loose objects) as a stage-0 entry with empty stat data, which git treats as it treats a
 * freshly read tree (it compares contents on the next `add`). False when an object is not loose
 * (then git reads the tree itself). Index format v2, no extensions.
 */
export async function writeIndexOfTree(repo: string, tree: string, indexFile: string): Promise<boolean> {
  const common = await gitCommonDir(repo);
  if (!HEX40.test(tree)) return false;
  const entries: TreeChange[] = [];
  if (!listTree(common, tree, '', false, entries)) return false;
  const paths = entries.map((e) => ({ ...e, bytes: Buffer.from(e.path, 'utf8') })).sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  const parts: Buffer[] = [];
  const header = Buffer.alloc(12);
  header.write('DIRC', 0, 'latin1');
  header.writeUInt32BE(2, 4);
  header.writeUInt32BE(paths.length, 8);
  parts.push(header);
  for (const e of paths) {
    const size = (62 + e.bytes.length + 8) & ~7;
    const entry = Buffer.alloc(size); // stat data zero, padding NUL
    entry.writeUInt32BE(parseInt(e.mode, 8), 24);
    Buffer.from(e.sha, 'hex').copy(entry, 40);
    entry.writeUInt16BE(Math.min(e.bytes.length, 0xfff), 60);
    e.bytes.copy(entry, 62);
    parts.push(entry);
  }
  const body = Buffer.concat(parts);
  writeFileSync(indexFile, Buffer.concat([body, createHash('sha1').update(body).digest()]), { mode: 0o600 });
  return true;
}
