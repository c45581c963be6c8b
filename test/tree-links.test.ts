/**
 * R-31 symlink chains: for all small trees of directories and links, `linkEscape` says a link
 * leaves the tree exactly when the filesystem says so. The oracle is independent: each tree is
 * written to disk with real symlinks and every link resolved by Python's `os.path.realpath` walk
 * (`posixpath._joinrealpath`, non-strict: it reports a loop), one Python process for all.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { linkEscape } from '../src/commands/tree-links.js';
import { hasPython } from './support/python.js';

const DIRS = ['a', 'a/b', 'c'];
const NAMES = ['l1', 'l2', 'l3'];
const component = fc.constantFrom('..', '.', 'a', 'b', 'c', ...NAMES);
const target = fc.oneof(
  { weight: 12, arbitrary: fc.array(component, { minLength: 1, maxLength: 5 }).map((cs) => cs.join('/')) },
  { weight: 1, arbitrary: fc.constant('/etc') },
);
/** A tree: links at distinct paths among the directories (git has no entries under a link). */
const tree = fc.uniqueArray(fc.tuple(fc.constantFrom('', ...DIRS), fc.constantFrom(...NAMES), target), { minLength: 1, maxLength: 6, selector: ([d, n]) => `${d}/${n}` })
  .map((ls) => new Map(ls.map(([d, n, t]) => [d === '' ? n : `${d}/${n}`, t] as [string, string])));

const python = hasPython('os');

describe('symlink chains are judged where they end (R-31)', () => {
  it.runIf(python || process.env.CI === 'true')('R-31 (property) for all trees of directories and links: a link is refused exactly when the filesystem resolves it outside the tree (or loops), Python\'s realpath as the oracle', () => {
    const seed = Number(process.env.LONGBUILD_PROPERTY_SEED ?? Date.now() % 1_000_000);
    const trees = fc.sample(tree, { numRuns: 300, seed });
    const base = realpathSync(mkdtempSync(join(tmpdir(), 'lb-links-')));
    const cases: { root: string; link: string }[] = [];
    trees.forEach((links, i) => {
      // Each tree sits three directories deep, so a way out has somewhere to lead.
      const root = join(base, `t${i}`, 'x', 'y', 'root');
      for (const d of DIRS) mkdirSync(join(root, d), { recursive: true });
      for (const [p, t] of links) symlinkSync(t, join(root, p));
      for (const p of links.keys()) cases.push({ root, link: p });
    });
    const script = [
      'import json, os, posixpath, sys',
      'out = []',
      'for c in json.load(sys.stdin):',
      '    p = os.path.join(c["root"], c["link"])',
      // realpath's own walk, non-strict (a missing component is taken as written, as linkEscape does); ok is False on a loop.
      '    r, ok = posixpath._joinrealpath("", p, False, {})',
      '    if not ok:',
      '        out.append("loop"); continue',
      '    out.append("inside" if r == c["root"] or r.startswith(c["root"] + "/") else "outside")',
      'print(json.dumps(out))',
    ].join('\n');
    const oracle = JSON.parse(execFileSync('python3', ['-c', script], { input: JSON.stringify(cases), encoding: 'utf8' })) as string[];
    let k = 0;
    let outside = 0;
    trees.forEach((links) => {
      for (const p of links.keys()) {
        const want = oracle[k++]!;
        const got = linkEscape(links, p);
        if ((got !== null) !== (want !== 'inside')) {
          throw new Error(`seed ${seed} (rerun with LONGBUILD_PROPERTY_SEED=${seed}): link '${p}' in ${JSON.stringify([...links])}: the filesystem says ${want}, linkEscape says ${got ?? 'inside'}`);
        }
        if (want !== 'inside') outside++;
      }
    });
    // Not vacuous: both answers occur, chains included.
    expect(outside).toBeGreaterThan(20);
    expect(k - outside).toBeGreaterThan(20);
  });

  it('R-31 the chain of the issue, a loop, and a link through an absolute one', () => {
    expect(linkEscape(new Map([['d/up', '..'], ['gp', 'd/up/../..']]), 'gp')).toBe('it leads above the tree through 1 more link ("d/up/../..")');
    expect(linkEscape(new Map([['d/up', '..'], ['gp', 'd/up/../..']]), 'd/up')).toBeNull();
    expect(linkEscape(new Map([['a', 'b'], ['b', 'a']]), 'a')).toMatch(/loops/);
    expect(linkEscape(new Map([['x', '/etc'], ['y', 'x/passwd']]), 'y')).toBe('it leads through \'x\' to the absolute path "/etc"');
  });
});
