import type { StoredEvent } from '../events/envelope.js';
import { CorruptLogError, NotFoundError, ValidationError } from '../events/errors.js';
import { GENESIS_HASH } from '../events/hash.js';
import { FOLD_RUN_EVENTS, evolveRun, ownedCopyOf, type Projection } from './projection.js';
import { openSnapshot, type Snapshot, type SnapshotStore } from './snapshots.js';

/** Reads log events with positions in [from, to], in order (e.g. `log.readAllSync({ from, limit })`). */
export type EventRange = (from: number, to: number) => Iterable<StoredEvent>;

export interface StateAt<S> {
  readonly state: S;
  readonly position: number;
  /** Position of the snapshot the fold started from, or 0 when it started from the initial state. */
  readonly fromSnapshot: number;
}

/** Where a fold stands. `owned`: the state is the fold's own (decoded from a snapshot, or copied), free to change in place. */
export interface FoldPoint<S> {
  readonly state: S;
  readonly position: number;
  readonly hash: string;
  readonly owned?: boolean;
}

/**
 * Fold events into a state, checking positions are contiguous and the chain links. A
 * projection with `evolveInPlace` folds in place (the start state copied first unless owned).
 */
export function foldEvents<S>(projection: Projection<S>, start: FoldPoint<S>, events: Iterable<StoredEvent>, until: number): FoldPoint<S> {
  let { state, position, hash } = start;
  const inPlace = projection.evolveInPlace;
  let owned = start.owned === true;
  let run: StoredEvent[] = [];
  for (const e of events) {
    if (e.position > until) break;
    if (e.position !== position + 1) throw new CorruptLogError(position + 1, `expected position ${position + 1}, got ${e.position}`);
    if (e.prevHash !== hash) throw new CorruptLogError(e.position, 'previous-hash link broken');
    position = e.position;
    hash = e.hash;
    if (inPlace !== undefined) {
      if (!owned) state = ownedCopyOf(projection, state);
      owned = true;
      inPlace(state, e);
      continue;
    }
    run.push(e);
    if (run.length === FOLD_RUN_EVENTS) {
      state = evolveRun(projection, state, run, 0, run.length);
      run = [];
    }
  }
  if (run.length > 0) state = evolveRun(projection, state, run, 0, run.length);
  return { state, position, hash, owned };
}

/**
 * The state of `projection` as of log position `position`: the fold of events 1..position,
 * started from the newest snapshot at or before it that verifies (its hash, and the hash of the
 * log event it claims to follow). Snapshots that do not verify are ignored. A projection with a
 * view may start from a view snapshot: then what the view drops holds only what came after it.
 */
export function stateAt<S>(events: EventRange, projection: Projection<S>, position: number, snapshots?: SnapshotStore): StateAt<S> {
  if (!Number.isInteger(position) || position < 0) throw new ValidationError(`position must be an integer ≥ 0, got ${String(position)}`, 'R-6');
  let start: FoldPoint<S> = { state: projection.initialState, position: 0, hash: GENESIS_HASH };
  let fromSnapshot = 0;
  if (snapshots && position > 0) {
    for (const s of startingPoints(snapshots, projection, position)) {
      const state = openSnapshot<S>(s);
      if (state === null) continue;
      // The snapshot must belong to this log: the event at its position has the hash it names.
      const anchor = first(events(s.position, s.position));
      if (!anchor || anchor.position !== s.position || anchor.hash !== s.eventHash) continue;
      start = { state, position: s.position, hash: s.eventHash, owned: true };
      fromSnapshot = s.position;
      break;
    }
  }
  const end = start.position < position ? foldEvents(projection, start, events(start.position + 1, position), position) : start;
  if (end.position !== position) throw new NotFoundError(`position ${position} is beyond the end of the log (${end.position})`);
  return { state: end.state, position, fromSnapshot };
}

/**
 * Snapshots time travel may start from, best first: the view's (small; R-6 folds forward from a
 * view to the same view), newest first, then the projection's own full ones (a build from before
 * views has only those). Lazy: a snapshot row is read only when the one before did not verify.
 */
export function* startingPoints(snapshots: SnapshotStore, projection: Projection<unknown>, position: number): Generator<Snapshot> {
  if (projection.view) yield* snapshots.candidates(projection.view.name, position);
  yield* snapshots.candidates(projection.name, position);
}

function first<T>(items: Iterable<T>): T | undefined {
  for (const item of items) return item;
  return undefined;
}
