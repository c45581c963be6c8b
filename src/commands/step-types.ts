/**
 * The vocabulary of the pure step (step.ts): what a step reports, what the host tells it, the
 * effects it may request and what each returns, and the decisions it makes.
 */
import type { JsonValue } from '../events/canonical.js';
import type { CommandEvidence, Usage, DataOf, DomainEvent, JobTests, ReportSetting, TestCounts } from '../events/catalogue.js';
import type { PlannerInput, WorkPacket } from './ports.js';
import type { ObservedRefs, RefRepair } from './refs.js';
import type { PlannerPurpose } from './call-ids.js';
import type { SurfaceJudgement } from './test-surface.js';

export type StepOutcome =
  | 'planned' | 'dispatched' | 'integrated' | 'revising' | 'checkpointed' | 'compacted'
  | 'renewed' | 'recovered' | 'horizon_complete' | 'blocked' | 'split' | 'refused'
  /** A speculative job was verified on top of jobs still open (promoted or blamed once they are), or discarded because one of them did not promote. */
  | 'verified' | 'discarded'
  /** An acceptance run ended (passed or failed). */
  | 'acceptance'
  /** The next call would start past the budget: nothing starts until `longbuild budget` raises it. */
  | 'paused'
  /** A node spent its own limit (perNode, R-59) and is blocked; the build goes on with the rest. */
  | 'over-budget'
  /** A valid proposal waits for an operator's approval: `longbuild approve` or `reject`. */
  | 'awaiting_approval';

/** Outcomes after which a run stops: the build is complete, blocked, paused on its budget or awaiting an approval. */
export function endsRun(outcome: StepOutcome): boolean {
  return outcome === 'horizon_complete' || outcome === 'blocked' || outcome === 'paused' || outcome === 'awaiting_approval';
}

/** What a step did, for the one reporting it (the CLI's progress lines, `step --json`). */
export interface StepResult {
  readonly outcome: StepOutcome;
  readonly position: number;
  readonly graphRevision: number;
  readonly detail: string;
  readonly nodeId?: string;
  readonly milestoneId?: string;
  readonly reason?: string;
}

/** What the host knows that the log does not say: the time of the next event, and its own progress. */
export interface StepContext {
  /** The time the next event records (the host's clock, R-19). */
  readonly now: string;
  /** True once attempt branches were compared with the log since this controller opened. */
  readonly attemptRefsChecked: boolean;
  /** The planner's route, pinned in the horizon. */
  readonly plannerRoute: string;
  /** True when the worker reworks a failed candidate in a clone that starts from its changes. */
  readonly workerReworks: boolean;
  /** Attempts whose worker calls are in flight in this controller (several workers); empty when one runs at a time. */
  readonly running?: ReadonlySet<string>;
}

/** What a worker call returned, kept durably until its AttemptFinished is recorded (call marks). */
export interface KeptWorkerOutcome {
  readonly outcome: 'committed' | 'recorded' | 'failed';
  readonly stdoutSha256: string;
  readonly stderrSha256: string;
  readonly reason?: string;
  readonly decision?: string;
  readonly durationMs?: number;
  /** The call's input digest, when the host could compute it. */
  readonly inputSha256?: string;
  /** Adopted from a fork's parent instead of calling the worker: the parent's event. */
  readonly reused?: { readonly position: number; readonly hash: string };
  /** What the call used, as the worker reported it and priced. */
  readonly usage?: Usage;
}

/** A verification as the runner reports it: applied and verified (evidence stored), or not applicable (the conflict's evidence stored). */
export type VerificationOutcome =
  | {
    readonly ok: true; readonly resultCommit: string; readonly tree: string; readonly passed: boolean; readonly reason?: string; readonly evidence: readonly CommandEvidence[];
    /** The job's tests and what they were compared with, when the build has a test policy and something reported. */
    readonly tests?: JobTests;
  }
  | { readonly ok: false; readonly reason: string; readonly evidence?: readonly CommandEvidence[] };

/** What the host commits from a worker's clone. */
export type CloneCommit =
  | { readonly kind: 'committed'; readonly commit: string; readonly tree: string } | { readonly kind: 'unchanged' }
  | { readonly kind: 'refused'; readonly rule: string; readonly reason: string };

/** An AttemptFinished in the making: everything but the outcome. */
export type FinishDraft = Omit<DataOf<'AttemptFinished'>, 'outcome' | 'reason' | 'commit' | 'tree' | 'decision'>;

/** An effect the host carries out, as data; its result is settled by `settle`. */
export type EffectRequest =
  | { readonly kind: 'observe-refs'; readonly ref: string; readonly withAttempts: boolean }
  | { readonly kind: 'delete-branches'; readonly attemptIds: readonly string[]; readonly then: Focus }
  | { readonly kind: 'repair-refs'; readonly repairs: readonly RefRepair[]; readonly causationId: string; readonly then: Focus | EffectRequest }
  | { readonly kind: 'recall-planner'; readonly callId: string; readonly purpose: PlannerPurpose; readonly invocation: number }
  | { readonly kind: 'planner'; readonly callId: string; readonly purpose: PlannerPurpose; readonly invocation: number; readonly input: PlannerInput }
  | { readonly kind: 'recall-attempt'; readonly attemptId: string; readonly key: string; readonly invocation: number; readonly writable: boolean; readonly branch: string; readonly baseHead: string }
  | {
    readonly kind: 'worker'; readonly attemptId: string; readonly key: string; readonly invocation: number; readonly packet: WorkPacket; readonly writable: boolean;
    /** The candidate a retry reworks, and the failure evidence its packet quotes. */
    readonly rework: { readonly attemptId: string; readonly commit: string } | null; readonly failureEvidence: readonly string[] | undefined; readonly report: Outcome;
  }
  | {
    readonly kind: 'finish-clone'; readonly attemptId: string; readonly draft: FinishDraft; readonly noCommitReason: string; readonly report: Outcome;
    /** What to commit from the clone onto the attempt branch, or null: remove the clone only. */
    readonly commit: { readonly branch: string; readonly baseHead: string; readonly worktree: string; readonly message: string; readonly date: string } | null;
  }
  | {
    readonly kind: 'check-candidate'; readonly base: string; readonly commit: string; readonly tree: string; readonly removeClone: string | null; readonly draft: FinishDraft; readonly report: Outcome;
    /** The verification surface and what the node's plan lets it change there; absent: a build without a test policy. */
    readonly judged?: SurfaceJudgement;
  }
  | {
    readonly kind: 'verify'; readonly jobId: string; readonly baseHead: string; readonly commits: readonly string[]; readonly date: string; readonly commands: readonly (readonly string[])[]; readonly retestOnFailure: boolean; readonly recovering: boolean;
    /** The candidates of the jobs this one is stacked on, applied first, oldest first, each with its job's date (speculative integration). */
    readonly layers?: readonly IntegrationLayer[];
    /** How the tests are read and compared; absent: a build without a test policy (exit codes alone). */
    readonly tests?: VerifyTests;
  }
  /**
   * The promotion of `jobIds`: one job, or a run of verified jobs each stacked on the one before
   * it (speculative integration), promoted together by one compare-and-set to the last one's result.
   */
  /** Run the acceptance commands on `head` in a clean workspace (the cache first). */
  | { readonly kind: 'accept'; readonly runId: string; readonly head: string; readonly commands: readonly (readonly string[])[]; readonly recovering: boolean }
  | { readonly kind: 'read-ref'; readonly ref: string; readonly jobIds: readonly string[]; readonly recovering: boolean }
  | { readonly kind: 'publish'; readonly ref: string; readonly commit: string; readonly jobIds: readonly string[]; readonly recovering: boolean }
  | { readonly kind: 'promote'; readonly ref: string; readonly commit: string; readonly expectedOld: string; readonly tries: number; readonly jobIds: readonly string[]; readonly recovering: boolean };

/** What a verification's tests are read and compared with. */
export interface VerifyTests {
  /** Each verification command's report setting, in order (null: its exit code alone). */
  readonly reports: readonly (ReportSetting | null)[];
  /** The integration head the job is verified on. */
  readonly head: string;
  /** The head's tests as the log knows them: counts, null (nothing reported there), undefined (unknown: measured). */
  readonly known: TestCounts | null | undefined;
  /** The test globs when the hold-out runs; null: it does not. */
  readonly holdout: readonly string[] | null;
}

/** One job's candidates as its integration applies them (a layer under a stacked job). */
export interface IntegrationLayer {
  readonly jobId: string;
  readonly commits: readonly string[];
  readonly date: string;
}

/** What each effect returns. */
export interface EffectResults {
  'observe-refs': ObservedRefs;
  'delete-branches': null;
  'repair-refs': null;
  'recall-planner': { readonly kept: JsonValue | null; readonly started: boolean; readonly journalLost?: true; readonly lostUsage?: Usage };
  planner: { readonly answer: unknown; readonly inputSha256?: string; readonly reused?: { readonly position: number; readonly hash: string }; readonly usage?: Usage };
  'recall-attempt': { readonly found: { readonly commit: string; readonly tree: string } | null; readonly kept: KeptWorkerOutcome | null; readonly clone: string | null; readonly started: boolean; readonly journalLost?: true; readonly lostUsage?: Usage };
  worker: { readonly kept: KeptWorkerOutcome; readonly worktree: string };
  'finish-clone': CloneCommit;
  'check-candidate': { readonly problem: { readonly rule: string; readonly reason: string } | null };
  verify: VerificationOutcome;
  accept: { readonly tree: string; readonly passed: boolean; readonly reason?: string; readonly evidence: readonly CommandEvidence[] };
  'read-ref': { readonly commit: string | null };
  publish: null;
  promote: { readonly ok: true } | { readonly ok: false; readonly actual: string | null };
}

export type EffectResult = EffectResults[keyof EffectResults];

/** How a step ends: its report, or one computed from the state its last append left. */
export type Outcome =
  | { readonly kind: 'report'; readonly outcome: StepOutcome; readonly detail: string; readonly nodeId?: string; readonly milestoneId?: string; readonly reason?: string }
  | { readonly kind: 'dispatched'; readonly nodeId: string; readonly attempt: number; readonly attemptId: string }
  | { readonly kind: 'rejected'; readonly rule: string; readonly reason: string };

/** What to decide next, on the state the previous decision's events left. */
export type Focus =
  | { readonly kind: 'begin' }
  | { readonly kind: 'choose' }
  | { readonly kind: 'repair-refs'; readonly repairs: readonly RefRepair[] }
  | { readonly kind: 'call-planner'; readonly callId: string; readonly purpose: PlannerPurpose }
  | { readonly kind: 'run-worker'; readonly attemptId: string; readonly report: Outcome }
  | { readonly kind: 'continue-job'; readonly jobId: string; readonly recovering: boolean }
  | { readonly kind: 'after-promotion'; readonly jobIds: readonly string[]; readonly adopted: boolean; readonly recovering: boolean }
  | { readonly kind: 'done'; readonly outcome: Outcome }
  /** Nothing to do until a call in flight returns. */
  | { readonly kind: 'wait' }
  /** The step cannot go on: the log is not a build (`corrupt`), or an effect keeps failing (`effect`). */
  | { readonly kind: 'fail'; readonly error: 'corrupt' | 'effect'; readonly message: string };

/** One decision: append these events (one atomic append), then go on with `next`. */
export interface Decision {
  readonly events: readonly DomainEvent[];
  readonly causationId: string;
  readonly next: EffectRequest | Focus;
  /**
   * Set on a dispatch (the attempt) and an integration (the job): a chain that may run alongside
   * others once these events are appended — a host with free worker slots goes on deciding.
   */
  readonly fiber?: string;
}

const EFFECT_KINDS: ReadonlySet<string> = new Set<keyof EffectResults>([
  'observe-refs', 'delete-branches', 'repair-refs', 'recall-planner', 'planner', 'recall-attempt', 'worker',
  'finish-clone', 'check-candidate', 'verify', 'accept', 'read-ref', 'publish', 'promote',
]);

/** True when what follows a decision is an effect to run (not a focus to decide on). */
export const isEffect = (next: EffectRequest | Focus): next is EffectRequest => EFFECT_KINDS.has(next.kind);

/**
 * Effects that only look (at refs, at the call marks) and change nothing: the write-ahead rule
 * does not wait for the log before them, so a call's result and the next call's intent
 * still share one commit when a step begins by observing the refs (decision 0017).
 */
const READ_ONLY_EFFECTS: ReadonlySet<string> = new Set<keyof EffectResults>(['observe-refs', 'read-ref', 'recall-planner']);

/** True when an effect changes something outside the log (its intent must be durable before it starts). */
export const changesTheWorld = (effect: EffectRequest): boolean => !READ_ONLY_EFFECTS.has(effect.kind);
