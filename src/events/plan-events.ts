/** The event schemas of a build, its plans and its work: each event's type and data. The catalogue (catalogue.ts) unions them. */
import { z } from 'zod';
import { GitShaSchema, SafeIdSchema, Sha256Schema } from './ids.js';
import { BuildSettingsSchema, CheckpointSchema, CommandEvidenceSchema, HorizonPinsSchema, JobTestsSchema, MilestoneRefSchema, PlannedNodeSchema, ReceiptSchema, SandboxSettingsSchema, TestPolicySchema, UsageSchema, e } from './domain-shapes.js';

export const BuildInitialized = e('BuildInitialized', z.strictObject({
  buildId: z.string().min(1),
  /**
   * 1: the build keeps its call journal (calls/journal) from its start, so a journal
   * found missing was lost and calls in flight are in doubt. Absent: builds from before.
   */
  callJournal: z.literal(1).optional(),
  request: z.json(),
  requestSha256: Sha256Schema,
  integrationRef: z.string().regex(/^refs\/heads\/[A-Za-z0-9._/-]+$/),
  baseHead: GitShaSchema,
  verify: z.array(z.array(z.string()).min(1)),
  /**
   * System-level acceptance: trusted commands run on the integration head of every
   * milestone checkpoint, and passing before the build completes; absent: none.
   */
  acceptance: z.array(z.array(z.string()).min(1)).min(1).optional(),
  settings: BuildSettingsSchema,
  driver: z.strictObject({ kind: z.enum(['blueprint', 'command']), sourceSha256: Sha256Schema }),
  /** How untrusted processes run; absent in builds from before the sandbox (unsandboxed). */
  sandbox: SandboxSettingsSchema.optional(),
  /**
   * The verifier key (c2sp.org/signed-note vkey, named by the build id) that signs the log's
   * checkpoints; absent in builds from before signed checkpoints, which cannot be extended.
   */
  signing: z.strictObject({ vkey: z.string().regex(/^[^+\s]+\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/) }).optional(),
  /** The tests candidates are judged by (R-48..R-51); absent in builds from before them (exit codes alone). */
  tests: TestPolicySchema.optional(),
}));

export const PlannerInvoked = e('PlannerInvoked', z.strictObject({
  callId: z.string(),
  /** repair: a window of work for a failing acceptance, asked for once no coarse milestone remains. */
  purpose: z.enum(['seal', 'renew', 'repair']),
  horizonRevision: z.number().int().nonnegative(),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * A result adopted from the parent build of a fork instead of making the call: the
 * parent's event at `position`, whose hash is `hash`, recorded the same input digest.
 */
const ReusedSchema = z.strictObject({ position: z.number().int().positive(), hash: Sha256Schema });

/**
 * The SHA-256 of a planner or worker call's input as the call received it: its packet or
 * planner input, commit ids replaced by the content they name, recording times left out, and the
 * driver of that call. Present when the result may stand for any call with the same input.
 */
const InputSha256Schema = Sha256Schema.optional();

export const PlannerReturned = e('PlannerReturned', z.strictObject({
  callId: z.string(),
  proposal: z.json(),
  proposalSha256: Sha256Schema,
  inputSha256: InputSha256Schema,
  reused: ReusedSchema.optional(),
  /** What the call used, when its planner reported it. */
  usage: UsageSchema.optional(),
  /**
   * The proposal is valid and waits for an operator's approval (config `approve: ["plan"]`, R-60):
   * nothing is sealed or renewed until `longbuild approve` (ProposalApproved) or `reject`.
   */
  awaitingApproval: z.literal(true).optional(),
  graphRevision: z.number().int().nonnegative(),
}));

export const ProposalRejected = e('ProposalRejected', z.strictObject({
  callId: z.string(),
  rule: z.string(),
  reason: z.string(),
  /** An operator's `longbuild reject` of a proposal awaiting approval; absent: the host refused it. */
  operator: z.strictObject({ action: z.literal('reject'), user: z.string().optional() }).optional(),
  graphRevision: z.number().int().nonnegative(),
}));

/** An operator's `longbuild approve` of a proposal awaiting approval: the host seals or renews it next. */
export const ProposalApproved = e('ProposalApproved', z.strictObject({
  callId: z.string(),
  reason: z.string().max(2000).optional(),
  operator: z.strictObject({ action: z.literal('approve'), user: z.string().optional() }),
  graphRevision: z.number().int().nonnegative(),
}));

/** The head a gate reviews: a milestone's checkpoint, or the final head before the build completes. */
const ReviewedHead = {
  gate: z.enum(['checkpoint', 'land']),
  /** The checkpointed milestone (gate `checkpoint`). */
  milestoneId: z.string().optional(),
  head: GitShaSchema,
  /** The horizon revision in force: a rejection is answered by the next renewal or repair window. */
  horizonRevision: z.number().int().nonnegative(),
  graphRevision: z.number().int().nonnegative(),
};

/** The build reached a head gate and waits for `longbuild approve` or `reject`; recorded once per gate. */
export const ApprovalRequested = e('ApprovalRequested', z.strictObject(ReviewedHead));

/**
 * An operator's verdict on a gated head: approved, the build goes past it; rejected, the
 * reason is the planner's feedback at its next call and, once no coarse milestone is left, a repair
 * window is planned (like a failed acceptance).
 */
export const HeadReviewed = e('HeadReviewed', z.strictObject({
  ...ReviewedHead,
  approved: z.boolean(),
  reason: z.string().max(2000).optional(),
  operator: z.strictObject({ action: z.enum(['approve', 'reject']), user: z.string().optional() }),
}));

const HorizonBody = {
  horizonId: z.string(),
  revision: z.number().int().positive(),
  planSha256: Sha256Schema,
  detailed: z.array(MilestoneRefSchema).min(1).max(2),
  coarse: z.array(MilestoneRefSchema).max(12),
  nodes: z.array(PlannedNodeSchema),
  pins: HorizonPinsSchema,
  callId: z.string(),
  graphRevision: z.number().int().nonnegative(),
};
export const HorizonSealed = e('HorizonSealed', z.strictObject(HorizonBody));
export const HorizonRenewed = e('HorizonRenewed', z.strictObject({ ...HorizonBody, fromRevision: z.number().int().positive() }));

export const AttemptStarted = e('AttemptStarted', z.strictObject({
  attemptId: z.string(),
  nodeId: SafeIdSchema,
  attempt: z.number().int().positive(),
  baseHead: GitShaSchema,
  branch: z.string(),
  graphRevision: z.number().int().nonnegative(),
}));

export const AttemptFinished = e('AttemptFinished', z.strictObject({
  attemptId: z.string(),
  nodeId: SafeIdSchema,
  outcome: z.enum(['committed', 'recorded', 'failed']),
  commit: GitShaSchema.optional(),
  tree: GitShaSchema.optional(),
  decision: z.string().optional(),
  reason: z.string().optional(),
  evidenceSha256: Sha256Schema,
  /** The evidence files of the worker's output (`longbuild evidence ATTEMPT` prints them). */
  stdoutSha256: Sha256Schema.optional(),
  stderrSha256: Sha256Schema.optional(),
  /** How long the worker's process ran, ms (a command or agent worker; absent when adopted or scripted). */
  durationMs: z.number().int().nonnegative().optional(),
  adopted: z.boolean(),
  inputSha256: InputSha256Schema,
  reused: ReusedSchema.optional(),
  /** What the worker call used, when its worker reported it. */
  usage: UsageSchema.optional(),
  graphRevision: z.number().int().nonnegative(),
}));

export const IntegrationStarted = e('IntegrationStarted', z.strictObject({
  jobId: z.string(),
  nodeIds: z.array(SafeIdSchema).min(1),
  candidates: z.array(z.strictObject({ nodeId: SafeIdSchema, attemptId: z.string(), commit: GitShaSchema })).min(1),
  baseHead: GitShaSchema,
  /**
   * The open job this one is stacked on (speculative integration): it is verified on the tree
   * that job's promotion makes, and promoted only after it; absent: verified on `baseHead`.
   */
  after: z.string().optional(),
  graphRevision: z.number().int().nonnegative(),
}));

export const VerificationFinished = e('VerificationFinished', z.strictObject({
  jobId: z.string(),
  resultCommit: GitShaSchema.nullable(),
  tree: GitShaSchema.nullable(),
  passed: z.boolean(),
  reason: z.string().optional(),
  evidence: z.array(CommandEvidenceSchema),
  evidenceSha256: Sha256Schema,
  /** The job's tests and what they were compared with; absent when the build has no test policy or nothing reported. */
  tests: JobTestsSchema.optional(),
  graphRevision: z.number().int().nonnegative(),
}));

export const IntegrationPromoted = e('IntegrationPromoted', z.strictObject({
  jobId: z.string(),
  receipt: ReceiptSchema,
  adopted: z.boolean(),
  graphRevision: z.number().int().nonnegative(),
}));

export const IntegrationFailed = e('IntegrationFailed', z.strictObject({
  jobId: z.string(),
  nodeIds: z.array(SafeIdSchema),
  reason: z.string(),
  evidenceSha256: Sha256Schema.optional(),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * A speculative job ended unpromoted because a job it was stacked on did not promote (failed,
 * was split, or was itself discarded): nobody is blamed, its candidates are integrated again.
 */
export const IntegrationDiscarded = e('IntegrationDiscarded', z.strictObject({
  jobId: z.string(),
  nodeIds: z.array(SafeIdSchema).min(1),
  reason: z.string(),
  graphRevision: z.number().int().nonnegative(),
}));

/**
 * A batch job failed (its candidates conflict, or verification failed twice on the same tree):
 * it ends here and its members are integrated again in `halves`, first half first (R-25
 * bisection). No member changes state; the culprit is found when a one-member job fails.
 */
export const BatchSplit = e('BatchSplit', z.strictObject({
  jobId: z.string(),
  nodeIds: z.array(SafeIdSchema).min(2),
  halves: z.array(z.array(SafeIdSchema).min(1)).length(2),
  reason: z.string(),
  evidenceSha256: Sha256Schema,
  graphRevision: z.number().int().nonnegative(),
}));

export const CheckpointWritten = e('CheckpointWritten', z.strictObject({
  checkpoint: CheckpointSchema,
  checkpointSha256: Sha256Schema,
  graphRevision: z.number().int().nonnegative(),
}));

export const BuildCompleted = e('BuildCompleted', z.strictObject({
  graphRevision: z.number().int().nonnegative(),
  integrationHead: GitShaSchema,
}));

export const BuildBlocked = e('BuildBlocked', z.strictObject({
  reason: z.string(),
  nodeIds: z.array(SafeIdSchema),
  graphRevision: z.number().int().nonnegative(),
}));

/** The summary record of one compaction: everything the compacted nodes leave behind. */
