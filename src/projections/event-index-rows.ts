/**
 * The event index: one row per event of what the viewer lists, filters and marks on its timeline
 * (and the spend line), derived from the event alone. Pure: no I/O. The projection store keeps it
 * in projections.db (event-index-table.ts) so the viewer starts without reading the log.
 */
import type { StoredEvent } from '../events/envelope.js';

/** One row of the event index the page lists and filters (the full event is fetched on demand). */
export interface IndexRow {
  readonly position: number;
  readonly type: string;
  readonly at: string;
  readonly nodes: readonly string[];
  readonly text: string;
}

export type MarkKind = 'revision' | 'checkpoint' | 'compaction' | 'renewal' | 'failure' | 'completed';

export interface Mark { readonly position: number; readonly kind: MarkKind; readonly label: string }

/** The node ids an event is about (for the node filter and the list's text). */
export function nodesOf(e: StoredEvent): string[] {
  const d = e.data as Record<string, unknown>;
  const out = new Set<string>();
  if (typeof d.nodeId === 'string') out.add(d.nodeId);
  if (Array.isArray(d.nodeIds)) for (const id of d.nodeIds) if (typeof id === 'string') out.add(id);
  if (Array.isArray(d.nodes)) for (const n of d.nodes) if (n && typeof (n as { id?: unknown }).id === 'string') out.add((n as { id: string }).id);
  if (typeof d.summaryId === 'string') out.add(d.summaryId);
  const receipt = d.receipt as { nodeIds?: unknown } | undefined;
  if (receipt && Array.isArray(receipt.nodeIds)) for (const id of receipt.nodeIds) if (typeof id === 'string') out.add(id);
  return [...out];
}

/** The marks of one event on the timeline. */
export function marksOf(e: StoredEvent): Mark[] {
  const d = e.data as Record<string, any>;
  const out: Mark[] = [];
  const graph = (e.metadata as { graph?: { revision: number } }).graph;
  if (graph !== undefined) out.push({ position: e.position, kind: 'revision', label: `graph revision ${graph.revision}` });
  switch (e.type) {
    case 'CheckpointWritten': out.push({ position: e.position, kind: 'checkpoint', label: `checkpoint ${d.checkpoint?.milestoneId ?? ''}` }); break;
    case 'MilestoneCompacted': out.push({ position: e.position, kind: 'compaction', label: `${d.summary?.milestoneId ?? ''} compacted into ${d.summaryId}` }); break;
    case 'HorizonRenewed': out.push({ position: e.position, kind: 'renewal', label: `horizon renewed (revision ${d.revision})` }); break;
    case 'AttemptFinished': if (d.outcome === 'failed') out.push({ position: e.position, kind: 'failure', label: `attempt ${d.attemptId} failed` }); break;
    case 'VerificationFinished': if (d.passed === false) out.push({ position: e.position, kind: 'failure', label: `${d.jobId} failed verification` }); break;
    case 'IntegrationFailed': out.push({ position: e.position, kind: 'failure', label: `${d.jobId} failed` }); break;
    case 'AcceptanceFinished': if (d.passed === false) out.push({ position: e.position, kind: 'failure', label: `${d.runId} failed` }); break;
    case 'BuildBlocked': out.push({ position: e.position, kind: 'failure', label: 'build blocked' }); break;
    case 'HeadReviewed': if (d.approved === false) out.push({ position: e.position, kind: 'failure', label: `${d.gate === 'checkpoint' ? `checkpoint ${d.milestoneId ?? ''}` : 'final head'} rejected` }); break;
    case 'BuildCompleted': out.push({ position: e.position, kind: 'completed', label: 'build completed' }); break;
  }
  return out;
}

/** The spend so far (R-58) at an event that recorded a call's usage: the timeline's cumulative line. */
export interface SpendPoint {
  readonly position: number;
  readonly usd: number;
  readonly tokens: number;
}

/** What one event adds to the ledger (as the fold counts it: a fork's adopted result costs nothing), or null. */
export function spendOf(e: StoredEvent): { usd: number; tokens: number } | null {
  if (e.type !== 'PlannerReturned' && e.type !== 'AttemptFinished' && e.type !== 'EffectReinvoked') return null;
  const d = e.data as { usage?: { inputTokens: number; outputTokens: number; costUsd?: number }; reused?: unknown };
  if (d.usage === undefined || d.reused !== undefined) return null;
  return { usd: d.usage.costUsd ?? 0, tokens: d.usage.inputTokens + d.usage.outputTokens };
}

/** A short line for the list: what happened, to what. */
export function textOf(e: StoredEvent, nodes: readonly string[]): string {
  const d = e.data as Record<string, any>;
  const bits = [
    d.attemptId, d.jobId, d.runId, d.callId, d.outcome, d.passed === true ? 'passed' : d.passed === false ? 'failed' : undefined, d.reason,
  ].filter((x): x is string => typeof x === 'string');
  return [...bits, ...nodes.slice(0, 6)].join(' ').slice(0, 200);
}
