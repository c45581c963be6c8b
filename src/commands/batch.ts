/**
 * Batch integration planning, pure. With `maxBatch > 1` the controller lets a compatible
 * wave build up — independent ready nodes (a ready node's dependencies are all accepted, so
 * nodes ready together never depend on each other), each worker starting from the same head
 * because nothing is promoted meanwhile — and integrates the committed candidates as ONE job:
 * applied together, verified once, promoted with one compare-and-set. A failed batch job is
 * split in two halves (BatchSplit); the halves are integrated in order, so bisection finds the
 * culprit while every passing member is promoted. With `maxBatch` 1 nothing here applies.
 */
import { compareCodePoints } from '../events/canonical.js';
import type { DataOf } from '../events/catalogue.js';
import type { BuildState, JobRecord } from '../projections/build-state.js';
import { activeMilestone, rankReadyWave } from '../projections/graph.js';

/** True when the build integrates compatible waves as batches (settings.maxBatch > 1). */
export function isBatchMode(state: Pick<BuildState, 'build'>): boolean {
  return (state.build?.settings.maxBatch ?? 1) > 1;
}

/** True when the active milestone still has a node to dispatch (revising, or queued and ready). */
export function hasDispatchable(state: BuildState): boolean {
  const active = activeMilestone(state);
  if (active === null) return false;
  for (const id in state.nodes) {
    const n = state.nodes[id]!;
    if (n.milestone === active && n.state === 'revising') return true;
  }
  return rankReadyWave(state).length > 0;
}

/** True when a node of the active milestone has a worker running (several workers in flight). */
function hasRunning(state: BuildState): boolean {
  const active = activeMilestone(state);
  for (const id in state.nodes) if (state.nodes[id]!.milestone === active && state.nodes[id]!.state === 'running') return true;
  return false;
}

/**
 * The node ids to integrate as one job now, or null (dispatch first, or not in batch mode).
 * Order: the next half a split left behind; else the validating candidates (by id, at most
 * maxBatch) once the batch is full or nothing else of the wave can be dispatched. `busy`: nodes
 * of jobs still open (speculative integration), never in a second job.
 */
export function batchGroup(state: BuildState, busy: ReadonlySet<string> = new Set()): string[] | null {
  if (!isBatchMode(state)) return null;
  const queued = state.batchQueue[0];
  if (queued !== undefined) return queued.some((id) => busy.has(id)) ? null : [...queued];
  // Candidates of jobs still open (speculative integration) are not integrated twice.
  const validating = Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'validating' && !busy.has(id)).sort(compareCodePoints);
  if (validating.length === 0) return null;
  const max = state.build!.settings.maxBatch;
  // A wave still building up (a node to dispatch, or one whose worker is still running) waits.
  if (validating.length < max && (hasDispatchable(state) || hasRunning(state))) return null;
  return validating.slice(0, max);
}

/** The two halves of a failed batch (first half rounded up), order kept. */
export function splitHalves(nodeIds: readonly string[]): [string[], string[]] {
  const mid = Math.ceil(nodeIds.length / 2);
  return [nodeIds.slice(0, mid), nodeIds.slice(mid)];
}

/** True when a failed job should be split rather than blamed: batch mode and more than one member. */
export function shouldSplit(state: Pick<BuildState, 'build'>, job: Pick<JobRecord, 'nodeIds'>): boolean {
  return isBatchMode(state) && job.nodeIds.length > 1;
}

/** The BatchSplit event data for a failed batch job. */
export function splitData(state: Pick<BuildState, 'graphRevision'>, job: JobRecord, reason: string): DataOf<'BatchSplit'> {
  return {
    jobId: job.jobId,
    nodeIds: [...job.nodeIds],
    halves: splitHalves(job.nodeIds),
    reason,
    evidenceSha256: job.verification!.evidenceSha256,
    graphRevision: state.graphRevision,
  };
}
