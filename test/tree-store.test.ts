import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  it('R-34 for all chunked appends and truncations, the store\'s roots and proofs at every probed size agree with the leaves', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 5 }), fc.nat(), fc.nat(), (chunks, cut, probe) => {
      const store = TreeStore.open(join(dir, `t${n++}.db`));
      const all = leaves(chunks.reduce((a, b) => a + b, 0), n);
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
      // Reopened, it knows its size.
      store.close();
      const again = TreeStore.open(join(dir, `t${n - 1}.db`));
      expect(again.size()).toBe(size);
      again.close();
    }), { numRuns: 40 });
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
