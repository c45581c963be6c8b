/**
 * Operators' reviews of gated heads (R-60): a milestone's checkpoint (gate `checkpoint`) and the
 * final head before the build completes (gate `land`). The fold keeps the reviews of the horizon
 * revision in force; a renewal or repair window answers them (it was planned with them as
 * feedback), so the table stays as small as the window.
 */
import type { Draft } from 'immer';
import type { DataOf } from '../events/catalogue.js';
import type { BuildState, ReviewRecord } from './build-state.js';

/** A review's key: the checkpointed milestone, or the head a land gate reviews. */
export function reviewKey(gate: 'checkpoint' | 'land', milestoneId: string | undefined, head: string): string {
  return gate === 'checkpoint' ? `checkpoint:${milestoneId ?? ''}` : `land:${head}`;
}

export function foldApprovalRequested(draft: Draft<BuildState>, d: DataOf<'ApprovalRequested'>, position: number): void {
  const key = reviewKey(d.gate, d.milestoneId, d.head);
  if (draft.reviews?.[key] !== undefined) return; // asked once per gate
  (draft.reviews ??= {})[key] = {
    gate: d.gate, ...(d.milestoneId !== undefined ? { milestoneId: d.milestoneId } : {}), head: d.head, status: 'requested', horizonRevision: d.horizonRevision, position,
  };
}

export function foldHeadReviewed(draft: Draft<BuildState>, d: DataOf<'HeadReviewed'>, position: number): void {
  const key = reviewKey(d.gate, d.milestoneId, d.head);
  (draft.reviews ??= {})[key] = {
    gate: d.gate, ...(d.milestoneId !== undefined ? { milestoneId: d.milestoneId } : {}), head: d.head, status: d.approved ? 'approved' : 'rejected',
    ...(d.reason !== undefined ? { reason: d.reason } : {}), ...(d.operator.user !== undefined ? { user: d.operator.user } : {}), horizonRevision: d.horizonRevision, position,
  };
}

/** A new horizon revision answers the reviews made before it (its planner was told of them). */
export function answerReviews(draft: Draft<BuildState>, revision: number): void {
  if (draft.reviews === undefined) return;
  for (const [key, r] of Object.entries(draft.reviews)) if (r.horizonRevision < revision) delete draft.reviews[key];
  if (Object.keys(draft.reviews).length === 0) delete draft.reviews;
}

export type { ReviewRecord };
