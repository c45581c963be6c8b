/** The event schemas of compaction, recoveries, operators' actions, spend, notifications, provenance, acceptance and forks (R-2): each event's type and data. The catalogue (catalogue.ts) unions them. */
import { z } from 'zod';
import { GitShaSchema, SafeIdSchema, Sha256Schema } from './ids.js';
import { BudgetSchema, BuildSettingsSchema, CommandEvidenceSchema, NOTIFY_KINDS, TestPolicySchema, UsageSchema, e } from './domain-shapes.js';
export const CompactionSummarySchema = z.strictObject({
  milestoneId: SafeIdSchema,
  checkpoint: z.strictObject({ milestoneId: SafeIdSchema, sha256: Sha256Schema }),
  graphBefore: z.strictObject({ revision: z.number().int().nonnegative(), sha256: Sha256Schema }),
  contracts: z.array(z.string()),
  foundations: z.array(z.string()),
  integrationHead: GitShaSchema,
  acceptedCommits: z.array(z.strictObject({ nodeId: SafeIdSchema, commit: GitShaSchema })),
  /** Compacted nodes that unfinished or later nodes still depend on, with who consumes them. */
  boundary: z.array(z.strictObject({ nodeId: SafeIdSchema, commit: GitShaSchema.nullable(), consumers: z.array(SafeIdSchema) })),
  evidenceSha256s: z.array(Sha256Schema),
  decisions: z.array(z.strictObject({ nodeId: SafeIdSchema, decision: z.string() })),
  completedAt: z.string(),
  compactedNodeIds: z.array(SafeIdSchema),
  absorbedSummaryIds: z.array(SafeIdSchema),
});
export type CompactionSummary = z.infer<typeof CompactionSummarySchema>;

/** One checkpointed milestone (and its accepted-only ancestors) became one summary node. */
export const MilestoneCompacted = e('MilestoneCompacted', z.strictObject({
  summaryId: z.string().regex(/^summary-[0-9a-f]{16}$/),
  summarySha256: Sha256Schema,
  summary: CompactionSummarySchema,
  graphRevision: z.number().int().nonnegative(),
}));

/** A call whose outcome was in doubt after a crash is made again under the same key. */
export const EffectReinvoked = e('EffectReinvoked', z.strictObject({
  effect: z.enum(['planner', 'worker']),
  key: z.string(),
  /**
   * `lost`: the call journal (calls/journal) was gone, so whether the call had started could not
   * be known; it is counted as made (in doubt). Absent: its mark said it had started.
   */
  journal: z.literal('lost').optional(),
  /**
   * What the invocation that left no result used, when it reported it before the crash (its usage
   * file survives, R-58); absent: unknown. The call is counted as made either way.
   */
  usage: UsageSchema.optional(),
}));

/**
 * A notification made: notifier `notifier` (its index in settings.notify) was given the
 * events at `triggers` (one of `kind`; several coalesced into one), and it `delivered` (exit 0) or
 * `failed` after `attempts` tries. Triggers without one are delivered again (at least once; the
 * key a notifier gets is its trigger event's hash, so a repeat can be told).
 */
export const NotificationSent = e('NotificationSent', z.strictObject({
  notifier: z.number().int().nonnegative(),
  kind: z.enum(NOTIFY_KINDS),
  triggers: z.array(z.number().int().positive()).min(1),
  outcome: z.enum(['delivered', 'failed']),
  attempts: z.number().int().positive(),
  reason: z.string().max(2000).optional(),
}));

/**
 * The attestations of integrated commits, recorded before their notes are written: for
 * each commit a promotion put on the integration ref, the SHA-256 of its note (the DSSE envelope's
 * JSON line, as git stores it). A note that is not the recorded one was rewritten. Recorded by the
 * host when a run ends (or by `provenance publish`) for the promotions no record names yet.
 */
export const ProvenanceRecorded = e('ProvenanceRecorded', z.strictObject({
  attestations: z.array(z.strictObject({
    commit: GitShaSchema,
    nodeId: SafeIdSchema,
    /** The log position of the IntegrationPromoted that put it on the ref. */
    promotion: z.number().int().positive(),
    envelopeSha256: Sha256Schema,
  })).min(1),
}));

/**
 * An operator's `longbuild budget`: the build's budget from now on (the limits
 * given replace those of the budget in force; the others stay).
 */
export const BudgetChanged = e('BudgetChanged', z.strictObject({
  budget: BudgetSchema,
  reason: z.string().max(2000).optional(),
  operator: z.strictObject({ action: z.literal('budget'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * The build paused on its budget: the next call would start past `limit`. Recorded once per
 * pause; `longbuild budget` raising the limit lets `run` go on.
 */
export const BudgetReached = e('BudgetReached', z.strictObject({
  /** node: the node alone spent its `perNode` limit; it is blocked (not the build paused). */
  scope: z.enum(['build', 'milestone', 'node']),
  milestoneId: z.string().optional(),
  nodeId: SafeIdSchema.optional(),
  /** One line naming what was spent and the limit (a node's block reason). */
  reason: z.string().max(2000).optional(),
  unit: z.enum(['usd', 'tokens']),
  limit: z.number().nonnegative(),
  spent: z.number().nonnegative(),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * A ref that disagreed with the log was reset to what the log says, before anything else
 * happened. `found` names the stray commit (null: the ref was missing); `expected` null: the ref
 * should not exist and was deleted.
 */
export const RefRepaired = e('RefRepaired', z.strictObject({
  ref: z.string().min(1),
  where: z.enum(['integrator', 'published']),
  found: GitShaSchema.nullable(),
  expected: GitShaSchema.nullable(),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * An operator's `longbuild retry NODE`: a node that failed every attempt it had gets `attempts`
 * more (its limit becomes the attempts made plus these), goes back to revising, and a build it
 * had blocked is unblocked. Recorded like every decision; nothing else changes.
 */
export const NodeRetried = e('NodeRetried', z.strictObject({
  nodeId: SafeIdSchema,
  attempts: z.number().int().min(1).max(100),
  /** The attempt limit the node has from now on. */
  attemptLimit: z.number().int().min(1),
  operator: z.strictObject({ action: z.literal('retry'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * An operator's `longbuild replan`: a planning round whose every ask was refused (the
 * build blocked in planning) gets `asks` more asks — the planner is asked again, told the
 * refusals so far and the operator's reason. `callId` is the last refused ask the round had.
 */
export const PlanningReopened = e('PlanningReopened', z.strictObject({
  purpose: z.enum(['seal', 'renew', 'repair']),
  horizonRevision: z.number().int().nonnegative(),
  callId: z.string().min(1),
  asks: z.number().int().min(1).max(10),
  reason: z.string().max(2000).optional(),
  operator: z.strictObject({ action: z.literal('replan'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * An operator canceled work (`longbuild cancel NODE`): the node and every node that depends on
 * it, transitively, that was not accepted yet (first the one named, then the rest sorted). They
 * are never dispatched again; a milestone whose nodes are all accepted or canceled is complete,
 * and its checkpoint lists only the accepted ones. A build they had blocked is unblocked.
 */
export const NodeCanceled = e('NodeCanceled', z.strictObject({
  nodeIds: z.array(SafeIdSchema).min(1),
  reason: z.string().max(2_000).optional(),
  operator: z.strictObject({ action: z.literal('cancel'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * The intent of an acceptance run (R-18): the trusted acceptance commands are about to
 * run on `head`, the integration head of milestone `milestoneId`'s checkpoint (null: a run an
 * operator asked for, on the head as it is).
 */
export const AcceptanceStarted = e('AcceptanceStarted', z.strictObject({
  runId: z.string().regex(/^accept-[1-9][0-9]*$/),
  milestoneId: SafeIdSchema.nullable(),
  head: GitShaSchema,
  graphRevision: z.number().int().nonnegative(),
}));

/** What an acceptance run found: passed or not (the first failing command), with every command's evidence. */
export const AcceptanceFinished = e('AcceptanceFinished', z.strictObject({
  runId: z.string(),
  head: GitShaSchema,
  tree: GitShaSchema,
  passed: z.boolean(),
  reason: z.string().optional(),
  evidence: z.array(CommandEvidenceSchema),
  evidenceSha256: Sha256Schema,
  graphRevision: z.number().int().nonnegative(),
}));

/** An operator's `longbuild accept`: run the acceptance commands again on the head as it is. */
export const AcceptanceRequested = e('AcceptanceRequested', z.strictObject({
  reason: z.string().max(2_000).optional(),
  operator: z.strictObject({ action: z.literal('accept'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * A fork: the events before this one are the parent build's, verbatim, up to `parent.position`
 * (whose hash is `parent.headHash`); the build goes on from there under `driver`, with the request,
 * verification, acceptance and settings that driver gives (the same as the parent's when unchanged).
 */
export const ForkedFrom = e('ForkedFrom', z.strictObject({
  parent: z.strictObject({
    buildId: z.string().min(1),
    /** Where the parent lived when forked: its repository and build directory (verify follows them when reachable). */
    repo: z.string().min(1),
    dir: z.string().min(1),
    position: z.number().int().positive(),
    headHash: Sha256Schema,
    /** The parent's newest signed checkpoint at or after the fork point, when it had one. */
    checkpoint: z.strictObject({ size: z.number().int().positive(), rootHash: Sha256Schema, note: z.string() }).optional(),
  }),
  driver: z.strictObject({ kind: z.enum(['blueprint', 'command']), sourceSha256: Sha256Schema }),
  request: z.json(),
  requestSha256: Sha256Schema,
  verify: z.array(z.array(z.string()).min(1)),
  acceptance: z.array(z.array(z.string()).min(1)).min(1).optional(),
  settings: BuildSettingsSchema,
  /** The test policy the fork goes on under (R-48..R-51); absent: none (exit codes alone). */
  tests: TestPolicySchema.optional(),
  graphRevision: z.number().int().nonnegative(),
}));

/** Every domain event, one discriminated union (one source of truth for every type). */
