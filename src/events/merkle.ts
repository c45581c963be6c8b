import * as crypto from 'node:crypto';

// The Merkle tree over the log (RFC 6962 / RFC 9162 §2.1): leaf i is the event at position i+1,
// its input the 32 bytes of the event's hash. Leaf hash = SHA-256(0x00 || input), interior node =
// SHA-256(0x01 || left || right); the tree over n leaves splits at the largest power of two below
// n. Pure functions over a `TreeSource`, so the same code proves from an in-memory array, from the
// build's tile store, or inside the standalone verifier.

export type Hash = Buffer;

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

function sha256(...parts: Uint8Array[]): Hash {
  const h = crypto.createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** SHA-256 of the empty string: the root of the empty tree. */
export const EMPTY_ROOT: Hash = sha256();

export function leafHash(input: Uint8Array): Hash {
  return sha256(LEAF, input);
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Hash {
  return sha256(NODE, left, right);
}

/** The leaf hash of an event: its hex hash as 32 bytes, prefixed. */
export function eventLeafHash(eventHashHex: string): Hash {
  return leafHash(Buffer.from(eventHashHex, 'hex'));
}

/**
 * Where a proof reads the tree from. `leaves(start, end)` returns leaf hashes [start, end);
 * `node(level, index)` may return the stored hash of the complete subtree of 2^level leaves
 * starting at index·2^level (undefined: compute it from the leaves).
 */
export interface TreeSource {
  leaves(start: number, end: number): readonly Hash[];
  node?(level: number, index: number): Hash | undefined;
}

/** An in-memory source over leaf hashes (tests, the standalone verifier). */
export function arraySource(leafHashes: readonly Hash[]): TreeSource {
  return { leaves: (s, e) => leafHashes.slice(s, e) };
}

/**
 * A source over leaves in memory with every complete subtree hashed once (2n hashes): roots and
 * proofs at any size then cost O(log n). For verifying a whole log (the audit bundle).
 */
export function memoryTree(leafHashes: readonly Hash[]): TreeSource {
  const levels: Hash[][] = [leafHashes as Hash[]];
  for (let below = levels[0]!; below.length > 1;) {
    const up: Hash[] = new Array(below.length >> 1);
    for (let i = 0; i < up.length; i++) up[i] = nodeHash(below[2 * i]!, below[2 * i + 1]!);
    levels.push(up);
    below = up;
  }
  return { leaves: (s, e) => leafHashes.slice(s, e), node: (level, index) => levels[level]?.[index] };
}

/** Largest power of two strictly below n (n ≥ 2). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[start:end]) (RFC 9162 §2.1.1); `start` is aligned to the subtree it names. */
export function rangeHash(src: TreeSource, start: number, end: number): Hash {
  const n = end - start;
  if (n <= 0) return EMPTY_ROOT;
  if (n === 1) return src.leaves(start, end)[0]!;
  if ((n & (n - 1)) === 0 && src.node) {
    const level = Math.log2(n);
    const stored = src.node(level, start / n);
    if (stored) return stored;
  }
  if (n <= 256) return hashLeaves(src.leaves(start, end));
  const k = splitPoint(n);
  return nodeHash(rangeHash(src, start, start + k), rangeHash(src, start + k, end));
}

/** MTH over leaf hashes in memory, without recursion (a subtree of complete levels, then the fold). */
export function hashLeaves(leaves: readonly Hash[]): Hash {
  const n = leaves.length;
  if (n === 0) return EMPTY_ROOT;
  // The complete subtrees of the binary decomposition of n, left to right, then folded from the right.
  const roots: Hash[] = [];
  let start = 0;
  for (let size = 2 ** Math.floor(Math.log2(n)); size >= 1; size /= 2) {
    if (start + size > n) continue;
    let level = leaves.slice(start, start + size) as Hash[];
    while (level.length > 1) {
      const up: Hash[] = new Array(level.length / 2);
      for (let i = 0; i < up.length; i++) up[i] = nodeHash(level[2 * i]!, level[2 * i + 1]!);
      level = up;
    }
    roots.push(level[0]!);
    start += size;
  }
  let root = roots[roots.length - 1]!;
  for (let i = roots.length - 2; i >= 0; i--) root = nodeHash(roots[i]!, root);
  return root;
}

/** The root of the tree over the first `size` leaves. */
export function treeRoot(src: TreeSource, size: number): Hash {
  return rangeHash(src, 0, size);
}

/** Inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162 §2.1.3.1), leaf to root. */
export function inclusionProof(src: TreeSource, index: number, size: number): Hash[] {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) {
    throw new RangeError(`no leaf ${index} in a tree of ${size}`);
  }
  const path: Hash[] = [];
  const walk = (m: number, start: number, end: number): void => {
    const n = end - start;
    if (n <= 1) return;
    const k = splitPoint(n);
    if (m < k) {
      walk(m, start, start + k);
      path.push(rangeHash(src, start + k, end));
    } else {
      walk(m - k, start + k, end);
      path.push(rangeHash(src, start, start + k));
    }
  };
  walk(index, 0, size);
  return path;
}

/** Consistency proof from the tree of `m` leaves to the tree of `n` (RFC 9162 §2.1.4.1). */
export function consistencyProof(src: TreeSource, m: number, n: number): Hash[] {
  if (!Number.isInteger(m) || !Number.isInteger(n) || m < 0 || m > n) throw new RangeError(`no consistency proof from ${m} to ${n}`);
  if (m === 0 || m === n) return [];
  const proof: Hash[] = [];
  const sub = (mm: number, start: number, end: number, complete: boolean): void => {
    const nn = end - start;
    if (mm === nn) {
      if (!complete) proof.push(rangeHash(src, start, end));
      return;
    }
    const k = splitPoint(nn);
    if (mm <= k) {
      sub(mm, start, start + k, complete);
      proof.push(rangeHash(src, start + k, end));
    } else {
      sub(mm - k, start + k, end, false);
      proof.push(rangeHash(src, start, start + k));
    }
  };
  sub(m, 0, n, true);
  return proof;
}

/** Every value is a SHA-256 output (32 bytes): a short or long "hash" never verifies. */
function allHashes(values: readonly Uint8Array[]): boolean {
  return values.every((v) => v.length === 32);
}

/** RFC 9162 §2.1.3.2: does `proof` show leaf `index` with `leaf` in the tree of `size` with `root`? */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) return false;
  if (!allHashes([leaf, root, ...proof])) return false;
  let fn = index;
  let sn = size - 1;
  let r: Uint8Array = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && Buffer.compare(Buffer.from(r), Buffer.from(root)) === 0;
}

/** RFC 9162 §2.1.4.2: is the tree of `size2` with `root2` an extension of `size1` with `root1`? */
export function verifyConsistency(size1: number, size2: number, root1: Uint8Array, root2: Uint8Array, proof: readonly Uint8Array[]): boolean {
  if (!Number.isInteger(size1) || !Number.isInteger(size2) || size1 < 0 || size2 < size1) return false;
  const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
  if (size1 === 0) return false; // a proof from the empty tree says nothing (as transparency-dev's verifier)
  if (size1 === size2) return proof.length === 0 && same(root1, root2);
  if (!allHashes([root1, root2, ...proof])) return false;
  if (proof.length === 0) return false;
  const path = (size1 & (size1 - 1)) === 0 ? [root1, ...proof] : [...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
  let fr: Uint8Array = path[0]!;
  let sr: Uint8Array = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) while (fn % 2 === 0 && fn !== 0) { fn = Math.floor(fn / 2); sn = Math.floor(sn / 2); }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(fr, root1) && same(sr, root2);
}

/**
 * The right border of the tree (its complete subtrees, largest first): appending a leaf costs
 * O(1) hashes amortised and the root O(log n), so a log extended and signed every few events
 * never rehashes what it already hashed.
 */
export class Frontier {
  private readonly stack: { level: number; hash: Hash }[] = [];
  private count = 0;

  /** The frontier of the tree of `size` leaves read from `src` (stored subtrees where it has them). */
  static at(src: TreeSource, size: number): Frontier {
    const f = new Frontier();
    let start = 0;
    for (let level = size > 0 ? Math.floor(Math.log2(size)) : -1; level >= 0; level--) {
      const width = 2 ** level;
      if (start + width > size) continue;
      f.stack.push({ level, hash: rangeHash(src, start, start + width) });
      start += width;
    }
    f.count = size;
    return f;
  }

  get size(): number {
    return this.count;
  }

  push(leaf: Hash): void {
    let entry = { level: 0, hash: leaf };
    while (this.stack.length > 0 && this.stack[this.stack.length - 1]!.level === entry.level) {
      const left = this.stack.pop()!;
      entry = { level: entry.level + 1, hash: nodeHash(left.hash, entry.hash) };
    }
    this.stack.push(entry);
    this.count += 1;
  }

  root(): Hash {
    if (this.stack.length === 0) return EMPTY_ROOT;
    let r = this.stack[this.stack.length - 1]!.hash;
    for (let i = this.stack.length - 2; i >= 0; i--) r = nodeHash(this.stack[i]!.hash, r);
    return r;
  }
}
