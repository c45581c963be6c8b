/**
 * Ports the controller drives. Types only: implementations live in src/adapters.
 * Everything a port returns is untrusted input and is validated by the host.
 */
import type { Usage } from '../events/catalogue.js';
import type { JsonValue } from '../events/canonical.js';
import type { Checkpoint, MilestoneRef, NodeKind, NodeState, PlannedNode } from '../events/catalogue.js';
import type { PlannerPurpose } from './call-ids.js';

/** What a planner sees. It never receives a writable path. */
export interface PlannerInput {
  readonly purpose: PlannerPurpose;
  /** Idempotency key: the same call after a crash carries the same id. */
  readonly callId: string;
  readonly request: JsonValue;
  readonly horizon: {
    readonly horizonId: string;
    readonly revision: number;
    readonly detailed: readonly MilestoneRef[];
    readonly coarse: readonly MilestoneRef[];
  } | null;
  /**
   * The exact checkpoints of the horizon's detailed milestones (the window being renewed or
   * repaired), oldest first; none on a seal. Earlier windows' milestones are in `graph` as summary
   * nodes (R-21), not repeated here (decision 0029).
   */
  readonly checkpoints: readonly Checkpoint[];
  /**
   * On a re-ask: why each earlier proposal of this planning round was refused, oldest first
   * (absent on a round's first ask). A planner should fix exactly what these name.
   */
  readonly feedback?: readonly { readonly callId: string; readonly rule: string; readonly reason: string }[];
  readonly graph: {
    readonly revision: number;
    readonly sha256: string;
    readonly nodes: readonly { id: string; kind: NodeKind; state: NodeState; milestone: string }[];
  };
  readonly integrationHead: string;
  /**
   * System-level acceptance: the runs of the window in force's checkpoints, and the
   * newest. A failed one is evidence: plan the repair (a renewal's window, or — purpose `repair`
   * — a window of its own). `output`: the tail of the failing command's output.
   */
  readonly acceptance?: readonly {
    readonly runId: string; readonly milestoneId: string | null; readonly head: string; readonly passed: boolean;
    readonly reason?: string; readonly output?: string;
    /** The failing command's output files (the host reads them into `output`). */
    readonly evidence?: readonly string[];
  }[];
  /**
   * The verification surface: the files (`files`) and existing tests (`tests`) a node's
   * candidate may change only when the node declares it (`changes`), and what happens when a
   * declared test change stops base tests passing (`testChanges`; a node names them in `retires`).
   */
  readonly verificationSurface?: VerificationSurfaceInput;
  /**
   * Operators' reviews of the window's checkpoints and of the final head (R-60, config `approve`),
   * oldest first. A rejected one (`approved: false`, `reason`) is to be repaired: in a renewal's
   * window, or — purpose `repair` — a window of its own.
   */
  readonly reviews?: readonly { readonly gate: 'checkpoint' | 'land'; readonly milestoneId?: string; readonly head: string; readonly approved: boolean; readonly reason?: string }[];
  /**
   * The build's windows: a proposal holds at most `detailed` detailed and `coarse` coarse
   * milestones (the config's detailedWindow and coarseWindow); more is refused.
   */
  readonly windows?: { readonly detailed: number; readonly coarse: number };
}

/** The verification surface as planners and workers see it (R-48..R-50). */
export interface VerificationSurfaceInput {
  readonly files: readonly string[];
  readonly tests: readonly string[];
  readonly testChanges: 'strict' | 'review' | 'record';
}

/** A planner's proposal, before validation. */
export interface ProposalShape {
  readonly detailed: readonly (MilestoneRef & { nodes: readonly Omit<PlannedNode, 'milestone'>[] })[];
  readonly coarse: readonly MilestoneRef[];
}

export interface Planner {
  /** Route pinned in the sealed horizon, e.g. "scripted:blueprint" or "command:claude". */
  readonly route: string;
  /** Returns the raw proposal; the host validates it. Throws only for transport failures. */
  propose(input: PlannerInput): Promise<unknown>;
  /**
   * The proposal with what the call used, for a planner that can tell; `propose` stands
   * for it otherwise. `call.usageFile`: where a command may report its usage.
   */
  answer?(input: PlannerInput, call: CallOptions): Promise<PlannerAnswer>;
}

/** What the host gives one planner or worker call besides its input. */
export interface CallOptions {
  /** The file a command reports its usage in (LONGBUILD_USAGE_FILE, R-58); its directory exists and is the call's to write. */
  readonly usageFile?: string;
  /** A W3C traceparent naming the call's span in the build's trace: given to the call as TRACEPARENT, so an agent's own spans join it. */
  readonly traceparent?: string;
}

export interface PlannerAnswer {
  readonly proposal: unknown;
  /** What the call used, as its agent reported it (a command's usage file is read by the host). */
  readonly usage?: Usage;
  /** The answer was kept from an invocation a crash interrupted: this one asked no model. */
  readonly replayed?: boolean;
}

/** The work packet a worker gets: one node, from the integration head it names. */
export interface WorkPacket {
  readonly attemptId: string;
  readonly idempotencyKey: string;
  readonly nodeId: string;
  readonly attempt: number;
  readonly kind: NodeKind;
  readonly milestone: string;
  readonly deps: readonly string[];
  readonly title?: string;
  /** What the build is for: the request the build was started with. */
  readonly request?: JsonValue;
  /** The node's milestone as planned: its title and intent. */
  readonly milestoneTitle?: string;
  readonly milestoneIntent?: string;
  /** What to build and how it will be judged, as the planner wrote them. */
  readonly description?: string;
  readonly acceptance?: readonly string[];
  /** What of the verification surface the plan lets this node change, and the tests it may stop passing. */
  readonly changes?: readonly ('tests' | 'verification')[];
  readonly retires?: readonly string[];
  /** The build's verification surface: its files and existing tests change only as `changes` allows; new tests may be added. */
  readonly verificationSurface?: VerificationSurfaceInput;
  /**
   * What each dependency is and produced: its accepted commit (null: none yet, or read-only) and
   * decision; a summary of a compacted milestone gives the head holding it and its nodes' commits.
   */
  readonly dependencies?: readonly {
    readonly id: string; readonly kind: NodeKind; readonly title?: string; readonly commit: string | null; readonly decision?: string;
    /** The paths its accepted commit changed (a summary: its nodes' commits together), at most 200. */
    readonly files?: readonly string[];
    readonly summary?: { readonly milestoneId: string; readonly acceptedCommits: readonly { nodeId: string; commit: string }[]; readonly decisions: readonly { nodeId: string; decision: string }[] };
  }[];
  /**
   * On attempt 2 and later: why the last attempt or integration of this node failed, the tail of
   * the output that shows it (the worker's, or the failing verification command's), and whether
   * the working directory starts from that attempt's candidate (`reworks`: rework it, do not
   * start over) or from the base head (its changes no longer apply, or it made none).
   */
  readonly previousFailure?: {
    readonly attemptId?: string; readonly jobId?: string; readonly reason: string;
    readonly output?: string; readonly reworks?: string;
    /**
     * Files where the reworked candidate's changes conflicted with the new base head (another
     * node's work was integrated meanwhile): they hold git's conflict markers; resolve them.
     */
    readonly conflicts?: readonly string[];
  };
  readonly baseHead: string;
  readonly branch: string;
  /** Fixed author/committer date for reproducible commits (ISO 8601). */
  readonly commitDate: string;
}

export interface WorkerResult {
  /** committed: a commit on the attempt branch; recorded: a read-only result; failed: no usable result. */
  readonly outcome: 'committed' | 'recorded' | 'failed';
  readonly decision?: string;
  readonly reason?: string;
  readonly stdout: string;
  readonly stderr: string;
  /** How long the worker's process ran (absent for longbuild's own scripted worker). */
  readonly durationMs?: number;
  /** What the call used, as its agent reported it (R-58; a command's usage file is read by the host). */
  readonly usage?: Usage;
}

export interface Worker {
  /**
   * A retry of a candidate that failed integration starts from that candidate's changes (rework)
   * instead of the bare base head. On for agent presets (config `worker.rework`); a worker that
   * writes its files from scratch each time would only inherit stale ones.
   */
  readonly reworks?: boolean;
  /** Implement the packet inside `worktree` (the attempt's own checkout). */
  implement(packet: WorkPacket, worktree: string, call?: CallOptions): Promise<WorkerResult>;
}
