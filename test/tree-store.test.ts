import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { Frontier, arraySource, consistencyProof, hashLeaves, inclusionProof, leafHash, treeRoot, verifyConsistency, verifyInclusion } from '../src/events/merkle.js';
import { TreeStore } from '../src/adapters/transparency/tree-store.js';

// The build's tree store (tiles of 256 leaves, stored subtrees) and the in-memory frontier, each
// checked against hashLeaves over the same leaves (itself checked against the RFC 6962 oracle).

const dir = mkdtempSync(join(tmpdir(), 'lb-tree-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const leaves = (count: number, salt: number) => Array.from({ length: count }, (_, i) => leafHash(Buffer.from(`${salt}:${i}`)));

describe('R-34 the tree store and the frontier', () => {
  it('R-34 for all chunked appends and truncations, the store\'s roots and proofs at every probed size agree with the leaves, whether it keeps complete tiles or reads them from the log', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 5 }), fc.nat(), fc.nat(), fc.boolean(), (chunks, cut, probe, fromLog) => {
      const all = leaves(chunks.reduce((a, b) => a + b, 0), n + 1);
      // The log's leaves (decision 0034): a store given them keeps a complete tile as its subtree's hash only.
      const logLeaves = fromLog ? (s: number, e: number) => all.slice(s, e) : undefined;
      const store = TreeStore.open(join(dir, `t${n++}.db`), logLeaves);
      let at = 0;
      for (const c of chunks) {
        store.append(all.slice(at, at + c));
        at += c;
      }
      const keep = cut % (all.length + 1);
      store.truncate(keep);
      store.append(all.slice(keep, keep + 300));
      const size = Math.min(all.length, keep + 300);
      expect(store.size()).toBe(size);
      const src = store.source();
      const s = 1 + (probe % size);
      expect(treeRoot(src, s).equals(hashLeaves(all.slice(0, s)))).toBe(true);
      expect(verifyInclusion(s - 1, size, all[s - 1]!, inclusionProof(src, s - 1, size), hashLeaves(all.slice(0, size)))).toBe(true);
      expect(verifyConsistency(s, size, hashLeaves(all.slice(0, s)), hashLeaves(all.slice(0, size)), consistencyProof(src, s, size))).toBe(true);
      // Reopened, it knows its size and proves the same.
      store.close();
      const again = TreeStore.open(join(dir, `t${n - 1}.db`), logLeaves);
      expect(again.size()).toBe(size);
      expect(treeRoot(again.source(), size).equals(hashLeaves(all.slice(0, size)))).toBe(true);
      again.close();
    }), { numRuns: 60 });
  });

  it('a store that keeps complete tiles in the log stores 0 bytes of their leaves; opened without the log, a proof that needs them is refused in one line', () => {
    const path = join(dir, `t${n++}.db`);
    const all = leaves(600, n);
    const store = TreeStore.open(path, (s, e) => all.slice(s, e));
    store.append(all);
    expect(store.leaves(0, 600)).toEqual(all);
    store.close();
    // Reopened when its last tile is complete (kept in the log), it counts that tile whole.
    const exact = join(dir, `t${n++}.db`);
    const whole = TreeStore.open(exact, (s, e) => all.slice(s, e));
    whole.append(all.slice(0, 512));
    whole.close();
    const reopened = TreeStore.open(exact, (s, e) => all.slice(s, e));
    expect(reopened.size()).toBe(512);
    expect(treeRoot(reopened.source(), 512).equals(hashLeaves(all.slice(0, 512)))).toBe(true);
    reopened.append(all.slice(512, 600));
    expect(treeRoot(reopened.source(), 600).equals(hashLeaves(all))).toBe(true);
    reopened.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare('SELECT idx, length(hashes) AS bytes FROM tiles ORDER BY idx').all()).toEqual([{ idx: 0, bytes: 0 }, { idx: 1, bytes: 0 }, { idx: 2, bytes: 88 * 32 }]);
    db.close();
    const blind = TreeStore.open(path);
    expect(blind.size()).toBe(600);
    expect(treeRoot(blind.source(), 512).equals(hashLeaves(all.slice(0, 512)))).toBe(true); // two stored subtrees
    expect(() => treeRoot(blind.source(), 100)).toThrow(/^corrupt log at position 1: .*\.db keeps the leaves of this tile in the log, which cannot be read here; delete it \(a cache\) and run the command again/);
    blind.close();
    // A log shorter than the tree: refused naming the position where the log ends.
    const cut = TreeStore.open(path, (s, e) => all.slice(s, Math.min(e, 300)));
    expect(() => cut.leaves(256, 512)).toThrow(/^corrupt log at position 301: the log ends before leaf 512/);
    cut.close();
  });

  it('R-34 for all sizes, a frontier taken at k and extended leaf by leaf has the root of the whole tree at every size', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 600 }), fc.nat(), (count, k0) => {
      const all = leaves(count, count);
      const k = k0 % (count + 1);
      const f = Frontier.at(arraySource(all), k);
      expect(f.root().equals(hashLeaves(all.slice(0, k)))).toBe(true);
      for (let i = k; i < count; i++) {
        f.push(all[i]!);
        if (i % 37 === 0 || i === count - 1) expect(f.root().equals(hashLeaves(all.slice(0, i + 1)))).toBe(true);
      }
    }), { numRuns: 100 });
  });
});
