import { current } from 'immer';
import type { JsonValue } from '../events/canonical.js';
import type { DomainEvent } from '../events/catalogue.js';
import type { StoredEvent } from '../events/envelope.js';
import { evolveBuild, evolveBuildRun, type BuildState } from './build-state.js';
import { FOLD_RUN_EVENTS } from './projection.js';
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
 * folding in runs (one immer draft per run, the draft read after each event). Builds
 * from before graph records (no signing key recorded) are not held to it. Returns the first
 * problem, or null.
 */
export function graphRecordProblems(events: Iterable<StoredEvent>, initial: BuildState): { position: number; problem: string } | null {
  let state = initial;
  let required = false;
  let revision = initial.graphRevision;
  let found: { position: number; problem: string } | null = null;
  let run: StoredEvent[] = [];
  const fold = (): void => {
    state = evolveBuildRun(state, run, (draft, e) => {
      if (found !== null) return;
      if (e.type === 'BuildInitialized') required = (e.data as { signing?: unknown }).signing !== undefined;
      const recorded = (e.metadata as { graph?: Partial<GraphRecord> }).graph;
      const changed = draft.graphRevision !== revision;
      revision = draft.graphRevision;
      if (!required) return;
      let problem: string | null = null;
      if (!changed) problem = recorded === undefined ? null : `records graph revision ${String(recorded.revision)}, but it does not change the graph`;
      else if (recorded === undefined) problem = `makes graph revision ${revision} but records no graph SHA-256`;
      else if (recorded.revision !== revision) problem = `records graph revision ${String(recorded.revision)}, but the fold makes revision ${revision}`;
      else {
        // A plain copy of the drafted nodes: unchanged node records are the originals, so the
        // per-node JSON cache of graphSha256 serves them.
        const sha = graphSha256(current(draft.nodes) as BuildState['nodes']);
        if (recorded.sha256 !== sha) problem = `records graph ${String(recorded.sha256).slice(0, 16)}… for revision ${revision}, but the graph reconstructed from the log is ${sha.slice(0, 16)}…`;
      }
      if (problem !== null) found = { position: e.position, problem: `${e.type} ${problem}` };
    });
    run = [];
  };
  for (const e of events) {
    run.push(e);
    if (run.length === FOLD_RUN_EVENTS) fold();
    if (found !== null) return found;
  }
  if (run.length > 0) fold();
  return found;
}
