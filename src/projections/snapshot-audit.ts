import type { StoredEvent } from '../events/envelope.js';
import { GENESIS_HASH } from '../events/hash.js';
import type { Projection } from './projection.js';
import { makeSnapshot, openSnapshot, type Snapshot, type SnapshotStore } from './snapshots.js';
import { foldEvents, type FoldPoint } from './time-travel.js';

/**
 * R-6 audited: every time-travel snapshot is the fold of the log up to its position (a view
 * snapshot: the view of that fold). Snapshots
 * are checked pairwise: each is refolded from the one before it (the first from the initial
 * state), so checking every pair checks them all by induction; `sample` checks that many pairs,
 * chosen by a seeded generator (the seed is reported, so a run can be repeated).
 */
export function snapshotProblems(
  projections: readonly Projection<unknown>[], store: SnapshotStore, events: readonly StoredEvent[], sample?: { count: number; seed: number },
): { checked: number; problems: { position: number; problem: string }[] } {
  const problems: { position: number; problem: string }[] = [];
  let checked = 0;
  const range = (from: number, to: number): StoredEvent[] => events.slice(from - 1, to);
  const kinds = projections.flatMap((p) => [{ p, name: p.name, of: (s: unknown) => s }, ...(p.view ? [{ p, name: p.view.name, of: p.view.of }] : [])]);
  for (const { p, name, of } of kinds) {
    const snaps = [...store.candidates(name, Number.MAX_SAFE_INTEGER)].reverse();
    let pairs = snaps.map((_, i) => i);
    if (sample) pairs = pick(pairs, sample.count, sample.seed + name.length);
    for (const i of pairs) {
      const target = snaps[i]!;
      const base = i === 0 ? null : snaps[i - 1]!;
      const problem = checkPair(p, name, of, base, target, range);
      checked += 1;
      if (problem !== null) problems.push({ position: target.position, problem: `time-travel snapshot of ${name} at position ${target.position}: ${problem}` });
    }
  }
  return { checked, problems: problems.sort((a, b) => a.position - b.position).slice(0, 1) };
}

/** `target` must be `of` the fold from `base` (a view folds forward from the view before it). */
function checkPair<S>(
  p: Projection<S>, name: string, of: (s: S) => S, base: Snapshot | null, target: Snapshot, range: (from: number, to: number) => StoredEvent[],
): string | null {
  const at = range(target.position, target.position)[0];
  if (!at) return `names position ${target.position}, beyond the end of the log`;
  if (at.hash !== target.eventHash) return 'names an event hash the log does not have there';
  let start: FoldPoint<S> = { state: p.initialState, position: 0, hash: GENESIS_HASH };
  if (base !== null) {
    const state = openSnapshot<S>(base);
    if (state === null) return `the snapshot before it (position ${base.position}) does not verify`;
    start = { state, position: base.position, hash: base.eventHash, owned: true };
  }
  const folded = foldEvents(p, start, range(start.position + 1, target.position), target.position);
  const want = makeSnapshot(name, target.position, at.hash, of(folded.state));
  return want.stateJson === target.stateJson && want.sha256 === target.sha256 ? null : 'differs from the fold of the log (forged or stale)';
}

/** `count` of `items` (all when fewer), by a small seeded generator (mulberry32). */
function pick<T>(items: readonly T[], count: number, seed: number): T[] {
  const a = [...items];
  let s = seed >>> 0;
  const rand = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, Math.min(count, a.length));
}
