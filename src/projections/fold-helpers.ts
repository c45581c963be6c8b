/** The fold's shared steps (build-fold.ts applies events with them): graph revisions, node states, jobs, the outbox, the ledger. */
import type { Draft } from 'immer';
import type { DomainEvent, NodeState, Notifier, Usage } from '../events/catalogue.js';
import { notifyKindsOf } from './notify-kinds.js';
import type { BuildState } from './build-state.js';
import { appendRevision } from './revision-positions.js';
import { shardSet, type Sharded } from './sharded.js';
import { EMPTY_LEDGER, milestoneSpent, NO_SPEND, withCall, type SpendLedger, type SpendTotals } from './spend-ledger.js';

/**
 * Whether the event being folded has already made a graph revision. Reset at the start of every
 * (synchronous) application of one event; it replaces a read of `revisionPositions` through the
 * draft, which made immer copy the state's record of them per event just to look.
 */
let graphBumped = false;

/** A new event is being folded: it has made no graph revision yet. */
export function resetGraphBump(): void {
  graphBumped = false;
}

export function bumpGraph(draft: Draft<BuildState>): void {
  // One event is one graph change however many nodes it touches (a batch promotion), so every
  // revision names exactly one position and time travel by revision lands on that revision.
  if (graphBumped) return;
  graphBumped = true;
  draft.graphRevision += 1;
  appendRevision(draft.revisionPositions, draft.graphRevision, draft.position);
}

export function closeJob(draft: Draft<BuildState>, jobId: string): void {
  if (draft.openJobs.includes(jobId)) draft.openJobs = draft.openJobs.filter((id) => id !== jobId);
}

export function setNodeState(draft: Draft<BuildState>, nodeId: string, state: NodeState): void {
  const node = draft.nodes[nodeId];
  if (!node || node.state === state) return;
  node.state = state;
  bumpGraph(draft);
}

export function failedNodeState(draft: Draft<BuildState>, nodeId: string): NodeState {
  const node = draft.nodes[nodeId];
  const max = node?.attemptLimit ?? draft.build?.settings.maxAttempts ?? 3;
  return node && node.attempts >= max ? 'blocked' : 'revising';
}

/** The notification outbox: an event's kinds become pending per notifier; NotificationSent settles them. */
export function outbox(draft: Draft<BuildState>, notifiers: readonly Notifier[], event: DomainEvent, recordedAt: string): void {
  const box = (draft.notify ??= { pending: [], delivered: 0, failed: 0, last: {} });
  if (event.type === 'NotificationSent') {
    const d = event.data;
    const done = new Set(d.triggers);
    box.pending = box.pending.filter((p) => !(p.notifier === d.notifier && p.kind === d.kind && done.has(p.position)));
    if (d.outcome === 'delivered') box.delivered += 1;
    else box.failed += 1;
    box.last[`${d.notifier}:${d.kind}`] = recordedAt;
    return;
  }
  for (const kind of notifyKindsOf(event)) {
    notifiers.forEach((n, i) => {
      if (n.on.includes(kind)) box.pending.push({ position: draft.position, notifier: i, kind });
    });
  }
}

/**
 * One call recorded in the ledger: the build's total, and the planner's (`nodeId` null) or
 * the node's and its milestone's. `reinvoked`: a call made again after a crash, whose first
 * invocation's usage is unknown unless it reported it.
 */
export function spent(draft: Draft<BuildState>, nodeId: string | null, usage: Usage | undefined, reinvoked: boolean): void {
  const ledger = (draft.spend ??= { ...EMPTY_LEDGER, milestones: [] }) as Draft<SpendLedger>;
  ledger.total = withCall(ledger.total, usage);
  if (reinvoked && usage === undefined) ledger.unknownReinvocations += 1;
  if (nodeId === null) {
    ledger.planner = withCall(ledger.planner, usage);
    return;
  }
  const node = draft.nodes[nodeId];
  if (!node) return;
  node.spent = withCall(node.spent ?? NO_SPEND, usage);
  shardSet(ledger.milestones as Sharded<SpendTotals>, node.milestone, withCall(milestoneSpent(ledger as SpendLedger, node.milestone), usage));
}
