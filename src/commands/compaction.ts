/**
 * Replay-safe graph compaction: one checkpointed milestone and its accepted-only
 * ancestors become one content-addressed, read-only summary node. Pure decider: it reads the
 * folded state and returns the event data to append, the existing summary (exact replay), or a
 * refusal naming the rule and the reason.
 */
import { compareCodePoints } from '../events/canonical.js';
import { canonicalSha256 } from '../events/hash.js';
import type { CompactionSummary, DataOf } from '../events/catalogue.js';
import type { StoredEvent } from '../events/envelope.js';
import { attemptOf, evolveBuild, jobOf, type BuildState, type NodeRecord } from '../projections/build-state.js';
import { graphSha256, rankReadyWave, readyListBytes } from '../projections/graph.js';
import { summaryOfMilestone, wholeSummary, type SummaryRecord } from '../projections/summaries.js';
import { attemptIdOf } from './call-ids.js';
import { refuse, type Refusal } from './refusal.js';

export type CompactionVerdict =
  | { readonly ok: true; readonly replay: false; readonly data: DataOf<'MilestoneCompacted'> }
  | { readonly ok: true; readonly replay: true; readonly summaryId: string; readonly record: SummaryRecord }
  | Refusal;


/** The content-addressed id of a summary: `summary-` and the first 16 hex of its canonical SHA-256. */
// The literal, not SUMMARY_ID_PREFIX: events/ids.ts brings zod, which reading commands never load (decision 0022).
export const summaryIdOf = (summarySha256: string): string => `summary-${summarySha256.slice(0, 16)}`;

/**
 * Decide the compaction of `milestoneId`. Refused when the milestone has no
 * checkpoint, when an included node is not accepted, retry-relevant or evidence-incomplete, or
 * when the ranked ready list would not stay byte-identical. A milestone already compacted returns
 * its existing summary (exact replay: no new event, no new graph revision).
 */
export function compactMilestone(state: BuildState, milestoneId: string, completedAt: string): CompactionVerdict {
  const existing = summaryOfMilestone(state.summaries, milestoneId);
  if (existing) return { ok: true, replay: true, summaryId: existing.summaryId, record: existing };
  const cp = state.checkpoints[milestoneId];
  if (!cp) return refuse('R-21', `milestone '${milestoneId}' has no checkpoint; compaction is derived from an immutable milestone checkpoint`);

  // The milestone's nodes and, transitively, everything they depend on; summaries met on the way are absorbed.
  const included = new Set<string>();
  const absorbed = new Set<string>();
  const stack: string[] = [];
  for (const id in state.nodes) {
    const n = state.nodes[id]!;
    if (n.milestone === milestoneId && !n.summary) stack.push(id);
  }
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (included.has(id)) continue;
    included.add(id);
    for (const dep of state.nodes[id]!.deps) {
      const d = state.nodes[dep];
      if (!d) return refuse('R-21', `node '${id}' depends on '${dep}', which is not in the graph; its lineage cannot be summarised`);
      if (d.summary) absorbed.add(dep);
      else if (!included.has(dep)) stack.push(dep);
    }
  }

  const problem = includedProblem(state, milestoneId, included);
  if (problem) return refuse('R-22', problem);

  // Who still consumes what: dependencies of the nodes that stay.
  const consumers = new Map<string, string[]>();
  for (const id in state.nodes) {
    if (included.has(id)) continue;
    for (const dep of state.nodes[id]!.deps) {
      let list = consumers.get(dep);
      if (!list) consumers.set(dep, (list = []));
      list.push(id);
    }
  }
  // An earlier summary nothing depends on any more is absorbed too: it loses no edge, and the
  // active graph keeps one summary per live boundary instead of one per milestone ever built.
  for (const id in state.nodes) {
    if (state.nodes[id]!.summary && !consumers.has(id)) absorbed.add(id);
  }
  for (const id of absorbed) consumers.delete(id); // absorbed summaries' consumers are carried below

  const summary = summarise(state, milestoneId, completedAt, included, absorbed, consumers);
  const summarySha256 = canonicalSha256(summary);
  const summaryId = summaryIdOf(summarySha256);
  if (state.nodes[summaryId] || state.summaries[summaryId]) return refuse('R-21', `summary id '${summaryId}' is already taken`);
  const data: DataOf<'MilestoneCompacted'> = { summaryId, summarySha256, summary, graphRevision: state.graphRevision };

  // the ordered ready list after the event we would append must be byte-identical.
  const before = readyListBytes(rankReadyWave(state));
  const after = readyListBytes(rankReadyWave(evolveBuild(state, eventFor(state, data, completedAt))));
  if (before !== after) {
    return refuse('R-22', `compacting '${milestoneId}' would change the ordered ready list from ${before} to ${after}`);
  }
  return { ok: true, replay: false, data };
}

/** The first reason an included node cannot be compacted, or null. */
function includedProblem(state: BuildState, milestoneId: string, included: ReadonlySet<string>): string | null {
  for (const id of [...included].sort(compareCodePoints)) {
    const n = state.nodes[id]!;
    const where = n.milestone === milestoneId ? `of milestone '${milestoneId}'` : `(an ancestor, milestone '${n.milestone}')`;
    if (n.state !== 'accepted') return `node '${id}' ${where} is ${n.state}; only accepted work is compacted`;
    for (let k = 1; k <= n.attempts; k++) {
      const a = attemptOf(state, attemptIdOf(id, k));
      if (a?.status === 'started') return `node '${id}' ${where} is retry-relevant: attempt ${a.attemptId} is in flight`;
    }
    const last = n.attempts > 0 ? attemptOf(state, attemptIdOf(id, n.attempts)) : undefined;
    if (last?.status === 'failed') return `node '${id}' ${where} is retry-relevant: its last attempt failed and a retry is pending`;
    if (n.kind === 'writable') {
      const job = n.receiptJobId ? jobOf(state, n.receiptJobId) : undefined;
      if (!job?.receipt || !job.receipt.nodeIds.includes(id) || n.commit === null) {
        return `node '${id}' ${where} is evidence-incomplete: a writable node needs a successful integration receipt`;
      }
    } else if (last !== undefined && (last.status !== 'recorded' || last.evidenceSha256 === undefined)) {
      return `node '${id}' ${where} is evidence-incomplete: its last attempt recorded no evidence`;
    }
  }
  for (const jobId of state.openJobs) {
    const job = jobOf(state, jobId)!;
    if (job.nodeIds.some((id) => included.has(id))) {
      return `node '${job.nodeIds.find((id) => included.has(id))}' is retry-relevant: integration ${jobId} is in flight`;
    }
  }
  return null;
}

/**
 * The checkpointed milestone to compact next, or null: the oldest pending one, when
 * the build compacts and the decider accepts it now. A refused one (R-22: an included node is not
 * yet compactable) waits; it is tried again at every step. (The ready list cannot change: R-10 ranks
 * by each plan's own order, which a summary does not touch — the check stays as a guard.)
 */
export function pendingCompaction(state: BuildState): string | null {
  if (!state.build?.settings.compaction) return null;
  const milestoneId = state.pendingCompactions[0];
  if (milestoneId === undefined) return null;
  const verdict = compactMilestone(state, milestoneId, ''); // the time changes the summary, never the verdict
  return verdict.ok && !verdict.replay ? milestoneId : null;
}

/** The R-21 summary record. Sorted everywhere, so its SHA-256 depends on content only. */
function summarise(
  state: BuildState, milestoneId: string, completedAt: string,
  included: ReadonlySet<string>, absorbed: ReadonlySet<string>, consumers: ReadonlyMap<string, string[]>,
): CompactionSummary {
  const cp = state.checkpoints[milestoneId]!;
  const ids = [...included].sort(compareCodePoints);
  const absorbedIds = [...absorbed].sort(compareCodePoints);
  const nodes: NodeRecord[] = ids.map((id) => state.nodes[id]!);
  const contracts: string[] = [];
  const foundations: string[] = [];
  for (const n of nodes) {
    if (n.contract) contracts.push(n.contract);
    if (n.foundation) foundations.push(n.foundation);
  }
  // A live summary carries the versions of all it stands for, so pins and checkpoints see them.
  for (const id of absorbedIds) {
    const r = state.summaries[id];
    const s = r ? wholeSummary(r) : undefined;
    if (s) contracts.push(...s.contracts), foundations.push(...s.foundations);
  }
  const boundary: CompactionSummary['boundary'] = [];
  for (const n of nodes) {
    const by = consumers.get(n.id);
    if (by) boundary.push({ nodeId: n.id, commit: n.kind === 'writable' ? n.commit : null, consumers: [...by].sort(compareCodePoints) });
  }
  // Boundary artifacts of absorbed summaries that remaining work still consumes (through that summary).
  for (const id of absorbedIds) {
    const r = state.summaries[id];
    const s = r ? wholeSummary(r) : undefined;
    for (const b of s?.boundary ?? []) {
      const still = b.consumers.filter((c) => !included.has(c) && state.nodes[c]?.deps.includes(id));
      if (still.length > 0) boundary.push({ ...b, consumers: still });
    }
  }
  boundary.sort((a, b) => compareCodePoints(a.nodeId, b.nodeId));
  return {
    milestoneId,
    checkpoint: { milestoneId, sha256: cp.sha256 },
    graphBefore: { revision: state.graphRevision, sha256: graphSha256(state.nodes) },
    contracts: contracts.sort(compareCodePoints),
    foundations: foundations.sort(compareCodePoints),
    integrationHead: cp.checkpoint.integrationHead,
    acceptedCommits: nodes.filter((n) => n.kind === 'writable' && n.commit !== null).map((n) => ({ nodeId: n.id, commit: n.commit! })),
    boundary,
    evidenceSha256s: evidenceOf(state, included),
    decisions: nodes.filter((n) => n.decision !== undefined).map((n) => ({ nodeId: n.id, decision: n.decision! })),
    completedAt,
    compactedNodeIds: ids,
    absorbedSummaryIds: absorbedIds,
  };
}

/** Every evidence SHA-256 reachable from the included nodes: attempts, verifications, receipts. */
function evidenceOf(state: BuildState, included: ReadonlySet<string>): string[] {
  const out = new Set<string>();
  for (const id of included) {
    const n = state.nodes[id]!;
    for (let k = 1; k <= n.attempts; k++) {
      const sha = attemptOf(state, attemptIdOf(id, k))?.evidenceSha256;
      if (sha) out.add(sha);
    }
  }
  // Each node lists the jobs that included it, so this reads only the included nodes' jobs.
  const jobIds = new Set<string>();
  for (const id of included) for (const jobId of state.nodes[id]!.jobIds ?? []) jobIds.add(jobId);
  for (const jobId of jobIds) {
    const job = jobOf(state, jobId)!;
    if (job.verification) out.add(job.verification.evidenceSha256);
    for (const sha of job.receipt?.evidenceSha256s ?? []) out.add(sha);
  }
  return [...out].sort(compareCodePoints);
}

/** The event as the log would store it, for the fold that checks the ready list (never appended). */
function eventFor(state: BuildState, data: DataOf<'MilestoneCompacted'>, recordedAt: string): StoredEvent {
  return {
    position: state.position + 1, streamId: '', revision: 0, type: 'MilestoneCompacted', schemaVersion: 1,
    data: data as unknown as StoredEvent['data'], metadata: { recordedAt }, prevHash: '', hash: '',
  };
}
