import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_ROOT, arraySource, consistencyProof, hashLeaves, inclusionProof, leafHash, treeRoot, verifyConsistency, verifyInclusion, type Hash, type TreeSource,
} from '../src/events/merkle.js';

// Interop vectors: transparency-dev/merkle testdata (Apache-2.0, commit 417fb0c), the RFC 6962
// hashing Certificate Transparency's logs use. Copied verbatim into test/fixtures/rfc6962/.
const VECTORS = join(import.meta.dirname, 'fixtures', 'rfc6962');
const b64 = (s: string | null): Buffer => Buffer.from(s ?? '', 'base64');

function vectors(kind: 'inclusion' | 'consistency'): { file: string; v: Record<string, unknown> }[] {
  return (readdirSync(join(VECTORS, kind), { recursive: true }) as string[])
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: `${kind}/${f}`, v: JSON.parse(readFileSync(join(VECTORS, kind, f), 'utf8')) as Record<string, unknown> }));
}

// RFC 6962 §2.1.3 example leaves (transparency-dev testonly.LeafInputs) and the roots of every prefix.
const LEAF_INPUTS = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((h) => Buffer.from(h, 'hex'));
const ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

/** The independent oracle: MTH written straight from RFC 6962 §2.1, recursive, no shortcuts. */
function oracleRoot(leaves: readonly Buffer[]): Buffer {
  const h = (...p: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(p)).digest();
  const mth = (d: readonly Buffer[]): Buffer => {
    if (d.length === 0) return h();
    if (d.length === 1) return h(Buffer.from([0]), d[0]!);
    let k = 1;
    while (k << 1 < d.length) k <<= 1;
    return h(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
  };
  return mth(leaves);
}

/** A source that also answers `node()` from a precomputed table of level ≥ 2 subtrees (as the tile store does). */
function storedSource(leaves: readonly Hash[]): TreeSource {
  return {
    leaves: (s, e) => leaves.slice(s, e),
    node: (level, index) => (level >= 2 && (index + 1) << level <= leaves.length ? hashLeaves(leaves.slice(index << level, (index + 1) << level)) : undefined),
  };
}

const flip = (b: Uint8Array, i: number): Buffer => {
  const c = Buffer.from(b);
  c[i % c.length]! ^= 1 << (i % 8);
  return c;
};

describe('R-34 the Merkle tree over the log (RFC 6962)', () => {
  it('R-34 roots of every prefix of the RFC 6962 example leaves match the published roots', () => {
    const leaves = LEAF_INPUTS.map(leafHash);
    expect(EMPTY_ROOT.toString('hex')).toBe(ROOTS[0]);
    for (let n = 0; n <= 8; n++) {
      expect(treeRoot(arraySource(leaves), n).toString('hex')).toBe(ROOTS[n]);
      expect(treeRoot(storedSource(leaves), n).toString('hex')).toBe(ROOTS[n]);
      expect(oracleRoot(LEAF_INPUTS.slice(0, n)).toString('hex')).toBe(ROOTS[n]); // the oracle itself is right
    }
  });

  it('R-34 every inclusion vector of transparency-dev/merkle verifies or fails as published, and our proofs equal the happy paths', () => {
    const all = vectors('inclusion');
    expect(all.length).toBeGreaterThan(60);
    const leaves = LEAF_INPUTS.map(leafHash);
    for (const { file, v } of all) {
      const proof = ((v.proof as string[] | null) ?? []).map(b64);
      const ok = verifyInclusion(v.leafIdx as number, v.treeSize as number, b64(v.leafHash as string), proof, b64(v.root as string));
      expect(ok, file).toBe(!(v.wantErr as boolean));
      if (file.endsWith('happy-path.json')) {
        expect(inclusionProof(arraySource(leaves), v.leafIdx as number, v.treeSize as number).map((p) => p.toString('base64')), file).toEqual(v.proof ?? []);
      }
    }
  });

  it('R-34 every consistency vector of transparency-dev/merkle verifies or fails as published, and our proofs equal the happy paths', () => {
    const all = vectors('consistency');
    expect(all.length).toBeGreaterThan(60);
    const leaves = LEAF_INPUTS.map(leafHash);
    for (const { file, v } of all) {
      const proof = ((v.proof as string[] | null) ?? []).map(b64);
      const ok = verifyConsistency(v.size1 as number, v.size2 as number, b64(v.root1 as string), b64(v.root2 as string), proof);
      expect(ok, file).toBe(!(v.wantErr as boolean));
      if (file.endsWith('happy-path.json') && (v.size1 as number) > 0) {
        expect(consistencyProof(arraySource(leaves), v.size1 as number, v.size2 as number).map((p) => p.toString('base64')), file).toEqual(v.proof ?? []);
      }
    }
  });

  const leavesArb = fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: 1, maxLength: 300 }).map((a) => a.map((b) => leafHash(b)));

  it('R-34 for all leaves, the root equals the oracle, from leaves alone and with stored subtrees', () => {
    fc.assert(fc.property(leavesArb, (leaves) => {
      const want = oracleFromLeafHashes(leaves);
      expect(treeRoot(arraySource(leaves), leaves.length).equals(want)).toBe(true);
      expect(treeRoot(storedSource(leaves), leaves.length).equals(want)).toBe(true);
    }), { numRuns: 150 });
  });

  it('R-34 for all trees and leaves, the inclusion proof verifies against the oracle root, and any one-byte change to the leaf, a proof hash or the root fails it', () => {
    fc.assert(fc.property(leavesArb, fc.nat(), fc.nat(), fc.nat(), (leaves, pick, bit, what) => {
      const n = leaves.length;
      const i = pick % n;
      const root = oracleFromLeafHashes(leaves);
      const proof = inclusionProof(storedSource(leaves), i, n);
      expect(verifyInclusion(i, n, leaves[i]!, proof, root)).toBe(true);
      if (n > 1) expect(verifyInclusion((i + 1) % n, n, leaves[i]!, proof, root)).toBe(false);
      const target = what % (proof.length + 2);
      if (target === 0) expect(verifyInclusion(i, n, flip(leaves[i]!, bit), proof, root)).toBe(false);
      else if (target === 1) expect(verifyInclusion(i, n, leaves[i]!, proof, flip(root, bit))).toBe(false);
      else expect(verifyInclusion(i, n, leaves[i]!, proof.map((p, k) => (k === target - 2 ? flip(p, bit) : p)), root)).toBe(false);
    }), { numRuns: 200 });
  });

  it('R-34 for all sizes 0 < a ≤ b, the consistency proof verifies against the oracle roots, and any one-byte change to a root or a proof hash fails it', () => {
    fc.assert(fc.property(leavesArb, fc.nat(), fc.nat(), fc.nat(), fc.nat(), (leaves, x, y, bit, what) => {
      const b = 1 + (y % leaves.length);
      const a = 1 + (x % b);
      const r1 = oracleFromLeafHashes(leaves.slice(0, a));
      const r2 = oracleFromLeafHashes(leaves.slice(0, b));
      const proof = consistencyProof(storedSource(leaves.slice(0, b)), a, b);
      expect(verifyConsistency(a, b, r1, r2, proof)).toBe(true);
      const target = what % (proof.length + 2);
      if (target === 0) expect(verifyConsistency(a, b, flip(r1, bit), r2, proof)).toBe(false);
      else if (target === 1) expect(verifyConsistency(a, b, r1, flip(r2, bit), proof)).toBe(false);
      else expect(verifyConsistency(a, b, r1, r2, proof.map((p, k) => (k === target - 2 ? flip(p, bit) : p)))).toBe(false);
      // A tree that is not an extension: change one leaf below a.
      const forged = [...leaves.slice(0, b)];
      forged[bit % a] = flip(forged[bit % a]!, bit);
      const r2f = oracleFromLeafHashes(forged);
      if (a < b) expect(verifyConsistency(a, b, r1, r2f, consistencyProof(arraySource(forged), a, b))).toBe(false);
    }), { numRuns: 200 });
  });
});

/** The oracle over leaf hashes already computed: the recursion of §2.1 on the hashes. */
function oracleFromLeafHashes(leaves: readonly Buffer[]): Buffer {
  const h = (...p: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(p)).digest();
  const mth = (d: readonly Buffer[]): Buffer => {
    if (d.length === 0) return h();
    if (d.length === 1) return d[0]!;
    let k = 1;
    while (k << 1 < d.length) k <<= 1;
    return h(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
  };
  return mth(leaves);
}
