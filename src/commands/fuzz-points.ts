/** The fuzzer's interruption points: which occur, which are chosen, where a case may start. Pure. */
import { compareCodePoints } from '../events/canonical.js';

/** One interruption point occurrence: `LONGBUILD_CRASH_AT=point:occurrence`. */
export interface PointOccurrence {
  readonly point: string;
  readonly occurrence: number;
}

/** Every (point, occurrence) of a clean run's points file, in the order reached, with the calls in flight there (several workers). */
export function enumeratePoints(lines: readonly string[]): (PointOccurrence & { readonly inFlight: readonly string[] })[] {
  const seen = new Map<string, number>();
  const out: (PointOccurrence & { inFlight: string[] })[] = [];
  for (const raw of lines) {
    const [name, flight] = raw.split('\t');
    const point = name!.trim();
    if (point === '') continue;
    const k = (seen.get(point) ?? 0) + 1;
    seen.set(point, k);
    out.push({ point, occurrence: k, inFlight: (flight ?? '').trim().split(' ').filter((x) => x !== '') });
  }
  return out;
}

/** The kinds of calls in flight, as a combination: `2 workers, 1 verification` (the calls' keys tell their kind). */
export function flightCombination(inFlight: readonly string[]): string {
  const kinds = { planner: 0, worker: 0, verification: 0, acceptance: 0 };
  for (const k of inFlight) {
    if (k.startsWith('plan.')) kinds.planner += 1;
    else if (k.startsWith('job-')) kinds.verification += 1;
    else if (k.startsWith('accept-')) kinds.acceptance += 1;
    else kinds.worker += 1;
  }
  const parts = Object.entries(kinds).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}${n === 1 ? '' : 's'}`);
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

/** mulberry32: a small seeded generator, so a sample is reproducible from its seed. */
export function seeded(seed: number): () => number {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6d2b79f5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `--points all` or N occurrences sampled with `seed` (deterministic), kept in run order. When
 * the clean run had several calls in flight, the sample covers the combinations it
 * passed through first: a point of every distinct set of calls in flight of two or more (then of
 * one), as far as N allows, then the rest at random.
 */
export function choosePoints<P extends PointOccurrence & { readonly inFlight?: readonly string[] }>(all: readonly P[], count: number | 'all', seed: number): P[] {
  if (count === 'all' || count >= all.length) return [...all];
  const rand = seeded(seed);
  const idx = all.map((_, i) => i);
  for (let i = idx.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [idx[i], idx[j]] = [idx[j]!, idx[i]!];
  }
  const key = (i: number): string => [...(all[i]!.inFlight ?? [])].sort().join(' ');
  const size = (i: number): number => all[i]!.inFlight?.length ?? 0;
  const picked = new Set<number>();
  const covered = new Set<string>();
  // Most calls in flight first; one point per distinct set, in the shuffled order.
  for (const min of [2, 1]) {
    for (const i of [...idx].sort((a, b) => size(b) - size(a))) {
      if (picked.size >= count) break;
      if (size(i) < min || covered.has(key(i))) continue;
      covered.add(key(i));
      picked.add(i);
    }
  }
  for (const i of idx) {
    if (picked.size >= count) break;
    picked.add(i);
  }
  return [...picked].sort((x, y) => x - y).map((i) => all[i]!);
}

/** Parse `POINT:K` (the `--only` flag and LONGBUILD_CRASH_AT share this form). */
export function parsePointOccurrence(spec: string): PointOccurrence | null {
  const idx = spec.lastIndexOf(':');
  const k = Number(spec.slice(idx + 1));
  if (idx <= 0 || !Number.isInteger(k) || k < 1) return null;
  return { point: spec.slice(0, idx), occurrence: k };
}

// ---- starting a case where the clean run stood ------------------------------------------

/** `before-append:X` / `before-effect:K` opens what `after-append:X` / `after-effect:K` closes. */
const OPENS = /^before-(append|effect):/;
const CLOSES = /^after-(append|effect):/;

/**
 * Whether a build stopped after `staged` (the points a run in stages of `run --max-steps` passed,
 * in order) stands where the uninterrupted clean run stood after as many points (`clean`, its
 * points file): the same points, in any order (the clean run's group commit reports an append's
 * commit after the next step's first append), and nothing half done in the clean run there —
 * every append it began is committed and every effect it began has ended. Only then can a fresh
 * process started on that stopped build stand in for the clean run's process at that place.
 */
/**
 * Events the host records as a `run` ends, about what the run did, not a decision of the build
 * (R-62's attestations): how many and where depends on how many runs there were, so they are not
 * compared, and a stopped run's points of them are not the clean run's.
 */
export const RUN_END_RECORDS: ReadonlySet<string> = new Set(['ProvenanceRecorded']);

/** Whether a point line is about a run-end record (its append). */
export const runEndPoint = (line: string): boolean => RUN_END_RECORDS.has(line.split('\t')[0]!.trim().replace(/^(before|after)-append:/, ''));

export function stoppedLikeClean(clean: readonly string[], staged: readonly string[]): boolean {
  if (staged.length === 0 || staged.length > clean.length) return false;
  const prefix = clean.slice(0, staged.length);
  const sorted = (lines: readonly string[]): string => [...lines].sort(compareCodePoints).join('\n');
  if (sorted(prefix) !== sorted(staged)) return false;
  const open = new Map<string, number>();
  for (const line of prefix) {
    const name = line.split('\t')[0]!.trim();
    const what = name.replace(OPENS, '$1:').replace(CLOSES, '$1:');
    if (OPENS.test(name)) open.set(what, (open.get(what) ?? 0) + 1);
    else if (CLOSES.test(name)) open.set(what, (open.get(what) ?? 0) - 1);
  }
  return [...open.values()].every((n) => n === 0);
}

/**
 * Where a case at `target` starts: after the latest usable stop (a number of the clean run's
 * points, see stoppedLikeClean) at or before the point's place in the clean run — 0 is the
 * build's start — with the point's occurrence counted from there, and that place (`index`, into
 * `points`; -1 when the clean run never reached the target).
 */
export function startFor(points: readonly PointOccurrence[], stops: readonly number[], target: PointOccurrence): { readonly at: number; readonly occurrence: number; readonly index: number } {
  const index = points.findIndex((p) => p.point === target.point && p.occurrence === target.occurrence);
  if (index < 0) return { at: 0, occurrence: target.occurrence, index };
  const at = Math.max(0, ...stops.filter((s) => s <= index));
  const before = points.slice(0, at).filter((p) => p.point === target.point).length;
  return { at, occurrence: target.occurrence - before, index };
}

/** Whether a run started after the clean run's first `at` points passed the clean run's next ones up to its `index`-th, in order. */
export function followsClean(clean: readonly string[], at: number, index: number, run: readonly string[]): boolean {
  const expected = clean.slice(at, index + 1);
  return expected.length === index + 1 - at && run.length >= expected.length && expected.every((line, i) => run[i] === line);
}
