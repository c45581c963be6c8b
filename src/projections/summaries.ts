/**
 * Summary nodes: the fold of a compaction and lookups from compacted node ids to the
 * summary that stands for them now. Pure; no I/O.
 */
import type { Draft } from 'immer';
import type { CompactionSummary, DataOf } from '../events/catalogue.js';
import type { BuildState } from './build-state.js';

/** One summary ever made. `absorbedBy` names the later summary that absorbed it (history stays). */
export interface SummaryRecord {
  readonly summaryId: string;
  readonly sha256: string;
  readonly summary: CompactionSummary;
  /** Log position of the MilestoneCompacted event. */
  readonly position: number;
  readonly absorbedBy: string | null;
}

type Summaries = Readonly<Record<string, SummaryRecord>>;

// Index compacted node id -> summary id, built once per summaries object (immer keeps it identical
// until the next compaction), so renewals do not rescan every summary for every dependency. A
// fold in place adds to the same object: summaries are only ever added (a summary's compacted
// ids never change), so the index is rebuilt when the count of summaries moved.
const indexCache = new WeakMap<Summaries, { count: number; index: Map<string, string> }>();

function compactedIndex(summaries: Summaries): Map<string, string> {
  const count = Object.keys(summaries).length;
  let cached = indexCache.get(summaries);
  if (!cached || cached.count !== count) {
    const index = new Map<string, string>();
    for (const id in summaries) for (const nodeId of summaries[id]!.summary.compactedNodeIds) index.set(nodeId, id);
    indexCache.set(summaries, (cached = { count, index }));
  }
  return cached.index;
}

/** The summary that first compacted this node (or this summary id itself), or undefined. */
export function compactedInto(summaries: Summaries, nodeId: string): string | undefined {
  if (summaries[nodeId]) return nodeId;
  return compactedIndex(summaries).get(nodeId);
}

/**
 * The live (not absorbed) summary node that stands for a compacted node or an absorbed summary
 * now, or undefined when the id was never compacted.
 */
export function liveSummaryOf(summaries: Summaries, nodeId: string): string | undefined {
  let id = compactedInto(summaries, nodeId);
  for (let hops = 0; id !== undefined && hops < 1_000_000; hops++) {
    const next = summaries[id]?.absorbedBy ?? null;
    if (next === null) return id;
    id = next;
  }
  return id;
}

/** The milestone ids that already have a summary (compacted milestones). */
export function summaryOfMilestone(summaries: Summaries, milestoneId: string): SummaryRecord | undefined {
  for (const id in summaries) if (summaries[id]!.summary.milestoneId === milestoneId) return summaries[id];
  return undefined;
}

/**
 * Fold a compaction: drop the compacted nodes and absorbed summaries, add the read-only,
 * accepted summary node, and point every remaining dependency on removed work at it.
 */
export function applyCompaction(draft: Draft<BuildState>, d: DataOf<'MilestoneCompacted'>, position: number): void {
  const removed = new Set([...d.summary.compactedNodeIds, ...d.summary.absorbedSummaryIds]);
  for (const id of removed) delete draft.nodes[id];
  for (const id in draft.nodes) {
    const n = draft.nodes[id]!;
    if (!n.deps.some((dep) => removed.has(dep))) continue;
    n.deps = [...new Set(n.deps.map((dep) => (removed.has(dep) ? d.summaryId : dep)))];
  }
  draft.nodes[d.summaryId] = {
    id: d.summaryId, kind: 'read-only', deps: [], milestone: d.summary.milestoneId, state: 'accepted',
    attempts: 0, commit: null, receiptJobId: null, summary: true,
  };
  for (const id of d.summary.absorbedSummaryIds) {
    const earlier = draft.summaries[id];
    if (earlier) earlier.absorbedBy = d.summaryId;
  }
  draft.summaries[d.summaryId] = { summaryId: d.summaryId, sha256: d.summarySha256, summary: d.summary, position, absorbedBy: null };
  draft.pendingCompactions = draft.pendingCompactions.filter((m) => m !== d.summary.milestoneId);
  // The live nodes keep their plans' order (R-10, R-22); compacted ones leave the index.
  if (draft.topoIndex) for (const id of removed) delete draft.topoIndex[id];
}
