/**
 * Summary nodes: the fold of a compaction and lookups from compacted node ids to the
 * summary that stands for them now. Pure; no I/O.
 */
import type { Draft } from 'immer';
import { attemptIdOf } from './build-records.js';
import { shardDelete } from './sharded.js';
import type { CompactionSummary, DataOf } from '../events/catalogue.js';
import type { BuildState } from './build-state.js';
import { recordKeys } from './record-table.js';

/**
 * What the build state keeps of an absorbed summary (decision 0032): what it is, where it stands
 * and what it compacted (the fold and `holdings` read those) — not the lists only a live summary's
 * next compaction, a checkpoint or a worker's packet read (contracts, foundations, commits,
 * boundary, evidence, decisions). The summary that absorbed it carries what still counts of them,
 * and the whole one stays in its MilestoneCompacted event.
 */
export type SummaryHead = Omit<CompactionSummary, 'contracts' | 'foundations' | 'acceptedCommits' | 'boundary' | 'evidenceSha256s' | 'decisions'>;

/** One summary ever made. `absorbedBy` names the later summary that absorbed it (history stays). */
export interface SummaryRecord {
  readonly summaryId: string;
  readonly sha256: string;
  /** The whole summary, as its MilestoneCompacted event carries it, while it is live; its head once absorbed. */
  readonly summary: CompactionSummary | SummaryHead;
  /** Log position of the MilestoneCompacted event. */
  readonly position: number;
  readonly absorbedBy: string | null;
}

type Summaries = Readonly<Record<string, SummaryRecord>>;

/**
 * Compacted node id -> the summary that compacted it (decision 0031). A node is compacted once in
 * a build (R-13 refuses planning a compacted id again), so along one line of states — each the one
 * before plus summaries, never minus — one index serves them all: a state's summaries object is
 * given the index of the one it was folded from (`carrySummaryIndex`) and adds only its new
 * summaries. An entry counts for a state only when that state's own summary of that id lists the
 * node, which also keeps a state folded before a compaction from seeing it. States folded
 * differently from one parent (a fork, a test) share the index too, and a node compacted into
 * different summaries in them keeps every candidate. (The index was rebuilt from every summary at
 * each compaction: O(n²) over a build, ~31 million entries for the renewals of 50,000 nodes.)
 */
type SummaryIndex = Map<string, string | string[]>;

/**
 * The indexes of a summaries object and how many of its summaries (its first keys, in insertion
 * order) they hold: compacted node id -> summary, and milestone id -> summary (what a compaction
 * asks at every decision that may compact; a walk of every summary made that O(n²) over a build).
 */
interface SummaryIndexes {
  count: number;
  readonly index: SummaryIndex;
  readonly byMilestone: SummaryIndex;
}

const indexCache = new WeakMap<Summaries, SummaryIndexes>();

function addToIndex(index: SummaryIndex, summaryId: string, nodeIds: readonly string[]): void {
  for (const nodeId of nodeIds) {
    const had = index.get(nodeId);
    if (had === undefined) index.set(nodeId, summaryId);
    else if (typeof had === 'string') {
      if (had !== summaryId) index.set(nodeId, [had, summaryId]);
    } else if (!had.includes(summaryId)) had.push(summaryId);
  }
}

function summaryIndexes(summaries: Summaries): SummaryIndexes {
  let cached = indexCache.get(summaries);
  const ids = recordKeys(summaries);
  // Summaries are only ever added, after the ones before (ids are never integer-like: insertion
  // order); a fold in place adds to the same object, so count again on every use.
  if (cached === undefined || ids.length < cached.count) indexCache.set(summaries, (cached = { count: 0, index: new Map(), byMilestone: new Map() }));
  for (; cached.count < ids.length; cached.count++) {
    const id = ids[cached.count]!;
    const summary = summaries[id]!.summary;
    addToIndex(cached.index, id, summary.compactedNodeIds);
    addToIndex(cached.byMilestone, id, [summary.milestoneId]);
  }
  return cached;
}

/**
 * Let `next`, folded from `prev` by adding summaries (evolveBuild), use and extend `prev`'s index
 * instead of building its own.
 */
export function carrySummaryIndex(prev: Summaries, next: Summaries): void {
  const cached = indexCache.get(prev);
  // Not from a state without summaries (the initial state is one object every build starts from):
  // there is nothing to share, and its index would gather every build's entries.
  if (cached !== undefined && cached.count > 0 && !indexCache.has(next)) indexCache.set(next, { count: cached.count, index: cached.index, byMilestone: cached.byMilestone });
}

/**
 * Whether this state's summary `summaryId` compacted `nodeId`. Asked of the state's own record, not
 * taken from the shared index: states that share an index may hold different summaries under one
 * id (a log not written by the host; builds in one process), and a fold must not depend on what
 * else was folded.
 */
function holds(summaries: Summaries, summaryId: string, nodeId: string): boolean {
  return Object.hasOwn(summaries, summaryId) && summaries[summaryId]!.summary.compactedNodeIds.includes(nodeId);
}

/** Lookups in one summaries object (see compactedInto, liveSummaryOf). */
export interface SummaryLookups {
  compactedInto(nodeId: string): string | undefined;
  liveSummaryOf(nodeId: string): string | undefined;
}

/**
 * Lookups in `summaries` with its index brought up to date once, for a caller that makes many in
 * a row (a plan's nodes and dependencies): bringing it up to date lists the object's keys.
 */
export function summaryLookups(summaries: Summaries): SummaryLookups {
  const index = summaryIndexes(summaries).index;
  const compacted = (nodeId: string): string | undefined => {
    if (Object.hasOwn(summaries, nodeId)) return nodeId;
    const had = index.get(nodeId);
    if (had === undefined) return undefined;
    if (typeof had === 'string') return holds(summaries, had, nodeId) ? had : undefined;
    return had.find((id) => holds(summaries, id, nodeId));
  };
  return {
    compactedInto: compacted,
    liveSummaryOf(nodeId) {
      let id = compacted(nodeId);
      for (let hops = 0; id !== undefined && hops < 1_000_000; hops++) {
        const next = summaries[id]?.absorbedBy ?? null;
        if (next === null) return id;
        id = next;
      }
      return id;
    },
  };
}

/** The summary that first compacted this node (or this summary id itself), or undefined. */
export function compactedInto(summaries: Summaries, nodeId: string): string | undefined {
  return summaryLookups(summaries).compactedInto(nodeId);
}

/**
 * The live (not absorbed) summary node that stands for a compacted node or an absorbed summary
 * now, or undefined when the id was never compacted.
 */
export function liveSummaryOf(summaries: Summaries, nodeId: string): string | undefined {
  return summaryLookups(summaries).liveSummaryOf(nodeId);
}

/** The head of a summary: what the state keeps of an absorbed one (idempotent). */
export function summaryHeadOf(s: CompactionSummary | SummaryHead): SummaryHead {
  return { milestoneId: s.milestoneId, checkpoint: s.checkpoint, graphBefore: s.graphBefore, integrationHead: s.integrationHead, completedAt: s.completedAt, compactedNodeIds: s.compactedNodeIds, absorbedSummaryIds: s.absorbedSummaryIds };
}

/**
 * A summary whole, as the state keeps the live ones (a compaction, a checkpoint and a worker's
 * packet read them); asking for an absorbed one whole is a bug, refused here.
 */
export function wholeSummary(r: SummaryRecord): CompactionSummary {
  if ('contracts' in r.summary) return r.summary;
  throw new Error(`summary ${r.summaryId} is held as its head only (it was absorbed): read it from its MilestoneCompacted event`);
}

/** The milestone ids that already have a summary (compacted milestones). */
export function summaryOfMilestone(summaries: Summaries, milestoneId: string): SummaryRecord | undefined {
  const had = summaryIndexes(summaries).byMilestone.get(milestoneId);
  // The first of this state's own summaries of that milestone (an index shared with states folded
  // differently may name others): the earliest compaction, as a walk in insertion order finds it.
  let first: SummaryRecord | undefined;
  for (const id of had === undefined ? [] : typeof had === 'string' ? [had] : had) {
    const r = Object.hasOwn(summaries, id) ? summaries[id]! : undefined;
    if (r !== undefined && r.summary.milestoneId === milestoneId && (first === undefined || r.position < first.position)) first = r;
  }
  return first;
}

/**
 * Fold a compaction: drop the compacted nodes and absorbed summaries, add the read-only,
 * accepted summary node, and point every remaining dependency on removed work at it.
 */
export function applyCompaction(draft: Draft<BuildState>, d: DataOf<'MilestoneCompacted'>, position: number): void {
  const removed = new Set([...d.summary.compactedNodeIds, ...d.summary.absorbedSummaryIds]);
  // The attempts of compacted nodes leave the state (decision 0054): no step reads them again;
  // the attempts table keeps their rows, the log their events. An open one (none in a log a
  // correct host wrote: a milestone is checkpointed with every node accepted) stays.
  for (const id of d.summary.compactedNodeIds) {
    const n = draft.nodes[id];
    for (let k = 1; k <= (n?.attempts ?? 0); k++) {
      const attemptId = attemptIdOf(id, k);
      if (!draft.openAttempts.includes(attemptId)) shardDelete(draft.attempts, attemptId);
    }
  }
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
  // An absorbed summary keeps its head (decision 0032): what it compacted and absorbed; its lists
  // live on in the summary that absorbed it, and in its own MilestoneCompacted event.
  for (const id of d.summary.absorbedSummaryIds) {
    const earlier = draft.summaries[id];
    if (earlier) {
      earlier.absorbedBy = d.summaryId;
      earlier.summary = summaryHeadOf(earlier.summary) as Draft<SummaryHead>;
    }
  }
  draft.summaries[d.summaryId] = { summaryId: d.summaryId, sha256: d.summarySha256, summary: d.summary, position, absorbedBy: null };
  draft.pendingCompactions = draft.pendingCompactions.filter((m) => m !== d.summary.milestoneId);
  // The live nodes keep their plans' order (R-10, R-22); compacted ones leave the index.
  if (draft.topoIndex) for (const id of removed) delete draft.topoIndex[id];
}
