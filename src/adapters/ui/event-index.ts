/**
 * The viewer's event index: what the page lists, filters and marks on its timeline,
 * read from each stored event. Pure: no I/O.
 */
import type { StoredEvent } from '../../events/envelope.js';
import type { Mark, SpendPoint } from '../../projections/event-index-rows.js';

export { marksOf, nodesOf, spendOf, textOf, type IndexRow, type Mark, type MarkKind, type SpendPoint } from '../../projections/event-index-rows.js';

/** A SHA-256 as the log and the evidence store write it. */
export const HEX64 = /^[0-9a-f]{64}$/;
const GIT_SHA = /^[0-9a-f]{40}$/;

/**
 * The last point of each bucket of positions, so a long build's line stays small. `count`: how many
 * points there are in all when `points` is already sampled in part (a prefix sampled the same way).
 */
export function sampleSpend(points: readonly SpendPoint[], head: number, buckets: number, count = points.length): SpendPoint[] {
  if (count <= buckets) return [...points];
  const width = bucketWidth(head, buckets);
  return points.filter((p, i) => i === points.length - 1 || Math.floor(points[i + 1]!.position / width) !== Math.floor(p.position / width));
}

/** Positions per bucket of the timeline. */
export function bucketWidth(head: number, buckets: number): number {
  return Math.max(1, head / buckets);
}

/** The timeline is drawn this many buckets wide: more marks than that cannot be told apart. */
export const MARK_BUCKETS = 2000;

/**
 * At most one mark of each kind per bucket of positions (the first), so a 100k-event log's timeline
 * stays small. `count`: how many marks there are in all when a prefix of `marks` is already sampled.
 */
export function sampleMarks(marks: readonly Mark[], head: number, buckets: number, count = marks.length): Mark[] {
  if (count <= buckets) return [...marks];
  const width = bucketWidth(head, buckets);
  const seen = new Set<string>();
  return marks.filter((m) => {
    const key = `${m.kind}:${Math.floor(m.position / width)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Every string leaf of an event's data with its path (`evidence[0].stdoutSha256`). */
function stringLeaves(e: StoredEvent): { path: string; value: string }[] {
  const out: { path: string; value: string }[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, path === '' ? k : `${path}.${k}`);
    else if (typeof v === 'string') out.push({ path, value: v });
  };
  walk(e.data, '');
  return out;
}

/**
 * Every SHA-256 in an event that names a file of the evidence store, with where it sits (stdout
 * before stderr of one command): commands' output, and the tests' files — passing ids, a
 * report file, the hold-out's output.
 */
export function evidenceRefs(e: StoredEvent): { path: string; sha256: string }[] {
  const named = (path: string): boolean => /(stdout|stderr|passing|report)Sha256$/.test(path) || /^tests\.holdout\.evidence\[\d+\]$/.test(path);
  const out = stringLeaves(e).filter((l) => HEX64.test(l.value) && named(l.path)).map((l) => ({ path: l.path, sha256: l.value }));
  const prefix = (p: string): string => p.replace(/std(out|err)Sha256$/, '');
  const order = [...new Set(out.map((r) => prefix(r.path)))];
  const key = (r: { path: string }): number => order.indexOf(prefix(r.path)) * 2 + (r.path.endsWith('stdoutSha256') ? 0 : 1);
  return out.sort((a, b) => key(a) - key(b));
}

/** Git SHAs an event names (commits, trees, heads), with where they sit. */
export function gitRefs(e: StoredEvent): { path: string; sha: string }[] {
  return stringLeaves(e).filter((l) => GIT_SHA.test(l.value)).map((l) => ({ path: l.path, sha: l.value }));
}
