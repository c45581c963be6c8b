/** How a seal or renewal changes the build state: the horizon in force, its new nodes. */
import { isDraft, original, type Draft } from 'immer';
import type { DataOf } from '../events/catalogue.js';
import { checkpointHeadOf, type CheckpointHead, type HorizonRecord, type NodeRecord } from './build-records.js';
import type { BuildState } from './build-state.js';
import { planOrder } from './graph.js';
import { summaryLookups } from './summaries.js';
import { answerReviews } from './reviews.js';
import { bumpGraph } from './fold-helpers.js';

/**
 * whether a seal or renewal may follow the horizon in force. 'same': the same plan under the
 * same identity and revision (a no-op); a reason: another plan under an identity already used
 * (the same horizon id at the same or an earlier revision, or a renewal skipping revisions); null: it may.
 */
export function horizonConflict(
  current: Pick<HorizonRecord, 'horizonId' | 'revision' | 'planSha256'> | null,
  type: 'HorizonSealed' | 'HorizonRenewed',
  d: { readonly horizonId: string; readonly revision: number; readonly planSha256: string },
): 'same' | string | null {
  if (current === null) return type === 'HorizonSealed' ? null : `R-15: renewal of ${d.horizonId} to r${d.revision} without a sealed horizon`;
  if (current.horizonId === d.horizonId && current.revision === d.revision && current.planSha256 === d.planSha256) return 'same';
  if (d.horizonId !== current.horizonId) return null; // a new identity reuses nothing
  if (type === 'HorizonRenewed' && d.revision === current.revision + 1) return null;
  return `R-15: ${type === 'HorizonSealed' ? 'a seal' : 'a renewal'} of ${d.horizonId} r${d.revision} (plan ${d.planSha256.slice(0, 12)}) would replace ${current.horizonId} r${current.revision} (plan ${current.planSha256.slice(0, 12)}): a sealed identity is never reused for another plan`;
}

export function applyHorizon(draft: Draft<BuildState>, d: DataOf<'HorizonSealed'> | DataOf<'HorizonRenewed'>): void {
  // The checkpoints of the window this horizon replaces keep their heads (decision 0032): the
  // planner's input is the only reader of a checkpoint's lists, and only of its window's.
  const window = new Set(d.detailed.map((m) => m.id));
  for (const m of draft.horizon?.detailed ?? []) {
    const c = Object.hasOwn(draft.checkpoints, m.id) ? draft.checkpoints[m.id]! : undefined;
    if (c !== undefined && !window.has(m.id)) c.checkpoint = checkpointHeadOf(c.checkpoint) as Draft<CheckpointHead>;
  }
  answerReviews(draft, d.revision);
  draft.horizon = {
    horizonId: d.horizonId, revision: d.revision, planSha256: d.planSha256, detailed: d.detailed, coarse: d.coarse, pins: d.pins, callId: d.callId,
  };
  const added: string[] = [];
  // A dependency on compacted work is a dependency on the summary that now stands for it.
  const summaries = summaryLookups((isDraft(draft) ? original(draft)! : draft).summaries);
  const depsOf = (deps: readonly string[]): string[] => {
    const mapped = deps.map((dep) => (draft.nodes[dep] ? dep : summaries.liveSummaryOf(dep) ?? dep));
    // Two compacted deps may map to one summary: keep it once (only then, so old logs fold the same).
    return mapped.every((dep, i) => dep === deps[i]) ? mapped : [...new Set(mapped)];
  };
  for (const n of d.nodes) {
    if (draft.nodes[n.id] || summaries.liveSummaryOf(n.id) !== undefined) continue;
    draft.nodes[n.id] = {
      id: n.id, kind: n.kind, deps: depsOf(n.deps), milestone: n.milestone,
      state: n.accepted ? 'accepted' : 'queued',
      ...(n.title !== undefined ? { title: n.title } : {}),
      ...(n.description !== undefined ? { description: n.description } : {}),
      ...(n.acceptance !== undefined ? { acceptance: n.acceptance } : {}),
      ...(n.changes !== undefined ? { changes: n.changes } : {}),
      ...(n.retires !== undefined ? { retires: n.retires } : {}),
      ...(n.contract !== undefined ? { contract: n.contract } : {}),
      ...(n.foundation !== undefined ? { foundation: n.foundation } : {}),
      ...(n.decision !== undefined && n.accepted ? { decision: n.decision } : {}),
      attempts: 0, commit: null, receiptJobId: null,
    };
    added.push(n.id);
  }
  if (added.length > 0) {
    bumpGraph(draft);
    // R-10's tie-break is the plan's own order: a milestone's nodes all come from one plan, and
    // the order of a plan never depends on what was compacted before it.
    draft.topoIndex = { ...draft.topoIndex, ...planOrder(draft.nodes as Record<string, NodeRecord>, added) };
  }
}
