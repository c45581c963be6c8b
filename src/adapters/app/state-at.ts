import { CorruptLogError, NotFoundError, ValidationError } from '../../events/errors.js';
import { graphSha256 } from '../../projections/graph.js';
import { GENESIS_HASH } from '../../events/hash.js';
import type { EventLog } from '../../events/event-log.js';
import { positionOfRevision, type BuildState } from '../../projections/build-state.js';
import { buildProjection } from '../../projections/build-projection.js';
import type { Projection } from '../../projections/projection.js';
import { openSnapshot, type SnapshotStore } from '../../projections/snapshots.js';
import { SqliteSnapshotStore } from '../../projections/snapshot-store.js';
import { foldEvents, startingPoints, type FoldPoint } from '../../projections/time-travel.js';
import { readPages } from '../log/paging.js';
import type { BuildSession } from '../session.js';

export type TimePoint = { at: number } | { revision: number } | { checkpoint: string } | { now: true };

/**
 * What time travel reads: the build state at the log's head, the log, and the local snapshots.
 * `whole`: the state keeps the whole history (false: a view, buildView — the positions of graph
 * revisions before the current one are not in it, so `--revision` needs a whole state).
 */
export interface TimeSource {
  readonly state: BuildState;
  readonly whole: boolean;
  readonly log: EventLog;
  readonly snapshots: SnapshotStore;
}

/** The time source of an open build session (its controller's state is whole). */
export const sessionTimeSource = (s: BuildSession): TimeSource => ({ state: s.controller.current, whole: true, log: s.log, snapshots: new SqliteSnapshotStore(s.projections.db) });

/** The build state as of a point: a position, a graph revision, or a checkpoint. */
export async function stateAsOf(s: TimeSource, point: TimePoint): Promise<BuildState> {
  const current = s.state;
  let position: number;
  if ('now' in point) return current;
  if ('at' in point) {
    position = point.at;
    if (!Number.isInteger(position) || position < 0) throw new ValidationError(`--at must be a position ≥ 0, got ${position}`, 'R-6');
    if (position > current.position) throw new NotFoundError(`position ${position} is beyond the end of the log (${current.position})`);
  } else if ('revision' in point) {
    if (!s.whole && point.revision !== current.graphRevision) throw new Error('a graph revision needs the whole build state (open it with whole: true)');
    const p = positionOfRevision(current, point.revision);
    if (p === undefined) throw new NotFoundError(`graph revision ${point.revision} does not exist (the graph is at revision ${current.graphRevision})`);
    position = p;
  } else {
    const c = current.checkpoints[point.checkpoint];
    if (!c) throw new NotFoundError(`no checkpoint for milestone '${point.checkpoint}' (checkpoints: ${Object.keys(current.checkpoints).join(', ') || 'none'})`);
    position = c.position;
  }
  if (position === current.position) return current;
  return stateAtPosition(s.log, position, s.snapshots);
}

/**
 * The build state at `position`, from the newest snapshot that verifies (a view first), checked
 * against the graph SHA-256 the log recorded for its revision; a forged or stale snapshot
 * is passed over for the log itself (`verify` names the snapshot).
 */
export async function stateAtPosition(log: EventLog, position: number, snapshots: SnapshotStore): Promise<BuildState> {
  const fast = await stateAtFromLog(log, buildProjection, position, snapshots);
  if (await graphAsRecorded(log, fast)) return fast;
  const folded = await stateAtFromLog(log, buildProjection, position, { candidates: () => [], put() {}, clear() {} });
  if (!(await graphAsRecorded(log, folded))) throw new CorruptLogError(position, `the graph folded from the log differs from the SHA-256 the log recorded for revision ${folded.graphRevision}; run \`longbuild verify\``);
  return folded;
}

/** The state's graph is the one its revision's event recorded (builds from before graph records pass). */
async function graphAsRecorded(log: EventLog, state: BuildState): Promise<boolean> {
  if (state.graphRevision === 0) return true;
  const at = positionOfRevision(state, state.graphRevision);
  const [e] = at === undefined ? [] : await log.readAll({ from: at, limit: 1 });
  const [first] = await log.readAll({ from: 1, limit: 1 });
  if ((first?.data as { signing?: unknown } | undefined)?.signing === undefined) return true;
  const recorded = (e?.metadata as { graph?: { revision: number; sha256: string } } | undefined)?.graph;
  return recorded !== undefined && recorded.revision === state.graphRevision && recorded.sha256 === graphSha256(state.nodes);
}

/**
 * `stateAt` over the async log port, so time travel works on any backend: start from the
 * newest local snapshot that verifies — its own hash, and the hash of the log event it claims to
 * follow — then fold the log's pages up to `position`.
 */
async function stateAtFromLog<S>(log: EventLog, projection: Projection<S>, position: number, snapshots: SnapshotStore): Promise<S> {
  let at: FoldPoint<S> = { state: projection.initialState, position: 0, hash: GENESIS_HASH };
  if (position > 0) {
    for (const snap of startingPoints(snapshots, projection as Projection<unknown>, position)) {
      const state = openSnapshot<S>(snap);
      if (state === null) continue;
      const anchor = (await log.readAll({ from: snap.position, limit: 1 }))[0];
      if (!anchor || anchor.position !== snap.position || anchor.hash !== snap.eventHash) continue;
      at = { state, position: snap.position, hash: snap.eventHash, owned: true };
      break;
    }
  }
  for await (const page of readPages(log, at.position + 1, position)) at = foldEvents(projection, at, page, position);
  if (at.position !== position) throw new NotFoundError(`position ${position} is beyond the end of the log (${at.position})`);
  return at.state;
}
