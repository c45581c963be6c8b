/**
 * The viewer's event index: what the page lists, filters and marks on its timeline,
 * read from each stored event. Pure: no I/O.
 */
import type { StoredEvent } from '../../events/envelope.js';

/** A SHA-256 as the log and the evidence store write it. */
export const HEX64 = /^[0-9a-f]{64}$/;
const GIT_SHA = /^[0-9a-f]{40}$/;

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

/** The last point of each bucket of positions, so a long build's line stays small. */
export function sampleSpend(points: readonly SpendPoint[], head: number, buckets: number): SpendPoint[] {
  if (points.length <= buckets) return [...points];
  const width = Math.max(1, head / buckets);
  return points.filter((p, i) => i === points.length - 1 || Math.floor(points[i + 1]!.position / width) !== Math.floor(p.position / width));
}

/** The timeline is drawn this many buckets wide: more marks than that cannot be told apart. */
export const MARK_BUCKETS = 2000;

/** At most one mark of each kind per bucket of positions (the first), so a 100k-event log's timeline stays small. */
export function sampleMarks(marks: readonly Mark[], head: number, buckets: number): Mark[] {
  if (marks.length <= buckets) return [...marks];
  const width = Math.max(1, head / buckets);
  const seen = new Set<string>();
  return marks.filter((m) => {
    const key = `${m.kind}:${Math.floor(m.position / width)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A short line for the list: what happened, to what. */
export function textOf(e: StoredEvent, nodes: readonly string[]): string {
  const d = e.data as Record<string, any>;
  const bits = [
    d.attemptId, d.jobId, d.runId, d.callId, d.outcome, d.passed === true ? 'passed' : d.passed === false ? 'failed' : undefined, d.reason,
  ].filter((x): x is string => typeof x === 'string');
  return [...bits, ...nodes.slice(0, 6)].join(' ').slice(0, 200);
}

/** Every string leaf of an event's data with its path (`evidence[0].stdoutSha256`). */
function stringLeaves(e: StoredEvent): { path: string; value: string }[] {
  const out: { path: string; value: string }[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, path === '' ? k : `${path}.${k}`);
    else if (typeof v === 'string') out.push({ path, value: v });
  };
  walk(e.data, '');
  return out;
}

/**
 * Every SHA-256 in an event that names a file of the evidence store, with where it sits (stdout
 * before stderr of one command): commands' output, and the tests' files (R-52) — passing ids, a
 * report file, the hold-out's output.
 */
export function evidenceRefs(e: StoredEvent): { path: string; sha256: string }[] {
  const named = (path: string): boolean => /(stdout|stderr|passing|report)Sha256$/.test(path) || /^tests\.holdout\.evidence\[\d+\]$/.test(path);
  const out = stringLeaves(e).filter((l) => HEX64.test(l.value) && named(l.path)).map((l) => ({ path: l.path, sha256: l.value }));
  const prefix = (p: string): string => p.replace(/std(out|err)Sha256$/, '');
  const order = [...new Set(out.map((r) => prefix(r.path)))];
  const key = (r: { path: string }): number => order.indexOf(prefix(r.path)) * 2 + (r.path.endsWith('stdoutSha256') ? 0 : 1);
  return out.sort((a, b) => key(a) - key(b));
}

/** Git SHAs an event names (commits, trees, heads), with where they sit. */
export function gitRefs(e: StoredEvent): { path: string; sha: string }[] {
  return stringLeaves(e).filter((l) => GIT_SHA.test(l.value)).map((l) => ({ path: l.path, sha: l.value }));
}
