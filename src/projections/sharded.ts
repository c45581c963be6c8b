import type { Draft } from 'immer';

/**
 * A record split into buckets by a hash of the key, so that an immutable update (immer) copies
 * one bucket and the bucket index instead of the whole collection: O(n/B + B) per write rather
 * than O(n). Collections that grow with the build's history (attempts, jobs, graph revisions)
 * use it, which keeps a controller step flat as a build runs for weeks. Plain JSON: snapshots
 * and canonical dumps see ordinary objects.
 */
export type Sharded<T> = Readonly<Record<string, Readonly<Record<string, T>>>>;

const BUCKETS = 256;

/** The bucket of a key: FNV-1a over its UTF-16 units, as two hex digits. */
export function bucketOf(key: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h >>> 0) % BUCKETS).toString(16).padStart(2, '0');
}

/** The value under `key`, or undefined. */
export function shardGet<T>(s: Sharded<T>, key: string): T | undefined {
  const bucket = s[bucketOf(key)];
  return bucket !== undefined && Object.hasOwn(bucket, key) ? bucket[key] : undefined;
}

/** Set `key` inside an immer draft (creates the bucket on first use). */
export function shardSet<T>(draft: Draft<Sharded<T>>, key: string, value: Draft<T>): void {
  const b = bucketOf(key);
  const d = draft as Record<string, Record<string, Draft<T>>>;
  if (d[b] === undefined) d[b] = {};
  d[b]![key] = value;
}

/** The draft of the value under `key` (for in-place edits), or undefined. */
export function shardDraft<T>(draft: Draft<Sharded<T>>, key: string): Draft<T> | undefined {
  const d = draft as Record<string, Record<string, Draft<T>>>;
  const bucket = d[bucketOf(key)];
  return bucket !== undefined && Object.hasOwn(bucket, key) ? bucket[key] : undefined;
}

/** Every [key, value] pair (bucket order, then insertion order: sort if order matters). */
export function* shardEntries<T>(s: Sharded<T>): Generator<[string, T]> {
  for (const b in s) {
    const bucket = s[b]!;
    for (const key in bucket) yield [key, bucket[key]!];
  }
}

/** Every value (see shardEntries for the order). */
export function shardValues<T>(s: Sharded<T>): T[] {
  const out: T[] = [];
  for (const b in s) {
    const bucket = s[b]!;
    for (const key in bucket) out.push(bucket[key]!);
  }
  return out;
}

/** Number of entries. */
export function shardSize(s: Sharded<unknown>): number {
  let n = 0;
  for (const b in s) n += Object.keys(s[b]!).length;
  return n;
}
