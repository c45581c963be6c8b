/**
 * The git adapter reads refs and loose objects in-process (issue 16: a git process costs ~10 ms
 * on this machine, and the controller reads the integration ref at every step). Each reader is
 * checked here against git itself, the oracle: for random trees, `looseDiff` equals `git
 * diff-tree -r`, `treeOf`/`commitParents` equal `git rev-parse`/`rev-list`, and a branch read from
 * the files equals `git rev-parse` whether it is loose, packed or missing.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { changedFilesOf, commitParents, git, isValidRefName, listRefFiles, looseBlob, looseDiff, readRef, readRefFiles, treeOf } from '../src/adapters/git/git.js';
import { commitTree, copyLooseObjects, gitCommonDir, objectsBetween } from '../src/adapters/git/repo.js';
import { writeIndexOfTree } from '../src/adapters/git/tree-diff.js';
import { updateOwnRef } from '../src/adapters/git/own-refs.js';

const DATE = '2025-01-01T00:00:00Z';

/** A file of a random tree: a path of up to three segments, its content, and its kind. */
interface FileSpec { readonly path: string; readonly content: string; readonly kind: 'file' | 'exec' | 'link' }

const segment = fc.constantFrom('a', 'b', 'a.txt', 'a-b', 'c', 'src', 'z.js', 'é');
const fileArb: fc.Arbitrary<FileSpec> = fc.record({
  path: fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => s.join('/')),
  content: fc.constantFrom('x\n', 'y\n', '', 'zz\n'),
  kind: fc.constantFrom<FileSpec['kind']>('file', 'file', 'exec', 'link'),
});
/** A consistent set of files: no path is both a file and a directory of another. */
const treeArb = fc.array(fileArb, { maxLength: 8 }).map((files) => {
  const out: FileSpec[] = [];
  for (const f of files) {
    const clash = out.some((o) => o.path === f.path || o.path.startsWith(`${f.path}/`) || f.path.startsWith(`${o.path}/`));
    if (!clash) out.push(f);
  }
  return out;
});

/** Write the files of a random tree into `dir` (regular, executable, symlinks). */
function writeFiles(dir: string, files: readonly FileSpec[]): void {
  for (const f of files) {
    const p = join(dir, f.path);
    mkdirSync(dirname(p), { recursive: true });
    if (f.kind === 'link') symlinkSync(f.content.trim() || 'target', p);
    else {
      writeFileSync(p, f.content);
      if (f.kind === 'exec') chmodSync(p, 0o755);
    }
  }
}

async function commitTree_(repo: string, files: readonly FileSpec[], parent: string | null): Promise<string> {
  const wt = mkdtempSync(join(tmpdir(), 'lb-objects-wt-'));
  writeFiles(wt, files);
  const env = { GIT_DIR: existsSync(join(repo, '.git')) ? join(repo, '.git') : repo, GIT_WORK_TREE: wt, GIT_INDEX_FILE: join(wt, '..', `${wt.split('/').at(-1)}.index`) };
  await git(wt, ['add', '-A', '--', '.'], { env });
  const tree = (await git(wt, ['write-tree'], { env })).stdout.trim();
  rmSync(wt, { recursive: true, force: true });
  return (await git(repo, ['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', 'c'], { date: DATE })).stdout.trim();
}

async function gitDiff(repo: string, a: string, b: string): Promise<{ mode: string; sha: string; path: string; old?: string }[]> {
  const out = (await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', a, b])).stdout.split('\0');
  const changes: { mode: string; sha: string; path: string; old?: string }[] = [];
  for (let i = 0; i + 1 < out.length; i += 2) {
    const meta = out[i]!.split(' ');
    // The base's blob (R-49 tells an added path from a changed one), absent when the path is new.
    changes.push({ mode: meta[1]!, sha: meta[3]!, path: out[i + 1]!, ...(/^:0+$/.test(meta[0]!) ? {} : { old: meta[2]! }) });
  }
  return changes;
}

describe('in-process reads of refs and loose objects, against git itself', () => {
  it('for all pairs of random trees, looseDiff equals `git diff-tree -r` (modes, objects, paths, order), and commits read the same', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '-b', 'main']);
    await fc.assert(
      fc.asyncProperty(treeArb, treeArb, async (before, after) => {
        const a = await commitTree_(repo, before, null);
        const b = await commitTree_(repo, after, a);
        const mine = await looseDiff(repo, a, b);
        expect(mine).not.toBeNull();
        expect(mine).toEqual((await gitDiff(repo, a, b)).map((c) => (c.mode === '000000' ? { ...c, sha: '0'.repeat(40) } : c)));
        expect(await treeOf(repo, b)).toBe((await git(repo, ['rev-parse', `${b}^{tree}`])).stdout.trim());
        expect(await commitParents(repo, b)).toEqual([a]);
        // What the controller asks of a candidate: the paths it changes against its parent.
        const named = (await git(repo, ['diff-tree', '-r', '-z', '--name-only', '--no-commit-id', '--no-renames', b])).stdout.split('\0').filter((p) => p !== '');
        expect(await changedFilesOf(repo, b)).toEqual(named);
        expect(await changedFilesOf(repo, a)).toEqual([]); // a root commit, as git lists it
        for (const c of mine!.filter((x) => x.mode !== '000000')) {
          expect((await looseBlob(repo, c.sha))?.toString('latin1')).toBe((await git(repo, ['cat-file', 'blob', c.sha])).stdout);
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('a packed object is not read in-process: the readers fall back to git and give the same answers', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '-b', 'main']);
    const a = await commitTree_(repo, [{ path: 'x/y', content: 'x\n', kind: 'file' }], null);
    const b = await commitTree_(repo, [{ path: 'x/z', content: 'y\n', kind: 'exec' }], a);
    await git(repo, ['update-ref', 'refs/heads/main', b]);
    await git(repo, ['repack', '-a', '-d', '-q']);
    await git(repo, ['prune-packed']);
    expect(await looseDiff(repo, a, b)).toBeNull();
    expect(await treeOf(repo, b)).toBe((await git(repo, ['rev-parse', `${b}^{tree}`])).stdout.trim());
    expect(await commitParents(repo, b)).toEqual([a]);
  });

  it('a branch read from the files equals `git rev-parse`: loose, packed, missing, and a directory of branches', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '-b', 'main']);
    const a = await commitTree_(repo, [{ path: 'f', content: 'x\n', kind: 'file' }], null);
    const b = await commitTree_(repo, [{ path: 'f', content: 'y\n', kind: 'file' }], a);
    await git(repo, ['update-ref', 'refs/heads/longbuild/integration', a]);
    await git(repo, ['update-ref', 'refs/heads/longbuild/attempts/n.1', b]);
    const common = await gitCommonDir(repo);
    const check = async (ref: string, want: string | null) => {
      expect(readRefFiles(common, ref)).toBe(want);
      expect(await readRef(repo, ref)).toBe(want);
    };
    await check('refs/heads/longbuild/integration', a);
    await check('refs/heads/longbuild/attempts/n.1', b);
    await check('refs/heads/longbuild/missing', null);
    await check('refs/heads/longbuild', null); // a directory of branches is not a branch
    await git(repo, ['pack-refs', '--all']);
    await check('refs/heads/longbuild/integration', a);
    await git(repo, ['update-ref', 'refs/heads/longbuild/integration', b]); // loose again, over the packed line
    await check('refs/heads/longbuild/integration', b);
    await git(repo, ['update-ref', '-d', 'refs/heads/longbuild/attempts/n.1']);
    await check('refs/heads/longbuild/attempts/n.1', null);
  });

  it('for all sequences of branch updates, deletions and `git pack-refs`, the attempt branches listed from the files equal `git for-each-ref` (loose over packed, nested names, none)', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '-b', 'main']);
    const a = await commitTree_(repo, [{ path: 'f', content: 'x\n', kind: 'file' }], null);
    const b = await commitTree_(repo, [{ path: 'f', content: 'y\n', kind: 'file' }], a);
    const common = await gitCommonDir(repo);
    const prefix = 'refs/heads/longbuild/attempts/';
    const names = ['n.1', 'n.2', 'm.1', 'deep/x.1', 'n.10'].map((n) => `${prefix}${n}`).concat(['refs/heads/longbuild/integration', 'refs/heads/longbuild/attemptsX']);
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), ref: fc.constantFrom(...names), to: fc.constantFrom(a, b) }),
      fc.record({ kind: fc.constant('delete' as const), ref: fc.constantFrom(...names) }),
      fc.record({ kind: fc.constant('pack' as const) }),
    );
    const byGit = async (): Promise<[string, string][]> => (await git(repo, ['for-each-ref', '--format=%(refname) %(objectname)', prefix])).stdout.split('\n').filter(Boolean).map((l) => l.split(' ') as [string, string]);
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 8 }), async (ops) => {
        for (const ref of names) await git(repo, ['update-ref', '-d', ref], { allowFail: true });
        for (const o of ops) {
          if (o.kind === 'set') await git(repo, ['update-ref', o.ref, o.to]);
          else if (o.kind === 'delete') await git(repo, ['update-ref', '-d', o.ref], { allowFail: true });
          else await git(repo, ['pack-refs', '--all']);
          expect([...listRefFiles(common, prefix)!]).toEqual(await byGit());
        }
      }),
      { numRuns: 15 },
    );
    // What git would warn about is left to git: a lock file, a ref that is not an object id.
    mkdirSync(join(common, prefix), { recursive: true });
    writeFileSync(join(common, prefix, 'n.1.lock'), '');
    expect(listRefFiles(common, prefix)).toBeUndefined();
    rmSync(join(common, prefix, 'n.1.lock'));
    writeFileSync(join(common, prefix, 'odd.1'), 'ref: refs/heads/main\n');
    expect(listRefFiles(common, prefix)).toBeUndefined();
  }, 120_000);

  it('ref names are judged as `git check-ref-format` judges them', async () => {
    const names = ['refs/heads/a', 'refs/heads/a/b.c', 'refs/heads/.a', 'refs/heads/a.lock', 'refs/heads/a..b', 'refs/heads/a b', 'refs/heads/a~1', 'refs/heads/a^',
      'refs/heads/a:b', 'refs/heads/a?', 'refs/heads/a*', 'refs/heads/a[', 'refs/heads/a\\b', 'refs/heads/a@{b', 'refs/heads/a.', 'refs/heads//a', 'refs/heads/a/',
      'refs/heads/@', 'refs/heads/a@b', 'refs/heads/é', 'refs/heads/a\tb', 'refs/heads/longbuild/attempts/x.1'];
    const cwd = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    for (const n of names) {
      const byGit = (await git(cwd, ['check-ref-format', n], { allowFail: true })).code === 0;
      expect(isValidRefName(n), n).toBe(byGit);
    }
  });

  it('a ref update in the integrator\'s own (bare) repository is a compare-and-set git agrees with: it sees git\'s lock, and git sees its result', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '--bare', '--template=', '-b', 'main']);
    const a = await commitTree_(repo, [{ path: 'f', content: 'x\n', kind: 'file' }], null);
    const b = await commitTree_(repo, [{ path: 'f', content: 'y\n', kind: 'file' }], a);
    const ref = 'refs/heads/longbuild/integration';
    const byGit = async () => (await git(repo, ['rev-parse', '-q', '--verify', ref], { allowFail: true })).stdout.trim() || null;
    expect(await updateOwnRef(repo, ref, a, null)).toBe('updated');
    expect(await byGit()).toBe(a);
    expect(await updateOwnRef(repo, ref, b, null)).toEqual({ conflict: a }); // must not exist: it does
    expect(await updateOwnRef(repo, ref, b, b)).toEqual({ conflict: a });
    expect(await byGit()).toBe(a);
    expect(await updateOwnRef(repo, ref, b, a)).toBe('updated');
    expect(await byGit()).toBe(b);
    // A lock git holds (a writer in the middle of an update) is never overridden: git is asked instead.
    writeFileSync(join(repo, `${ref}.lock`), '');
    expect(await updateOwnRef(repo, ref, a, b)).toBeNull();
    rmSync(join(repo, `${ref}.lock`));
    // Deleting: a loose ref is removed; one only in packed-refs is left to git.
    expect(await updateOwnRef(repo, ref, null, b)).toBe('updated');
    expect(await byGit()).toBeNull();
    await git(repo, ['update-ref', ref, a]);
    await git(repo, ['pack-refs', '--all']);
    expect(await updateOwnRef(repo, ref, null)).toBeNull();
    expect(await updateOwnRef(repo, ref, b, a)).toBe('updated'); // a loose value over the packed line
    expect(await byGit()).toBe(b);
    // A repository with a work tree (reflogs) is always left to git.
    const wt = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(wt, ['init', '-q', '-b', 'main']);
    expect(await updateOwnRef(wt, ref, a)).toBeNull();
  });

  it('for all trees, parents, messages and dates, a commit written in-process is byte for byte the one `git commit-tree` writes', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '--bare', '--template=', '-b', 'main']);
    const a = await commitTree(repo, (await git(repo, ['hash-object', '-t', 'tree', '-w', '--stdin'], { input: '' })).stdout.trim(), [], 'longbuild: initial commit', DATE);
    await fc.assert(
      fc.asyncProperty(treeArb, fc.stringMatching(/^[a-z0-9:. ()-]{0,40}[a-z0-9)]$/), fc.integer({ min: 1_000_000_000, max: 4_000_000_000 }), fc.boolean(), async (files, message, seconds, withParent) => {
        const tree = (await git(repo, ['rev-parse', `${await commitTreeOf(repo, files)}^{tree}`])).stdout.trim();
        const date = new Date(seconds * 1000).toISOString();
        const parents = withParent ? [a] : [];
        const mine = await commitTree(repo, tree, parents, message, date);
        const theirs = (await git(repo, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', message], { date })).stdout.trim();
        expect(mine).toBe(theirs);
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('the objects a new head adds, copied as loose files, make a repository git finds complete (fsck, the head\'s whole tree readable)', async () => {
    const from = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(from, ['init', '-q', '--bare', '--template=', '-b', 'main']);
    const to = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(to, ['init', '-q', '-b', 'main']);
    const base = await commitTree(from, (await git(from, ['hash-object', '-t', 'tree', '-w', '--stdin'], { input: '' })).stdout.trim(), [], 'base', DATE);
    await git(to, ['fetch', '-q', '--no-write-fetch-head', from, `${base}:refs/heads/other`]);
    let head = base;
    for (const files of fc.sample(treeArb, { numRuns: 4, seed: 7 })) {
      const next = await commitTreeOf(from, files, head);
      const ids = await objectsBetween(from, head, next);
      expect(ids).not.toBeNull();
      expect(await copyLooseObjects(from, to, ids!)).toBe(true);
      await git(to, ['update-ref', 'refs/heads/main', next]);
      head = next;
    }
    expect((await git(to, ['fsck', '--no-dangling', '--connectivity-only'], { allowFail: true })).code).toBe(0);
    expect((await git(to, ['ls-tree', '-r', 'main'])).stdout).toBe((await git(from, ['ls-tree', '-r', head])).stdout);
  });
});

describe('an index written in-process', () => {
  it('for all base trees and work trees, `add -A` + `write-tree` on an index written in-process gives the tree it gives after `git read-tree` (deletions, modes, ignored files kept when tracked)', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-objects-'));
    await git(repo, ['init', '-q', '--bare', '--template=', '-b', 'main']);
    await fc.assert(
      fc.asyncProperty(treeArb, treeArb, fc.boolean(), async (base, now, ignoreSome) => {
        const commit = await commitTree_(repo, base, null);
        const tree = (await git(repo, ['rev-parse', `${commit}^{tree}`])).stdout.trim();
        const wt = mkdtempSync(join(tmpdir(), 'lb-objects-wt-'));
        writeFiles(wt, now);
        if (ignoreSome && !now.some((f) => f.path === '.gitignore' || f.path.startsWith('.gitignore/'))) writeFileSync(join(wt, '.gitignore'), 'a\n*.js\n');
        const writeTree = async (index: string, mine: boolean) => {
          const env = { GIT_DIR: repo, GIT_WORK_TREE: wt, GIT_INDEX_FILE: index };
          if (mine) expect(await writeIndexOfTree(repo, tree, index)).toBe(true);
          else await git(wt, ['read-tree', commit], { env });
          await git(wt, ['add', '-A', '--', '.'], { env });
          return (await git(wt, ['write-tree'], { env })).stdout.trim();
        };
        const dir = mkdtempSync(join(tmpdir(), 'lb-objects-ix-'));
        expect(await writeTree(join(dir, 'mine'), true)).toBe(await writeTree(join(dir, 'git'), false));
        rmSync(wt, { recursive: true, force: true });
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});

/** A commit of these files (in a fresh index) on `parent`, in any repository. */
async function commitTreeOf(repo: string, files: readonly FileSpec[], parent: string | null = null): Promise<string> {
  return commitTree_(repo, files, parent);
}
