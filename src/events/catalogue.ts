import { z } from 'zod';
import { ValidationError } from './errors.js';
import type { JsonValue } from './canonical.js';
import { SCHEMA_VERSIONS } from './schema-versions.js';
export * from './domain-shapes.js';
export * from './plan-events.js';
export * from './run-events.js';
import {
  BuildInitialized, PlannerInvoked, PlannerReturned, ProposalRejected, ProposalApproved, ApprovalRequested, HeadReviewed, HorizonSealed, HorizonRenewed,
  AttemptStarted, AttemptFinished, IntegrationStarted, VerificationFinished, IntegrationPromoted, IntegrationFailed, IntegrationDiscarded, BatchSplit,
  CheckpointWritten, BuildCompleted, BuildBlocked,
} from './plan-events.js';
import {
  MilestoneCompacted, EffectReinvoked, NotificationSent, ProvenanceRecorded, BudgetChanged, BudgetReached, RefRepaired, NodeRetried, PlanningReopened,
  NodeCanceled, AcceptanceStarted, AcceptanceFinished, AcceptanceRequested, ForkedFrom,
} from './run-events.js';

export const DomainEventSchema = z.discriminatedUnion('type', [
  BuildInitialized,
  PlannerInvoked,
  PlannerReturned,
  ProposalRejected,
  ProposalApproved,
  ApprovalRequested,
  HeadReviewed,
  HorizonSealed,
  HorizonRenewed,
  AttemptStarted,
  AttemptFinished,
  IntegrationStarted,
  VerificationFinished,
  IntegrationPromoted,
  IntegrationFailed,
  IntegrationDiscarded,
  BatchSplit,
  CheckpointWritten,
  BuildCompleted,
  BuildBlocked,
  EffectReinvoked,
  MilestoneCompacted,
  RefRepaired,
  NodeRetried,
  PlanningReopened,
  BudgetChanged,
  BudgetReached,
  NotificationSent,
  ProvenanceRecorded,
  NodeCanceled,
  AcceptanceStarted,
  AcceptanceFinished,
  AcceptanceRequested,
  ForkedFrom,
]);
export type DomainEvent = z.infer<typeof DomainEventSchema>;
export type DomainEventType = DomainEvent['type'];
export type EventOf<T extends DomainEventType> = Extract<DomainEvent, { type: T }>;
export type DataOf<T extends DomainEventType> = EventOf<T>['data'];

/** Current schema version of each event type: in ./schema-versions.ts, which builds no schema. */
export { SCHEMA_VERSIONS } from './schema-versions.js';

/**
 * Validates event bodies where bytes enter a log. A log takes one catalogue;
 * the domain catalogue is the default, tests may pass their own.
 */
export interface EventCatalogue {
  /** Throws ValidationError naming the type and field when the event is not acceptable. */
  validate(type: string, schemaVersion: number, data: unknown): void;
  currentVersion(type: string): number;
}

/** Each event type's data schema, taken from the union (one source of truth). */
const DATA_SCHEMAS: ReadonlyMap<string, z.ZodType> = new Map(
  DomainEventSchema.options.map((o) => [o.shape.type.value as string, o.shape.data as z.ZodType]),
);

export const domainCatalogue: EventCatalogue = {
  validate(type, schemaVersion, data) {
    if (!(type in SCHEMA_VERSIONS)) throw new ValidationError(`unknown event type '${type}'`, 'R-28');
    const current = SCHEMA_VERSIONS[type as DomainEventType];
    if (schemaVersion < 1 || schemaVersion > current) {
      throw new ValidationError(`event type '${type}' has no schema version ${schemaVersion} (current ${current})`, 'R-7');
    }
    // The type's own data schema: the union's discriminator dispatch costs as much again per event.
    const parsed = DATA_SCHEMAS.get(type)!.safeParse(data);
    if (!parsed.success) throw new ValidationError(`invalid ${type} event: ${formatZodError(parsed.error)}`, 'R-28');
  },
  currentVersion(type) {
    return SCHEMA_VERSIONS[type as DomainEventType] ?? 1;
  },
};

/** Parse a stored event body into a typed domain event (upcasting old versions here). */
export function toDomainEvent(type: string, data: JsonValue): DomainEvent {
  return { type, data } as DomainEvent;
}

/**
 * An issue of a union none of whose options matched, as the option that came closest says it
 * (the one whose first issue lies deepest; the first option on a tie), its path under the
 * union's; any other issue as it is.
 */
export function closestIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return issue;
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    const first = branch[0];
    if (first !== undefined && (best === undefined || first.path.length > best.path.length)) best = first;
  }
  return best === undefined ? issue : closestIssue({ ...best, path: [...issue.path, ...best.path] } as z.core.$ZodIssue);
}

/** One readable line from a zod error: `path: message; path: message`. */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .map(closestIssue)
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}
