/**
 * An independent reading of a build log (issue 15), written apart from src/projections and meant
 * to be checked by eye: the UNCOMPACTED graph the log describes — every node ever planned, with
 * the dependencies it was planned with, a compacted node staying in place as accepted, a summary
 * added as one more accepted node — and the ranked ready wave after every event (ready-oracle.ts).
 * Compaction must be invisible here: a compacted run's ready waves equal this graph's.
 */
import type { StoredEvent } from '../../src/events/envelope.js';
import { oracleReadyWave } from './ready-oracle.js';

interface OracleNode { deps: string[]; milestone: string; state: string; plan: number }

export interface OracleReading {
  /** The ready wave after each event (index i: after events[i]). */
  readonly waves: string[][];
  /** Node id -> its planned dependencies (the uncompacted graph). */
  readonly plannedDeps: ReadonlyMap<string, readonly string[]>;
  /** Compacted node or absorbed summary -> the summary that holds it now (after the last event). */
  readonly heldBy: ReadonlyMap<string, string>;
  /**
   * The live graph after the last event (issue 18): every node no summary holds, its planned
   * dependencies each replaced by the summary that holds it now (once each).
   */
  readonly live: ReadonlyMap<string, readonly string[]>;
  /** The horizon after the last event: detailed milestone ids, coarse ones, and the checkpointed ones. */
  readonly horizon: { readonly detailed: readonly string[]; readonly coarse: readonly string[]; readonly checkpointed: readonly string[] } | null;
}

export function readLog(events: readonly StoredEvent[]): OracleReading {
  const nodes: Record<string, OracleNode> = {};
  let detailed: string[] = [];
  let coarse: string[] = [];
  let sealed = false;
  const checkpointed = new Set<string>();
  const heldBy = new Map<string, string>();
  const waves: string[][] = [];
  let plans = 0;
  const set = (ids: readonly string[], state: string) => {
    for (const id of ids) if (nodes[id]) nodes[id]!.state = state;
  };
  for (const e of events) {
    const d = e.data as any;
    switch (e.type) {
      case 'HorizonSealed':
      case 'HorizonRenewed':
        detailed = d.detailed.map((m: { id: string }) => m.id);
        coarse = d.coarse.map((m: { id: string }) => m.id);
        sealed = true;
        plans += 1;
        for (const n of d.nodes) if (!nodes[n.id] && !heldBy.has(n.id)) nodes[n.id] = { deps: [...n.deps], milestone: n.milestone, state: n.accepted === true ? 'accepted' : 'queued', plan: plans };
        break;
      case 'AttemptStarted':
        set([d.nodeId], 'running');
        break;
      case 'AttemptFinished':
        set([d.nodeId], d.outcome === 'recorded' ? 'accepted' : d.outcome === 'committed' ? 'validating' : 'failed');
        break;
      case 'IntegrationPromoted':
        set(d.receipt.nodeIds, 'accepted');
        break;
      case 'IntegrationFailed':
        set(d.nodeIds, 'failed');
        break;
      case 'NodeRetried':
        set([d.nodeId], 'failed');
        break;
      case 'NodeCanceled':
        set([d.nodeId], 'canceled');
        break;
      case 'CheckpointWritten':
        checkpointed.add(d.checkpoint.milestoneId);
        break;
      case 'MilestoneCompacted':
        nodes[d.summaryId] = { deps: [], milestone: d.summary.milestoneId, state: 'accepted', plan: 0 };
        for (const id of [...d.summary.compactedNodeIds, ...d.summary.absorbedSummaryIds]) heldBy.set(id, d.summaryId);
        break;
    }
    waves.push(oracleReadyWave(nodes, detailed, checkpointed));
  }
  // What a node held by an absorbed summary is held by now: follow absorptions to the live summary.
  const live = (id: string): string => (heldBy.has(id) ? live(heldBy.get(id)!) : id);
  const now = new Map([...heldBy.keys()].map((id) => [id, live(id)]));
  const liveGraph = new Map(Object.entries(nodes).filter(([id]) => !heldBy.has(id)).map(([id, n]) => [id, [...new Set(n.deps.map(live))]]));
  return {
    waves, plannedDeps: new Map(Object.entries(nodes).map(([id, n]) => [id, n.deps])), heldBy: now, live: liveGraph,
    horizon: sealed ? { detailed, coarse, checkpointed: [...checkpointed] } : null,
  };
}
