/** The shapes events share: nodes, milestones, checkpoints, receipts, settings, usage, budgets, sandbox and test policies. The catalogue (catalogue.ts) re-exports them. */
import { z } from 'zod';
import { GitShaSchema, SafeIdSchema, Sha256Schema } from './ids.js';

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

export const BuildSettingsSchema = z.strictObject({
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

/** An event's schema: its type and its data. */
export const e = <T extends string, S extends z.ZodTypeAny>(type: T, data: S) => z.strictObject({ type: z.literal(type), data });

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
