/**
 * The hold-out commit: the candidates' result with every test file as the base has it —
 * the tests of the base, the code of the candidates — on which the base's tests run again to name
 * the ones the candidates' code fails. Made in the integrator's repository with a private index,
 * never in a workspace the verified code can reach.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { surfaceMatcher } from '../../commands/test-surface.js';
import { assertSha, git } from './exec.js';
import { commitTree, treeOf } from './repo.js';

interface TreeEntryLine {
  readonly line: string;
  readonly path: string;
}

/** `git ls-tree -r -z` of a commit: each entry's line (as `update-index --index-info` takes it) and path. */
async function entriesOf(repo: string, commit: string): Promise<TreeEntryLine[]> {
  const out = (await git(repo, ['ls-tree', '-r', '-z', '--full-tree', commit])).stdout;
  return out.split('\0').filter((l) => l !== '').map((line) => ({ line, path: line.slice(line.indexOf('\t') + 1) }));
}

/**
 * The hold-out of `result` over `under` (the commit the candidates were applied onto): `result`'s
 * tree where every path the test globs match — in either tree — is replaced by `under`'s (removed
 * when `under` has none), committed on `under` with the fixed identity and `date`. Returns
 * `result` itself when that is its tree already (the candidates changed no test).
 */
export async function holdoutCommit(repo: string, under: string, result: string, tests: readonly string[], date: string): Promise<string> {
  assertSha(under, 'under');
  assertSha(result, 'result');
  const m = surfaceMatcher({ files: [], tests });
  const [base, mine] = await Promise.all([entriesOf(repo, under), entriesOf(repo, result)]);
  const lines = [...mine.filter((e) => !m.isTest(e.path)), ...base.filter((e) => m.isTest(e.path))].map((e) => e.line);
  const dir = mkdtempSync(join(tmpdir(), 'longbuild-holdout-'));
  try {
    const env = { GIT_INDEX_FILE: join(dir, 'index') };
    await git(repo, ['read-tree', '--empty'], { env });
    if (lines.length > 0) await git(repo, ['update-index', '-z', '--index-info'], { env, input: `${lines.join('\0')}\0` });
    const tree = (await git(repo, ['write-tree'], { env })).stdout.trim();
    assertSha(tree, 'tree');
    if (tree === (await treeOf(repo, result))) return result;
    return await commitTree(repo, tree, [under], 'longbuild: hold-out (the base tests on the candidates\' code)', date);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
