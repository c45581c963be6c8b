/**
 * What each event tells a notifier of: its kinds, decided from the event alone.
 */
import type { DomainEvent, NotifyKind } from '../events/catalogue.js';

export function notifyKindsOf(e: DomainEvent): NotifyKind[] {
  switch (e.type) {
    case 'BuildBlocked': return ['blocked'];
    case 'BuildCompleted': return ['completed'];
    case 'BudgetReached': return e.data.scope === 'node' ? ['budget'] : ['budget', 'paused'];
    case 'PlannerReturned': return e.data.awaitingApproval === true ? ['awaiting_approval'] : [];
    case 'AttemptFinished': return e.data.outcome === 'failed' ? ['failure'] : [];
    case 'IntegrationFailed': return ['failure'];
    case 'AcceptanceFinished': return e.data.passed ? [] : ['failure'];
    case 'ProposalRejected': return ['failure'];
    case 'ApprovalRequested': return ['awaiting_approval'];
    case 'HeadReviewed': return e.data.approved ? [] : ['failure'];
    default: return [];
  }
}
