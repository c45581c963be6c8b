import type { Draft } from 'immer';

/**
 * A record split into a two-level tree of buckets by a hash of the key, so that an immutable
 * update (immer) copies two small bucket arrays and one leaf instead of the whole collection:
 * O(64 + 64 + n/4096) per write rather than O(n). Collections that grow with the build's history
 * (attempts, jobs, each milestone's spend) use it, which keeps a controller step flat as a build runs
 * for weeks. Plain JSON: the two levels are arrays of at most 64 slots (null: an empty one), the
 * leaves objects keyed by the collection's keys.
 *
 * The levels are arrays, not objects with 64 keys (state version 8, decision 0035): V8 keeps an
 * object grown key by key in dictionary mode once it has a few dozen keys, and immer's copy of
 * one costs ~0.2–0.5 µs per key — ~30 µs for a full middle bucket, at every write of a 30,000-node
 * build — where copying an array of 64 pointers costs ~0.05 µs.
 */
export type Sharded<T> = readonly (readonly (Readonly<Record<string, T>> | null)[] | null)[];

/** Buckets per level (`slotsOf` gives numbers below it). */
export const FANOUT = 64;

/** The two bucket numbers of a key (each below 64): FNV-1a over its UTF-16 units, split in two. */
export function slotsOf(key: string): [number, number] {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  const u = h >>> 0;
  return [u % FANOUT, Math.floor(u / FANOUT) % FANOUT];
}

/** Slot `i` of a bucket array made to exist: the array grown with empty slots (null) up to it. */
function grown<T>(slots: (T | null)[], i: number): void {
  while (slots.length <= i) slots.push(null);
}

/** A sharded collection holding the given entries (for initial states). */
export function shardedOf<T>(entries: Readonly<Record<string, T>>): Sharded<T> {
  const out: ((Record<string, T> | null)[] | null)[] = [];
  for (const [key, value] of Object.entries(entries)) {
    const [a, b] = slotsOf(key);
    grown(out, a);
    const mid = (out[a] ??= []);
    grown(mid, b);
    (mid[b] ??= {})[key] = value;
  }
  return out;
}

function leafOf<T>(s: Sharded<T>, key: string): Readonly<Record<string, T>> | null | undefined {
  const [a, b] = slotsOf(key);
  return s[a]?.[b];
}

/** The value under `key`, or undefined. */
export function shardGet<T>(s: Sharded<T>, key: string): T | undefined {
  const leaf = leafOf(s, key);
  return leaf != null && Object.hasOwn(leaf, key) ? leaf[key] : undefined;
}

/** Set `key` inside an immer draft of a collection (creates the buckets on first use). */
export function shardSet<T>(draft: Sharded<T>, key: string, value: NoInfer<T> | Draft<NoInfer<T>>): void {
  const [a, b] = slotsOf(key);
  const d = draft as unknown as ((Record<string, Draft<T>> | null)[] | null)[];
  if (d[a] == null) {
    grown(d, a);
    d[a] = [];
  }
  const mid = d[a]!;
  if (mid[b] == null) {
    grown(mid, b);
    mid[b] = {};
  }
  mid[b]![key] = value as Draft<T>;
}

/**
 * Remove `key` inside an immer draft of a collection. A leaf left empty is let go (its slot back to
 * null, state version 12): an object that lost its keys keeps the table they were in, and a
 * collection that empties as a build runs (attempts) kept ~4,000 such leaves (decision 0056).
 */
export function shardDelete<T>(draft: Sharded<T>, key: string): void {
  const [a, b] = slotsOf(key);
  const mid = (draft as unknown as ((Record<string, Draft<T>> | null)[] | null)[])[a];
  const leaf = mid?.[b];
  if (leaf == null || !Object.hasOwn(leaf, key)) return;
  delete leaf[key];
  for (const _ in leaf) return;
  mid![b] = null;
}

/** The draft of the value under `key` in an immer draft of a collection (for in-place edits), or undefined. */
export function shardDraft<T>(draft: Sharded<T>, key: string): Draft<T> | undefined {
  const [a, b] = slotsOf(key);
  const leaf = (draft as unknown as ((Record<string, Draft<T>> | null)[] | null)[])[a]?.[b];
  return leaf != null && Object.hasOwn(leaf, key) ? leaf[key] : undefined;
}

/** Every [key, value] pair (bucket order, then insertion order: sort if order matters). */
export function* shardEntries<T>(s: Sharded<T>): Generator<[string, T]> {
  for (const mid of s) {
    if (mid == null) continue;
    for (const leaf of mid) {
      if (leaf == null) continue;
      for (const key in leaf) yield [key, leaf[key]!];
    }
  }
}

/** Every value (see shardEntries for the order). */
export function shardValues<T>(s: Sharded<T>): T[] {
  const out: T[] = [];
  for (const [, v] of shardEntries(s)) out.push(v);
  return out;
}

/** The leaves of two versions of a collection that differ (unchanged subtrees skipped by reference). */
export function* changedLeaves<T>(before: Sharded<T>, after: Sharded<T>): Generator<[Readonly<Record<string, T>>, Readonly<Record<string, T>>]> {
  if (before === after) return;
  const empty: Readonly<Record<string, never>> = {};
  for (let a = 0; a < Math.max(before.length, after.length); a++) {
    const x = before[a] ?? null;
    const y = after[a] ?? null;
    if (x === y) continue;
    for (let b = 0; b < Math.max(x?.length ?? 0, y?.length ?? 0); b++) {
      const lx = x?.[b] ?? empty;
      const ly = y?.[b] ?? empty;
      if (lx !== ly) yield [lx, ly];
    }
  }
}
