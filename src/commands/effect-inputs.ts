import type { PlannerInput, VerificationSurfaceInput, WorkPacket } from './ports.js';
import type { AttemptRecord, BuildState } from '../projections/build-state.js';
import { wholeCheckpoint, type NodeFailure } from '../projections/build-records.js';
import { graphSha256 } from '../projections/graph.js';
import { earlierRefusals } from './next-action.js';
import { workerCallKey } from './call-ids.js';
import { acceptanceForPlanner } from './acceptance.js';
import { reviewsForPlanner } from './gates.js';
import type { PlannerPurpose } from './call-ids.js';
import { wholeSummary } from '../projections/summaries.js';

/**
 * What the planner sees for a call (R-14, R-16): request, sealed horizon, the exact checkpoints of
 * its detailed milestones, graph summary. Earlier windows' checkpoints are not repeated: their
 * milestones reach the planner as the graph's summary nodes (R-21), so the input stays bounded
 * while the build is not (decision 0029).
 */
export function plannerInputOf(s: BuildState, purpose: PlannerPurpose, callId: string): PlannerInput {
  const feedback = earlierRefusals(s, purpose, s.horizon?.revision ?? 0, callId);
  // In the window's order, which is the order they were written: one milestone is active at a time.
  const windowCheckpoints = (s.horizon?.detailed ?? []).flatMap((m) => (Object.hasOwn(s.checkpoints, m.id) ? [s.checkpoints[m.id]!] : []));
  return {
    purpose,
    callId,
    request: s.build!.request,
    horizon: s.horizon ? { horizonId: s.horizon.horizonId, revision: s.horizon.revision, detailed: s.horizon.detailed, coarse: s.horizon.coarse } : null,
    checkpoints: windowCheckpoints.map(wholeCheckpoint),
    graph: {
      revision: s.graphRevision,
      sha256: graphSha256(s.nodes),
      nodes: Object.values(s.nodes).map((n) => ({ id: n.id, kind: n.kind, state: n.state, milestone: n.milestone })),
    },
    integrationHead: s.integrationHead!,
    ...(feedback.length > 0 ? { feedback } : {}),
    ...acceptanceInput(s),
    ...reviewsInput(s),
    ...surfaceInput(s),
    ...(s.build ? { windows: { detailed: s.build.settings.detailedWindow, coarse: s.build.settings.coarseWindow } } : {}),
  };
}

/** The operators' reviews of the window's checkpoints and final head (R-60), when there are any. */
function reviewsInput(s: BuildState): Pick<PlannerInput, 'reviews'> {
  const reviews = reviewsForPlanner(s);
  return reviews.length > 0 ? { reviews } : {};
}

/** The verification surface a planner and a worker are told about, when the build has one. */
function surfaceInput(s: BuildState): { verificationSurface?: VerificationSurfaceInput } {
  const t = s.build?.tests;
  return t === undefined ? {} : { verificationSurface: { files: t.surface.files, tests: t.surface.tests, testChanges: t.testChanges } };
}

/** The acceptance runs a planner is told about, with the failing command's evidence files. */
function acceptanceInput(s: BuildState): Pick<PlannerInput, 'acceptance'> {
  const runs = acceptanceForPlanner(s);
  if (runs.length === 0) return {};
  return {
    acceptance: runs.map((r) => {
      const failing = r.status === 'failed' ? r.evidence?.at(-1) : undefined;
      return {
        runId: r.runId, milestoneId: r.milestoneId, head: r.head, passed: r.status === 'passed', ...(r.reason !== undefined ? { reason: r.reason } : {}),
        ...(failing !== undefined ? { evidence: [failing.stdoutSha256, failing.stderrSha256] } : {}),
      };
    }),
  };
}

/** The work packet of an attempt: one node, from the integration head the attempt names. */
export function workPacketOf(s: BuildState, a: AttemptRecord): WorkPacket {
  const node = s.nodes[a.nodeId]!;
  const milestone = [...(s.horizon?.detailed ?? []), ...(s.horizon?.coarse ?? [])].find((m) => m.id === node.milestone);
  const dependencies = node.deps.map((id) => {
    const d = s.nodes[id];
    if (!d) return { id, kind: 'read-only' as const, commit: null };
    // A summary stands for a compacted milestone: what its nodes produced, and the head that holds it.
    const rec = d.summary ? s.summaries[id] : undefined;
    if (rec) {
      const c = wholeSummary(rec);
      return { id, kind: d.kind, commit: c.integrationHead, summary: { milestoneId: c.milestoneId, acceptedCommits: c.acceptedCommits, decisions: c.decisions } };
    }
    return { id, kind: d.kind, commit: d.commit, ...(d.title !== undefined ? { title: d.title } : {}), ...(d.decision !== undefined ? { decision: d.decision } : {}) };
  });
  return {
    attemptId: a.attemptId, idempotencyKey: workerCallKey(s.build!.buildId, a.attemptId), nodeId: a.nodeId, attempt: a.attempt,
    kind: node.kind, milestone: node.milestone, deps: node.deps, ...(node.title !== undefined ? { title: node.title } : {}),
    request: s.build!.request,
    ...(milestone ? { milestoneTitle: milestone.title, ...(milestone.intent !== undefined ? { milestoneIntent: milestone.intent } : {}) } : {}),
    ...(node.description !== undefined ? { description: node.description } : {}),
    ...(node.acceptance !== undefined ? { acceptance: node.acceptance } : {}),
    ...(node.changes !== undefined ? { changes: node.changes } : {}),
    ...(node.retires !== undefined ? { retires: node.retires } : {}),
    ...surfaceInput(s),
    dependencies,
    ...(a.attempt > 1 && node.lastFailure ? { previousFailure: previousFailureOf(node.lastFailure) } : {}),
    baseHead: a.baseHead, branch: a.branch, commitDate: a.commitDate,
  };
}

/** What a retry's packet says of the last failure (the output tail and rework are added where the effect runs). */
function previousFailureOf(f: NodeFailure): NonNullable<WorkPacket['previousFailure']> {
  return { ...(f.attemptId !== undefined ? { attemptId: f.attemptId } : {}), ...(f.jobId !== undefined ? { jobId: f.jobId } : {}), reason: f.reason };
}

/** The previous candidate a retry of this attempt reworks (its attempt branch), or null. */
export function reworkOf(s: BuildState, a: AttemptRecord): { readonly attemptId: string; readonly commit: string } | null {
  const f = s.nodes[a.nodeId]?.lastFailure;
  return a.attempt > 1 && f?.candidate !== undefined ? f.candidate : null;
}
