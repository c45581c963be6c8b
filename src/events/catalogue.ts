import { z } from 'zod';
import { GitShaSchema, SafeIdSchema, Sha256Schema } from './ids.js';
import { ValidationError } from './errors.js';
import type { JsonValue } from './canonical.js';

// ---- shared domain shapes -------------------------------------------------

export const NodeKindSchema = z.enum(['read-only', 'writable']);
export type NodeKind = z.infer<typeof NodeKindSchema>;

export const NodeStateSchema = z.enum(['queued', 'running', 'validating', 'revising', 'blocked', 'canceled', 'accepted']);
export type NodeState = z.infer<typeof NodeStateSchema>;

/** A test id as the runners' reports name it (src/commands/test-report.ts): one line, at most 300 characters. */
export const TestIdSchema = z.string().min(1).max(300).regex(/^[^\u0000-\u001f\u007f]*$/, { message: 'a test id is one line without control characters' });

const VersionTag = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}@[A-Za-z0-9._-]{1,32}$/, { message: 'expected name@version' });

/** A node as a planner proposes it. The host decides its state. */
export const PlannedNodeSchema = z.strictObject({
  id: SafeIdSchema,
  kind: NodeKindSchema,
  deps: z.array(SafeIdSchema),
  milestone: SafeIdSchema,
  title: z.string().optional(),
  /** What to build, for the worker (an agent works from it). */
  description: z.string().max(20_000).optional(),
  /** Acceptance criteria the worker's change must meet, one per entry. */
  acceptance: z.array(z.string().max(2_000)).max(50).optional(),
  /** Already accepted when the build starts (read-only only). */
  accepted: z.boolean().optional(),
  contract: VersionTag.optional(),
  foundation: VersionTag.optional(),
  decision: z.string().optional(),
  /**
   * What of the verification surface this node changes: `tests` (existing tests: modified
   * or deleted) and `verification` (the files that decide what verification runs: package.json
   * scripts and dependencies, lock files, test runner configs). Without it a candidate that
   * touches them is refused; adding new test files needs no declaration.
   */
  changes: z.array(z.enum(['tests', 'verification'])).min(1).max(2)
    .refine((c) => new Set(c).size === c.length, { message: 'a kind of change is named twice' }).optional()
    .describe('what of the verification surface this node changes: "tests" (existing tests, modified or deleted) and/or "verification" (package.json scripts and dependencies, lock files, test runner configs); without it such a change is refused; new test files need no declaration'),
  /**
   * Test ids this node stops passing on purpose: the tests of the base head it
   * removes, renames or changes the expected behaviour of, as the test report names them.
   */
  retires: z.array(TestIdSchema).min(1).max(200)
    .refine((r) => new Set(r).size === r.length, { message: 'a test id is named twice' }).optional()
    .describe('test ids (as the test report names them, e.g. "parser > parses numbers") this node stops passing on purpose; under the default policy it must name exactly the tests of the base head that stop passing'),
});
export type PlannedNode = z.infer<typeof PlannedNodeSchema>;

export const MilestoneRefSchema = z.strictObject({
  id: SafeIdSchema,
  title: z.string(),
  intent: z.string().optional(),
});
export type MilestoneRef = z.infer<typeof MilestoneRefSchema>;

export const HorizonPinsSchema = z.strictObject({
  requestSha256: Sha256Schema,
  graphRevision: z.number().int().nonnegative(),
  integrationHead: GitShaSchema,
  contracts: z.array(z.string()),
  foundations: z.array(z.string()),
  createdAt: z.string(),
  plannerRoute: z.string(),
});
export type HorizonPins = z.infer<typeof HorizonPinsSchema>;

/** A test report's counts and the evidence file listing its passing test ids. */
export const TestCountsSchema = z.strictObject({
  passed: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  /** SHA-256 of the evidence file of passing test ids (sorted, one per line). */
  passingSha256: Sha256Schema,
});
export type TestCounts = z.infer<typeof TestCountsSchema>;

/** How a verification command's test report is read: its format, and the file it writes (else its stdout). */
export const ReportSettingSchema = z.strictObject({
  format: z.enum(['tap', 'mocha-json', 'mocha-spec', 'junit', 'auto']),
  file: z.string().min(1).max(1024).optional(),
});
export type ReportSetting = z.infer<typeof ReportSettingSchema>;

export const CommandEvidenceSchema = z.strictObject({
  argv: z.array(z.string()).min(1),
  exitCode: z.number().int().nullable(),
  stdoutSha256: Sha256Schema,
  stderrSha256: Sha256Schema,
  durationMs: z.number().nonnegative(),
  cacheHit: z.boolean(),
  /**
   * What its test report said: the format read and the counts, or why it could not be read
   * (`unreadable`); absent when the command has no report setting or `auto` found none.
   */
  tests: z.union([
    TestCountsSchema.extend({ format: z.enum(['tap', 'mocha-json', 'mocha-spec', 'junit']) }),
    z.strictObject({ format: z.enum(['tap', 'mocha-json', 'mocha-spec', 'junit', 'auto']), unreadable: z.string().max(400) }),
  ]).optional(),
  /** The report file the command wrote (a JUnit XML file), kept as evidence. */
  reportSha256: Sha256Schema.optional(),
});

/**
 * What a verification's tests were compared with and what came of it: the job's
 * passing tests (every reporting command together), the base head's, the base tests no longer
 * passing, and the hold-out run's.
 */
export const JobTestsSchema = TestCountsSchema.extend({
  /** The integration head the candidates were compared with, and its tests (null: no report is known for it). */
  base: TestCountsSchema.extend({
    head: GitShaSchema,
    /** Set when no record of the head's tests was at hand and its tests were run for this job (on `tree`, the head's). */
    measured: z.literal(true).optional(),
    tree: GitShaSchema.optional(),
  }).nullable(),
  /** Tests that passed on the base head and do not pass here, sorted (the first 1,000), and how many. */
  lost: z.array(TestIdSchema).max(1000),
  lostCount: z.number().int().nonnegative(),
  /**
   * The base's tests run against the candidates' code (R-50), when a node declared test changes
   * (or the build asks for it always): what they said, and which tests of the base head they no
   * longer pass (`failing`), or why that cannot be named (`unreadable`).
   */
  holdout: z.strictObject({
    tree: GitShaSchema,
    counts: TestCountsSchema.nullable(),
    failing: z.array(TestIdSchema).max(1000),
    failingCount: z.number().int().nonnegative(),
    exitCodes: z.array(z.number().int().nullable()),
    evidence: z.array(Sha256Schema),
    unreadable: z.string().max(400).optional(),
  }).optional(),
  /** Verification commands without a test report (their tests are not ratcheted). */
  unreported: z.number().int().nonnegative(),
});
export type JobTests = z.infer<typeof JobTestsSchema>;
export type CommandEvidence = z.infer<typeof CommandEvidenceSchema>;

export const ReceiptSchema = z.strictObject({
  jobId: z.string(),
  nodeIds: z.array(SafeIdSchema),
  baseHead: GitShaSchema,
  candidates: z.array(z.strictObject({ nodeId: SafeIdSchema, commit: GitShaSchema })),
  resultCommit: GitShaSchema,
  tree: GitShaSchema,
  evidenceSha256s: z.array(Sha256Schema),
  cacheHit: z.boolean(),
  /**
   * The promoted tree's tests: its passing tests, and the base tests it stopped passing
   * that the plan retired (or that the build's policy `record` recorded); absent without a report.
   */
  tests: TestCountsSchema.extend({ retired: z.array(TestIdSchema).max(1000).optional() }).optional(),
});
export type Receipt = z.infer<typeof ReceiptSchema>;

export const CheckpointSchema = z.strictObject({
  milestoneId: SafeIdSchema,
  horizonId: z.string(),
  horizonRevision: z.number().int().positive(),
  graphRevision: z.number().int().nonnegative(),
  graphSha256: Sha256Schema,
  integrationHead: GitShaSchema,
  acceptedNodes: z.array(z.strictObject({ id: SafeIdSchema, kind: NodeKindSchema, commit: GitShaSchema.nullable() })),
  contracts: z.array(z.string()),
  foundations: z.array(z.string()),
  decisions: z.array(z.strictObject({ nodeId: SafeIdSchema, decision: z.string() })),
  metrics: z.strictObject({ attempts: z.number().int(), integrations: z.number().int(), nodes: z.number().int() }),
  nextHorizon: z.strictObject({ detailed: z.array(SafeIdSchema), coarse: z.array(SafeIdSchema) }),
  createdAt: z.string(),
});
export type Checkpoint = z.infer<typeof CheckpointSchema>;

// ---- events ----------------------------------------------------------------

/**
 * What one planner or worker call used, as its agent or command reported it:
 * tokens, the model, and its cost in USD — from the report when it gives one (`costFrom`
 * "agent"), else priced from the config's `prices` ("prices"); absent: unknown.
 */
export const UsageSchema = z.strictObject({
  model: z.string().min(1).max(200).optional(),
  inputTokens: z.number().int().nonnegative().max(1e12),
  outputTokens: z.number().int().nonnegative().max(1e12),
  cachedTokens: z.number().int().nonnegative().max(1e12).optional(),
  costUsd: z.number().nonnegative().max(1e9).optional(),
  costFrom: z.enum(['agent', 'prices']).optional(),
});
export type Usage = z.infer<typeof UsageSchema>;

/** A spending limit: USD, tokens (input + output), or both. */
export const SpendLimitSchema = z.strictObject({
  usd: z.number().positive().max(1e9).optional(),
  tokens: z.number().int().positive().max(1e15).optional(),
});
export type SpendLimit = z.infer<typeof SpendLimitSchema>;

/** A build's budget: the whole build's limit, and optionally each node's and each milestone's. */
export const BudgetSchema = z.strictObject({
  ...SpendLimitSchema.shape,
  perNode: SpendLimitSchema.optional(),
  perMilestone: SpendLimitSchema.optional(),
});
export type Budget = z.infer<typeof BudgetSchema>;

/** What a notifier can be told of. */
/** Where a build may wait for an operator. */
export const APPROVAL_GATES = ['plan', 'checkpoint', 'land'] as const;
export type ApprovalGate = (typeof APPROVAL_GATES)[number];

export const NOTIFY_KINDS = ['blocked', 'paused', 'awaiting_approval', 'completed', 'budget', 'failure'] as const;
export type NotifyKind = (typeof NOTIFY_KINDS)[number];

/** A notifier (trusted configuration, R-61): the kinds it is told of, its argv, how often at most per kind. */
export const NotifierSchema = z.strictObject({
  on: z.array(z.enum(NOTIFY_KINDS)).min(1),
  command: z.array(z.string().min(1).refine((s) => !s.includes('\u0000'), 'NUL byte in argument')).min(1, 'a command needs at least an executable'),
  minIntervalSeconds: z.number().int().min(0).max(86_400).optional(),
});
export type Notifier = z.infer<typeof NotifierSchema>;

const BuildSettingsSchema = z.strictObject({
  detailedWindow: z.union([z.literal(1), z.literal(2)]),
  coarseWindow: z.number().int().min(0).max(64),
  maxBatch: z.number().int().min(1).max(64),
  maxAttempts: z.number().int().min(1).max(100),
  compaction: z.boolean(),
  plannerRoute: z.string(),
  /** Times a planning round may ask the planner (a refused proposal is returned with its reasons); absent: once. */
  plannerAsks: z.number().int().min(1).max(10).optional(),
  /** Git-ignored files verification leaves: allowed, or dirty (absent: dirty, as before they were configurable). */
  ignoredFiles: z.enum(['allowed', 'dirty']).optional(),
  /** Worker calls kept in flight at once; absent: 1, one at a time as before. */
  concurrency: z.number().int().min(1).max(64).optional(),
  /**
   * Integration jobs open at once, each verified on top of the ones ahead of it (speculative
   * integration); absent: 1, one job at a time as before.
   */
  speculation: z.number().int().min(1).max(64).optional(),
  /** Repair windows the planner may plan for a failing acceptance once no coarse work remains (absent: 2). */
  acceptanceRepairs: z.number().int().min(0).max(10).optional(),
  /**
   * How many of the first verification (and acceptance) commands are setup: they
   * run in the setup phase (its own network, the build's package cache, no lifecycle scripts);
   * absent: none.
   */
  setup: z.number().int().min(1).max(50).optional(),
  /** The budget the build starts with; absent: none. `longbuild budget` changes it (BudgetChanged). */
  budget: BudgetSchema.optional(),
  /**
   * Where an operator's approval is needed: `plan`, each valid proposal before it is sealed
   * or renewed; `checkpoint`, each milestone's checkpoint before the build goes past it; `land`,
   * the final head before the build completes (and `land` publishes it); absent: nowhere.
   */
  approve: z.array(z.enum(APPROVAL_GATES)).min(1).optional(),
  /** Who is told what; absent: nobody. */
  notify: z.array(NotifierSchema).min(1).max(16).optional(),
  /**
   * The host's attempt commits carry trailers naming the build, node and attempt, and
   * `Assisted-by` the worker's agent and model when an agent preset works; absent: builds from before.
   */
  trailers: z.strictObject({ assistedBy: z.string().min(1).max(200).optional() }).optional(),
});
export type BuildSettings = z.infer<typeof BuildSettingsSchema>;

/** Limits of every process of one call: address space (MiB) and CPU time (s). */
const CallLimitsRecord = z.strictObject({ memoryMb: z.number().int().positive().optional(), cpuSeconds: z.number().int().positive().optional(), tmpfsMb: z.number().int().positive().optional(), processes: z.number().int().positive().optional() });

/** The sandbox a build runs its planner, worker and verification processes in. */
export const SandboxSettingsSchema = z.strictObject({
  mode: z.enum(['bwrap', 'off']),
  /** `bwrap --version` when the build was initialised; null when off. */
  bwrapVersion: z.string().nullable(),
  /** The network of each role; `setup`: of the setup commands, absent (builds from before) as `verify`. */
  network: z.strictObject({ planner: z.boolean(), worker: z.boolean(), verify: z.boolean(), setup: z.boolean().optional() }),
  /** Why the sandbox is off (e.g. "blueprint build: bubblewrap not installed"), when it is. */
  reason: z.string().optional(),
  /** Largest file a candidate may add or change. */
  maxFileBytes: z.number().int().positive(),
  /** Files a candidate may hold beyond the base's; absent (builds from before): 10,000. */
  maxFiles: z.number().int().positive().optional(),
  /** Resource limits of each process of a call, by role; absent: none. */
  limits: z.strictObject({ planner: CallLimitsRecord.optional(), worker: CallLimitsRecord.optional(), verify: CallLimitsRecord.optional() }).optional(),
  /** Absolute paths every role sees read-only on purpose; absent: none. */
  expose: z.array(z.string()).optional(),
});
export type SandboxSettings = z.infer<typeof SandboxSettingsSchema>;

const e = <T extends string, S extends z.ZodTypeAny>(type: T, data: S) => z.strictObject({ type: z.literal(type), data });

/**
 * What a build judges its candidates' tests by (R-48..R-51): the verification surface, the policy
 * for declared test changes, when the hold-out runs, and each verification command's report.
 */
export const TestPolicySchema = z.strictObject({
  surface: z.strictObject({
    files: z.array(z.string().min(1).max(1024)).max(500),
    tests: z.array(z.string().min(1).max(1024)).max(500),
    ecosystems: z.array(z.string()),
    source: z.enum(['detected', 'config']),
  }),
  testChanges: z.enum(['strict', 'review', 'record']),
  holdout: z.enum(['declared', 'always']),
  /** One per verification command, in order (null: its exit code alone decides). */
  reports: z.array(ReportSettingSchema.nullable()),
});
export type TestPolicy = z.infer<typeof TestPolicySchema>;

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
