import type { JsonValue } from '../events/canonical.js';
import type { DomainEvent } from '../events/catalogue.js';
import type { StoredEvent } from '../events/envelope.js';
import { evolveBuild, evolveBuildInPlace, ownedCopy, type BuildState } from './build-state.js';
import { graphSha256 } from './graph.js';

/** What an event that changes the graph records in its metadata: the revision it makes and its SHA-256. */
export interface GraphRecord {
  readonly revision: number;
  readonly sha256: string;
}

/**
 * The graph record of each of `events` appended after `state` (null for an event that leaves the
 * graph as it is): each event folded in turn, exactly as the projection will fold it.
 */
export function graphRecords(state: BuildState, events: readonly DomainEvent[], recordedAt: string): { records: (GraphRecord | null)[]; states: BuildState[] } {
  let s = state;
  const states: BuildState[] = [];
  const records = events.map((e, i) => {
    const stored = { position: state.position + 1 + i, streamId: '', revision: 0, type: e.type, schemaVersion: 1, data: e.data as JsonValue, metadata: { recordedAt }, prevHash: '', hash: '' } satisfies StoredEvent;
    const next = evolveBuild(s, stored);
    const changed = next.graphRevision !== s.graphRevision;
    s = next;
    states.push(next);
    return changed ? { revision: next.graphRevision, sha256: graphSha256(next.nodes) } : null;
  });
  return { records, states };
}

/**
 * Reconstruct the graph at every revision and check each against the SHA-256 its event recorded
 * the log folded event by event with the controller's own recipe, in place on a private
 * copy (one pass, no earlier state kept, so no immutable copies). Builds from before graph
 * records (no signing key recorded) are not held to it. Returns the first problem, or null.
 */
export function graphRecordProblems(events: Iterable<StoredEvent>, initial: BuildState): { position: number; problem: string } | null {
  const state = ownedCopy(initial);
  let required = false;
  for (const e of events) {
    const before = state.graphRevision;
    evolveBuildInPlace(state, e);
    if (e.type === 'BuildInitialized') required = (e.data as { signing?: unknown }).signing !== undefined;
    if (required) {
      const problem = recordProblem(before, state, (e.metadata as { graph?: Partial<GraphRecord> }).graph);
      if (problem !== null) return { position: e.position, problem: `${e.type} ${problem}` };
    }
  }
  return null;
}

function recordProblem(before: number, after: BuildState, recorded: Partial<GraphRecord> | undefined): string | null {
  const revision = after.graphRevision;
  if (revision === before) return recorded === undefined ? null : `records graph revision ${String(recorded.revision)}, but it does not change the graph`;
  if (recorded === undefined) return `makes graph revision ${revision} but records no graph SHA-256`;
  if (recorded.revision !== revision) return `records graph revision ${String(recorded.revision)}, but the fold makes revision ${revision}`;
  const sha = graphSha256(after.nodes);
  return recorded.sha256 === sha ? null : `records graph ${String(recorded.sha256).slice(0, 16)}… for revision ${revision}, but the graph reconstructed from the log is ${sha.slice(0, 16)}…`;
}
