import { NotFoundError, UsageError, ValidationError } from '../../events/errors.js';
import type { BuildState } from '../../projections/build-state.js';
import { buildProjection } from '../../projections/build-projection.js';
import { SqliteSnapshotStore } from '../../projections/snapshots.js';
import { stateAt } from '../../projections/time-travel.js';
import type { BuildSession } from '../session.js';

export type TimePoint = { at: number } | { revision: number } | { checkpoint: string } | { now: true };

/** The build state as of a point (R-6): a position, a graph revision, or a checkpoint. */
export function stateAsOf(s: BuildSession, point: TimePoint): BuildState {
  const current = s.controller.current;
  let position: number;
  if ('now' in point) return current;
  if ('at' in point) {
    position = point.at;
    if (!Number.isInteger(position) || position < 0) throw new ValidationError(`--at must be a position ≥ 0, got ${position}`, 'R-6');
    if (position > current.position) throw new NotFoundError(`position ${position} is beyond the end of the log (${current.position})`);
  } else if ('revision' in point) {
    const p = current.revisionPositions[String(point.revision)];
    if (p === undefined) throw new NotFoundError(`graph revision ${point.revision} does not exist (the graph is at revision ${current.graphRevision})`);
    position = p;
  } else {
    const c = current.checkpoints[point.checkpoint];
    if (!c) throw new NotFoundError(`no checkpoint for milestone '${point.checkpoint}' (checkpoints: ${Object.keys(current.checkpoints).join(', ') || 'none'})`);
    position = c.position;
  }
  if (position === current.position) return current;
  const snapshots = new SqliteSnapshotStore(s.projections.db);
  return stateAt((from) => s.log.iterateAll(from), buildProjection, position, snapshots).state;
}

/** Parse --at / --revision / --checkpoint (at most one). */
export function timePointFromFlags(flags: Readonly<Record<string, unknown>>): TimePoint {
  const given = ['at', 'revision', 'checkpoint'].filter((f) => flags[f] !== undefined);
  if (given.length > 1) throw new UsageError(`give at most one of --at, --revision, --checkpoint (got ${given.map((g) => `--${g}`).join(', ')})`);
  if (typeof flags.at === 'number') return { at: flags.at };
  if (typeof flags.revision === 'number') return { revision: flags.revision };
  if (typeof flags.checkpoint === 'string') return { checkpoint: flags.checkpoint };
  return { now: true };
}
