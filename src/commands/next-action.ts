import { compareCodePoints } from '../events/canonical.js';
import { attemptOf, type BuildState } from '../projections/build-state.js';
import { activeMilestone, rankReadyWave } from '../projections/graph.js';
import { batchGroup, isBatchMode } from './batch.js';
import { pendingCompaction } from './compaction.js';

/** What the controller's next event is about, decided from state alone (R-17). */
export type NextAction =
  | { kind: 'uninitialized' }
  | { kind: 'completed' }
  | { kind: 'blocked'; reason: string }
  | { kind: 'plan'; purpose: 'seal' | 'renew'; callId: string; inDoubt: boolean }
  | { kind: 'checkpoint'; milestoneId: string }
  | { kind: 'compact'; milestoneId: string }
  | { kind: 'settle-attempt'; attemptId: string }
  | { kind: 'integrate'; candidates: { nodeId: string; attemptId: string; commit: string }[]; jobId: string }
  | { kind: 'settle-job'; jobId: string }
  | { kind: 'complete' }
  | { kind: 'dispatch'; nodeId: string; attempt: number; attemptId: string }
  | { kind: 'stuck'; reason: string; nodeIds: string[] };

/** Deterministic id of the n-th planner call (the idempotency key of R-18). */
export const plannerCallId = (purpose: 'seal' | 'renew', horizonRevision: number): string => `plan.${purpose}.${horizonRevision}`;

/** Deterministic attempt id: node id and attempt number (both safe for paths and refs). */
export const attemptIdOf = (nodeId: string, attempt: number): string => `${nodeId}.${attempt}`;

/** Deterministic integration job id. */
export const jobIdOf = (state: Pick<BuildState, 'jobCount'>): string => `job-${state.jobCount + 1}`;

/**
 * The controller's decision order (R-17): seal a horizon if none; write a missing checkpoint;
 * recover in-flight work (R-11); renew when the window is exhausted; complete; else dispatch
 * the top of the ranked ready wave (R-12).
 */
export function nextAction(state: BuildState): NextAction {
  if (!state.build) return { kind: 'uninitialized' };
  if (state.completed) return { kind: 'completed' };
  if (state.blocked) return { kind: 'blocked', reason: state.blocked.reason };

  const horizon = state.horizon;
  const revision = horizon?.revision ?? 0;
  const pendingPlan = pendingPlannerCall(state, revision);
  if (!horizon) {
    if (pendingPlan?.status === 'rejected') return { kind: 'blocked', reason: pendingPlan.rejection?.reason ?? 'proposal rejected' };
    return { kind: 'plan', purpose: 'seal', callId: plannerCallId('seal', 0), inDoubt: pendingPlan?.status === 'invoked' };
  }

  for (const m of horizon.detailed) {
    if (state.checkpoints[m.id]) continue;
    const ids = Object.keys(state.nodes).filter((id) => state.nodes[id]!.milestone === m.id);
    if (ids.length > 0 && ids.every((id) => state.nodes[id]!.state === 'accepted')) return { kind: 'checkpoint', milestoneId: m.id };
    if (ids.length === 0) return { kind: 'checkpoint', milestoneId: m.id };
    break; // checkpoints are written in milestone order
  }

  // Perform any missing compaction (R-17, R-21, R-23): before in-flight recovery and any dispatch.
  const compact = pendingCompaction(state);
  if (compact !== null) return { kind: 'compact', milestoneId: compact };

  // In-flight recovery first (R-11): unfinished jobs, then unfinished attempts, then committed candidates.
  // The fold keeps the open ones, oldest first, so recovery never scans the build's history.
  const openJob = [...state.openJobs].sort(compareJobIds)[0];
  if (openJob !== undefined) return { kind: 'settle-job', jobId: openJob };
  const openAttempt = [...state.openAttempts].sort(compareCodePoints)[0];
  if (openAttempt !== undefined) return { kind: 'settle-attempt', attemptId: openAttempt };
  // Batch integration (R-25): a split's next half, or a full (or final) wave, as one job.
  const group = batchGroup(state);
  if (group !== null) {
    const candidates = group.map((nodeId) => {
      const attemptId = attemptIdOf(nodeId, state.nodes[nodeId]!.attempts);
      return { nodeId, attemptId, commit: attemptOf(state, attemptId)!.commit! };
    });
    return { kind: 'integrate', candidates, jobId: jobIdOf(state) };
  }
  const validating = Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'validating').sort(compareCodePoints);
  if (validating.length > 0 && !isBatchMode(state)) {
    const nodeId = validating[0]!;
    const attemptId = attemptIdOf(nodeId, state.nodes[nodeId]!.attempts);
    const attempt = attemptOf(state, attemptId)!;
    return { kind: 'integrate', candidates: [{ nodeId, attemptId, commit: attempt.commit! }], jobId: jobIdOf(state) };
  }

  const active = activeMilestone(state);
  if (active === null) {
    if (horizon.coarse.length > 0) {
      if (pendingPlan?.status === 'rejected') {
        const r = pendingPlan.rejection;
        return { kind: 'blocked', reason: r ? `renewal refused (${r.rule}): ${r.reason}` : 'renewal refused' };
      }
      return { kind: 'plan', purpose: 'renew', callId: plannerCallId('renew', revision), inDoubt: pendingPlan?.status === 'invoked' };
    }
    return { kind: 'complete' };
  }

  const revising = Object.keys(state.nodes)
    .filter((id) => state.nodes[id]!.milestone === active && state.nodes[id]!.state === 'revising')
    .sort(compareCodePoints);
  const next = revising[0] ?? rankReadyWave(state)[0];
  if (next !== undefined) {
    const attempt = state.nodes[next]!.attempts + 1;
    return { kind: 'dispatch', nodeId: next, attempt, attemptId: attemptIdOf(next, attempt) };
  }
  const stuck = Object.keys(state.nodes)
    .filter((id) => state.nodes[id]!.milestone === active && state.nodes[id]!.state !== 'accepted')
    .sort(compareCodePoints);
  return { kind: 'stuck', reason: `milestone '${active}' cannot progress: ${stuck.map((id) => `${id} is ${state.nodes[id]!.state}`).join(', ')}`, nodeIds: stuck };
}

function pendingPlannerCall(state: BuildState, horizonRevision: number) {
  const purpose = horizonRevision === 0 ? 'seal' : 'renew';
  return state.plannerCalls[plannerCallId(purpose, horizonRevision)];
}

function compareJobIds(a: string, b: string): number {
  return Number(a.slice(4)) - Number(b.slice(4)) || compareCodePoints(a, b);
}
