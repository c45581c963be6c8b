import type { DomainEventType } from './catalogue.js';

// The event types' schema versions, in a module of their own that builds no zod schema: `log
// --type` checks a type against it without evaluating the catalogue (decision 0053; a reading
// command builds no event schemas, decision 0022). The catalogue re-exports it; a type in the
// catalogue and not here (or here and not there) fails to compile.

/** Current schema version of each event type. Bump and add an upcaster on change. */
export const SCHEMA_VERSIONS: Record<DomainEventType, number> = {
  BuildInitialized: 1,
  PlannerInvoked: 1,
  PlannerReturned: 1,
  ProposalRejected: 1,
  ProposalApproved: 1,
  ApprovalRequested: 1,
  HeadReviewed: 1,
  HorizonSealed: 1,
  HorizonRenewed: 1,
  AttemptStarted: 1,
  AttemptFinished: 1,
  IntegrationStarted: 1,
  VerificationFinished: 1,
  IntegrationPromoted: 1,
  IntegrationFailed: 1,
  IntegrationDiscarded: 1,
  BatchSplit: 1,
  CheckpointWritten: 1,
  BuildCompleted: 1,
  BuildBlocked: 1,
  RefRepaired: 1,
  EffectReinvoked: 1,
  MilestoneCompacted: 1,
  NodeRetried: 1,
  PlanningReopened: 1,
  BudgetChanged: 1,
  BudgetReached: 1,
  NotificationSent: 1,
  ProvenanceRecorded: 1,
  NodeCanceled: 1,
  AcceptanceStarted: 1,
  AcceptanceFinished: 1,
  AcceptanceRequested: 1,
  ForkedFrom: 1,
};
