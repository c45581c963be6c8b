import type { StoredEvent } from '../events/envelope.js';
import { CorruptLogError, NotFoundError, ValidationError } from '../events/errors.js';
import { GENESIS_HASH } from '../events/hash.js';
import { FOLD_RUN_EVENTS, evolveRun, type Projection } from './projection.js';
import { openSnapshot, type SnapshotStore } from './snapshots.js';

/** Reads log events with positions in [from, to], in order (e.g. `log.readAllSync({ from, limit })`). */
export type EventRange = (from: number, to: number) => Iterable<StoredEvent>;

export interface StateAt<S> {
  readonly state: S;
  readonly position: number;
  /** Position of the snapshot the fold started from, or 0 when it started from the initial state. */
  readonly fromSnapshot: number;
}

/** Fold events into a state, checking positions are contiguous and the chain links. */
export function foldEvents<S>(projection: Projection<S>, start: { state: S; position: number; hash: string }, events: Iterable<StoredEvent>, until: number): { state: S; position: number; hash: string } {
  let { state, position, hash } = start;
  let run: StoredEvent[] = [];
  for (const e of events) {
    if (e.position > until) break;
    if (e.position !== position + 1) throw new CorruptLogError(position + 1, `expected position ${position + 1}, got ${e.position}`);
    if (e.prevHash !== hash) throw new CorruptLogError(e.position, 'previous-hash link broken');
    position = e.position;
    hash = e.hash;
    run.push(e);
    if (run.length === FOLD_RUN_EVENTS) {
      state = evolveRun(projection, state, run, 0, run.length);
      run = [];
    }
  }
  if (run.length > 0) state = evolveRun(projection, state, run, 0, run.length);
  return { state, position, hash };
}

/**
 * The state of `projection` as of log position `position`: the fold of events 1..position,
 * started from the newest snapshot at or before it that verifies (its hash, and the hash of the
 * log event it claims to follow). Snapshots that do not verify are ignored.
 */
export function stateAt<S>(events: EventRange, projection: Projection<S>, position: number, snapshots?: SnapshotStore): StateAt<S> {
  if (!Number.isInteger(position) || position < 0) throw new ValidationError(`position must be an integer ≥ 0, got ${String(position)}`, 'R-6');
  let start = { state: projection.initialState, position: 0, hash: GENESIS_HASH };
  let fromSnapshot = 0;
  if (snapshots && position > 0) {
    for (const s of snapshots.candidates(projection.name, position)) {
      const state = openSnapshot<S>(s);
      if (state === null) continue;
      // The snapshot must belong to this log: the event at its position has the hash it names.
      const anchor = first(events(s.position, s.position));
      if (!anchor || anchor.position !== s.position || anchor.hash !== s.eventHash) continue;
      start = { state, position: s.position, hash: s.eventHash };
      fromSnapshot = s.position;
      break;
    }
  }
  const end = start.position < position ? foldEvents(projection, start, events(start.position + 1, position), position) : start;
  if (end.position !== position) throw new NotFoundError(`position ${position} is beyond the end of the log (${end.position})`);
  return { state: end.state, position, fromSnapshot };
}

function first<T>(items: Iterable<T>): T | undefined {
  for (const item of items) return item;
  return undefined;
}
