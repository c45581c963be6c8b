import type { Draft } from 'immer';

/**
 * A record split into a two-level tree of buckets by a hash of the key, so that an immutable
 * update (immer) copies two small bucket indexes and one leaf instead of the whole collection:
 * O(64 + 64 + n/4096) per write rather than O(n). Collections that grow with the build's history
 * (attempts, jobs, graph revisions) use it, which keeps a controller step flat as a build runs
 * for weeks. Plain JSON: snapshots and canonical dumps see ordinary objects.
 */
export type Sharded<T> = Readonly<Record<string, Readonly<Record<string, Readonly<Record<string, T>>>>>>;

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

/**
 * The two bucket names of a key: its slots as base-36 digits after a letter, so that no name looks
 * like an array index. V8 keeps integer-like keys ("7", "12") as elements beside the named
 * properties, and copying such an object where the copy site has seen many shapes (immer's
 * `shallowCopy`, every write) takes a slow path: ~9 µs for a 64-bucket index against ~1 µs with
 * names (decision 0017, "Bucket names"). Snapshots of states with the earlier digit-only names
 * are of state version 4 and are not restored (build-projection.ts).
 */
export function bucketsOf(key: string): readonly [string, string] {
  const [a, b] = slotsOf(key);
  return [BUCKET_NAMES[a]!, BUCKET_NAMES[b]!];
}

const BUCKET_NAMES: readonly string[] = Array.from({ length: FANOUT }, (_, i) => `s${i.toString(36)}`);

/** A sharded collection holding the given entries (for initial states). */
export function shardedOf<T>(entries: Readonly<Record<string, T>>): Sharded<T> {
  const out: Record<string, Record<string, Record<string, T>>> = {};
  for (const [key, value] of Object.entries(entries)) {
    const [a, b] = bucketsOf(key);
    ((out[a] ??= {})[b] ??= {})[key] = value;
  }
  return out;
}

function leafOf<T>(s: Sharded<T>, key: string): Readonly<Record<string, T>> | undefined {
  const [a, b] = bucketsOf(key);
  return s[a]?.[b];
}

/** The value under `key`, or undefined. */
export function shardGet<T>(s: Sharded<T>, key: string): T | undefined {
  const leaf = leafOf(s, key);
  return leaf !== undefined && Object.hasOwn(leaf, key) ? leaf[key] : undefined;
}

/** Set `key` inside an immer draft (creates the buckets on first use). */
export function shardSet<T>(draft: Draft<Sharded<T>>, key: string, value: Draft<T>): void {
  const [a, b] = bucketsOf(key);
  const d = draft as Record<string, Record<string, Record<string, Draft<T>>>>;
  if (d[a] === undefined) d[a] = {};
  if (d[a]![b] === undefined) d[a]![b] = {};
  d[a]![b]![key] = value;
}

/** The draft of the value under `key` (for in-place edits), or undefined. */
export function shardDraft<T>(draft: Draft<Sharded<T>>, key: string): Draft<T> | undefined {
  const [a, b] = bucketsOf(key);
  const leaf = (draft as Record<string, Record<string, Record<string, Draft<T>>>>)[a]?.[b];
  return leaf !== undefined && Object.hasOwn(leaf, key) ? leaf[key] : undefined;
}

/** Every [key, value] pair (bucket order, then insertion order: sort if order matters). */
export function* shardEntries<T>(s: Sharded<T>): Generator<[string, T]> {
  for (const a in s) {
    const mid = s[a]!;
    for (const b in mid) {
      const leaf = mid[b]!;
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
  for (const a of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const x = before[a] ?? empty;
    const y = after[a] ?? empty;
    if (x === y) continue;
    for (const b of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const lx = x[b] ?? empty;
      const ly = y[b] ?? empty;
      if (lx !== ly) yield [lx, ly];
    }
  }
}
