/**
 * Head gates, pure: where a build whose config asks for approval of its checkpoints or of
 * its final head waits for an operator, and what an operator's rejection asks of the planner.
 */
import type { ApprovalGate, DataOf } from '../events/catalogue.js';
import { compareCodePoints } from '../events/canonical.js';
import type { BuildState, ReviewRecord } from '../projections/build-state.js';
import { reviewKey } from '../projections/reviews.js';

/** The gates a build's settings name (absent: none). */
export function gatesOf(state: Pick<BuildState, 'build'>): readonly ApprovalGate[] {
  return state.build?.settings.approve ?? [];
}

/** A head a gate holds the build at: what the operator is asked to approve. */
export interface HeadGate {
  readonly gate: 'checkpoint' | 'land';
  readonly milestoneId?: string;
  readonly head: string;
  /** The ApprovalRequested to record (absent: already recorded). */
  readonly request?: DataOf<'ApprovalRequested'>;
}

function gateAt(state: BuildState, gate: 'checkpoint' | 'land', milestoneId: string | undefined, head: string): HeadGate | null {
  const review = state.reviews?.[reviewKey(gate, milestoneId, head)];
  if (review !== undefined && review.status !== 'requested') return null;
  const at = { gate, ...(milestoneId !== undefined ? { milestoneId } : {}), head };
  return review !== undefined ? at : { ...at, request: { ...at, horizonRevision: state.horizon?.revision ?? 0, graphRevision: state.graphRevision } };
}

/**
 * The first checkpoint of the window in force that waits for an operator (gate `checkpoint`), in
 * checkpoint order, or null. Nothing goes past a checkpoint until it is approved or rejected.
 */
export function checkpointGate(state: BuildState): HeadGate | null {
  if (!gatesOf(state).includes('checkpoint')) return null;
  for (const m of state.horizon?.detailed ?? []) {
    const c = Object.hasOwn(state.checkpoints, m.id) ? state.checkpoints[m.id] : undefined;
    if (c === undefined) return null;
    const gate = gateAt(state, 'checkpoint', m.id, c.checkpoint.integrationHead);
    if (gate !== null) return gate;
  }
  return null;
}

/** The final head waiting for an operator before the build completes (gate `land`), or null. */
export function landGate(state: BuildState): HeadGate | null {
  if (!gatesOf(state).includes('land') || state.integrationHead === null) return null;
  return gateAt(state, 'land', undefined, state.integrationHead);
}

/** Whether `head` may be landed: the build asks no approval of what lands, or an operator approved it. */
export function landApproved(state: BuildState, head: string): boolean {
  return !gatesOf(state).includes('land') || state.reviews?.[reviewKey('land', undefined, head)]?.status === 'approved';
}

/** The newest rejection no renewal or repair window has answered yet, or null. */
export function unansweredRejection(state: BuildState): ReviewRecord | null {
  const revision = state.horizon?.revision ?? 0;
  let newest: ReviewRecord | null = null;
  for (const r of Object.values(state.reviews ?? {})) {
    if (r.status === 'rejected' && r.horizonRevision === revision && (newest === null || r.position > newest.position)) newest = r;
  }
  return newest;
}

/** What a gated head is, in words: `milestone 'm1''s checkpoint at 1a2b3c4d5e6f` or `the final head 1a2b3c4d5e6f`. */
export function describeGate(g: Pick<HeadGate, 'gate' | 'milestoneId' | 'head'>): string {
  return g.gate === 'checkpoint' ? `milestone '${g.milestoneId}''s checkpoint at ${g.head.slice(0, 12)}` : `the final head ${g.head.slice(0, 12)}`;
}

/** Why the build waits at a head gate, and what to do (one line). */
export function headGateReason(g: Pick<HeadGate, 'gate' | 'milestoneId' | 'head'>): string {
  const after = g.gate === 'checkpoint' ? 'the build goes on' : 'the build completes and `longbuild land` may publish it';
  return `${describeGate(g)} awaits your approval: \`longbuild approve --show\` says what changed; \`longbuild approve [--reason TEXT]\` and ${after}, \`longbuild reject --reason TEXT\` has it repaired`;
}

/** The reviews a planner is told of: those of the horizon revision in force, oldest first. */
export function reviewsForPlanner(state: BuildState): { gate: 'checkpoint' | 'land'; milestoneId?: string; head: string; approved: boolean; reason?: string }[] {
  return Object.values(state.reviews ?? {})
    .filter((r) => r.status !== 'requested')
    .sort((a, b) => a.position - b.position || compareCodePoints(a.head, b.head))
    .map((r) => ({ gate: r.gate, ...(r.milestoneId !== undefined ? { milestoneId: r.milestoneId } : {}), head: r.head, approved: r.status === 'approved', ...(r.reason !== undefined ? { reason: r.reason } : {}) }));
}
