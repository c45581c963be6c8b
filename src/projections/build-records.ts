/** The records a build's state holds (plain data; see build-state.ts for the fold). */
import type { SpendTotals } from './spend-ledger.js';
import type { JsonValue } from '../events/canonical.js';
import type {
  BuildSettings, Checkpoint, CommandEvidence, HorizonPins, JobTests, SandboxSettings, MilestoneRef, NodeKind, NodeState, Receipt, TestCounts, TestPolicy,
} from '../events/catalogue.js';

/** Deterministic attempt id: node id and attempt number (both safe for paths and refs). */
export const attemptIdOf = (nodeId: string, attempt: number): string => `${nodeId}.${attempt}`;

export interface NodeRecord {
  readonly id: string;
  readonly kind: NodeKind;
  readonly deps: readonly string[];
  readonly milestone: string;
  readonly state: NodeState;
  readonly title?: string;
  readonly description?: string;
  readonly acceptance?: readonly string[];
  /** What of the verification surface the plan lets it change. */
  readonly changes?: readonly ('tests' | 'verification')[];
  /** Test ids the plan lets it stop passing. */
  readonly retires?: readonly string[];
  /** Why the node's last attempt or integration failed (shown to the worker on the next attempt). */
  readonly lastFailure?: NodeFailure;
  readonly contract?: string;
  readonly foundation?: string;
  readonly decision?: string;
  readonly attempts: number;
  /** The attempt limit an operator's retry gave the node (else the build's maxAttempts). */
  readonly attemptLimit?: number;
  /** The accepted commit (writable nodes) once integrated. */
  readonly commit: string | null;
  readonly receiptJobId: string | null;
  /** Every integration job that included this node, oldest first (its evidence, R-21). */
  readonly jobIds?: readonly string[];
  /** Set on the read-only node that stands for compacted work; its record is in `summaries`. */
  readonly summary?: true;
  /** What its worker calls used, once one was made. */
  readonly spent?: SpendTotals;
}

/** A node's last failure: its reason, the output that shows it, and the candidate a retry reworks. */
export interface NodeFailure {
  readonly attemptId?: string;
  readonly jobId?: string;
  readonly reason: string;
  /** Evidence files of the failure (the worker's stdout/stderr, or the failing verification command's). */
  readonly evidence?: readonly string[];
  /** The candidate that failed integration: the next attempt starts from its changes (rework). */
  readonly candidate?: { readonly attemptId: string; readonly commit: string };
}

export interface HorizonRecord {
  readonly horizonId: string;
  readonly revision: number;
  readonly planSha256: string;
  readonly detailed: readonly MilestoneRef[];
  readonly coarse: readonly MilestoneRef[];
  readonly pins: HorizonPins;
  readonly callId: string;
}

export interface AttemptRecord {
  readonly attemptId: string;
  readonly nodeId: string;
  readonly attempt: number;
  readonly baseHead: string;
  readonly branch: string;
  readonly commitDate: string;
  readonly status: 'started' | 'committed' | 'recorded' | 'failed';
  readonly commit: string | null;
  readonly adopted: boolean;
  /** Evidence of the finished attempt (kept so compaction can list every evidence SHA, R-21). */
  readonly evidenceSha256?: string;
  /** How many times its worker call was recorded as made: 1 + its EffectReinvoked events (absent: 1). */
  readonly invocations?: number;
}

export interface JobRecord {
  readonly jobId: string;
  readonly nodeIds: readonly string[];
  readonly candidates: readonly { nodeId: string; attemptId: string; commit: string }[];
  readonly baseHead: string;
  readonly startedAt: string;
  /** The open job it was stacked on when it started (speculative integration), if any. */
  readonly after?: string;
  /** Its nodes were the next group a BatchSplit left: discarded, they go back in the queue. */
  readonly queued?: true;
  readonly status: 'started' | 'verified' | 'promoted' | 'failed' | 'split' | 'discarded';
  readonly verification: {
    readonly passed: boolean;
    /** Why it failed (the first failing command, or a dirty workspace). */
    readonly reason?: string;
    readonly resultCommit: string | null;
    readonly tree: string | null;
    readonly evidence: readonly CommandEvidence[];
    readonly evidenceSha256: string;
    /** Its tests and what they were compared with. */
    readonly tests?: JobTests;
  } | null;
  readonly receipt: Receipt | null;
  readonly adopted: boolean;
}

export interface PlannerCallRecord {
  readonly callId: string;
  readonly purpose: 'seal' | 'renew' | 'repair';
  /** awaiting: a valid proposal waits for an operator; approved: it is sealed or renewed next. */
  readonly status: 'invoked' | 'returned' | 'rejected' | 'awaiting' | 'approved';
  readonly invocations: number;
  /** The proposal, while it awaits approval or is approved and not sealed yet. */
  readonly proposal?: JsonValue;
  readonly rejection: { rule: string; reason: string } | null;
  /** Asks an operator added to the round after this, its last refused ask (`longbuild replan`, PlanningReopened). */
  readonly reopened?: number;
  /** The operator's reason for reopening, told to the planner with the refusals. */
  readonly reopenReason?: string;
}

export interface BuildInfo {
  readonly buildId: string;
  readonly request: JsonValue;
  readonly requestSha256: string;
  readonly integrationRef: string;
  readonly baseHead: string;
  readonly verify: readonly (readonly string[])[];
  /** The trusted acceptance commands, when the build has any. */
  readonly acceptance?: readonly (readonly string[])[];
  readonly settings: BuildSettings;
  readonly driver: { kind: 'blueprint' | 'command'; sourceSha256: string };
  /** Absent for builds from before the sandbox (they ran unsandboxed). */
  readonly sandbox?: SandboxSettings;
  /** The tests candidates are judged by (R-48..R-51); absent for builds from before them. */
  readonly tests?: TestPolicy;
}

/**
 * What the tests of the integration head are, once known: from the receipt that promoted
 * it, or from a verification that measured it; `counts` null: no command reported tests there.
 */
export interface HeadTests {
  readonly head: string;
  readonly counts: TestCounts | null;
}

/** One acceptance run: the trusted acceptance commands on one integration head. */
export interface AcceptanceRun {
  readonly runId: string;
  /** The milestone whose checkpoint's head it checks; null: an operator's run on the head as it was. */
  readonly milestoneId: string | null;
  readonly head: string;
  readonly status: 'started' | 'passed' | 'failed';
  readonly reason?: string;
  readonly evidence?: readonly CommandEvidence[];
  /** The log position of its result (time travel, the planner's evidence). */
  readonly position?: number;
}

/** Acceptance so far: every run, the one open, the newest finished, an operator's pending request. */
export interface AcceptanceState {
  readonly runs: Readonly<Record<string, AcceptanceRun>>;
  readonly count: number;
  readonly open: string | null;
  readonly latest: string | null;
  readonly requested: boolean;
}

/**
 * What the build state keeps of a checkpoint once a horizon replaces its window (decision 0032):
 * its scalars — what it belongs to, the graph and the integration head it certifies, its counts —
 * not its lists (accepted nodes, contracts, foundations, decisions, the next horizon), which only
 * the planner's input reads, and only of the window's checkpoints. The whole checkpoint
 * stays in its CheckpointWritten event.
 */
export type CheckpointHead = Omit<Checkpoint, 'acceptedNodes' | 'contracts' | 'foundations' | 'decisions' | 'nextHorizon'>;

export interface CheckpointRecord {
  /** Whole while its milestone is in the horizon's detailed window; then its head. */
  readonly checkpoint: Checkpoint | CheckpointHead;
  readonly sha256: string;
  readonly position: number;
}

/** The head of a checkpoint (idempotent). */
export function checkpointHeadOf(c: Checkpoint | CheckpointHead): CheckpointHead {
  return {
    milestoneId: c.milestoneId, horizonId: c.horizonId, horizonRevision: c.horizonRevision, graphRevision: c.graphRevision,
    graphSha256: c.graphSha256, integrationHead: c.integrationHead, metrics: c.metrics, createdAt: c.createdAt,
  };
}

/** A checkpoint whole, as the state keeps the window's; asking for another one whole is a bug, refused here. */
export function wholeCheckpoint(c: CheckpointRecord): Checkpoint {
  if ('acceptedNodes' in c.checkpoint) return c.checkpoint;
  throw new Error(`checkpoint of milestone ${c.checkpoint.milestoneId} is held as its head only (its window was renewed): read it from its CheckpointWritten event`);
}
