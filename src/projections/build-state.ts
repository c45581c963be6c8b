/**
 * The build state: its shape and initial value, the folds of stored events into it
 * (`evolveBuild` through immer and persistent tables, `evolveBuildInPlace` on a state of the
 * caller's own), and its readers (`buildView`, `callsInDoubt`, lookups by id and revision). What
 * each event changes is build-fold.ts.
 */
import { Immer, type Draft } from 'immer';
import type { Budget, DataOf, DomainEvent, NotifyKind } from '../events/catalogue.js';
import type { SpendLedger } from './spend-ledger.js';
import type { StoredEvent } from '../events/envelope.js';
import { applyDomainEvent } from './build-fold.js';
import { attemptIdOf, type HeadTests, type AcceptanceState, type AttemptRecord, type BuildInfo, type CheckpointRecord, type HorizonRecord, type JobRecord, type NodeRecord, type PlannerCallRecord } from './build-records.js';
import { forgetNodes, noteNodesFolded } from './graph-index.js';
import { isRecordTable, plainRecord, someValue, TableDraft } from './record-table.js';
import { shardedOf, shardGet, type Sharded } from './sharded.js';
import { revisionPosition, revisionPositionsFrom, type RevisionPositions } from './revision-positions.js';
import { carrySummaryIndex, type SummaryRecord } from './summaries.js';

export type { HeadTests, AcceptanceRun, AcceptanceState, AttemptRecord, BuildInfo, CheckpointHead, CheckpointRecord, HorizonRecord, JobRecord, NodeRecord, PlannerCallRecord } from './build-records.js';
export { checkpointHeadOf, wholeCheckpoint } from './build-records.js';

/** Everything the controller knows, folded from the log. Plain data: it snapshots as JSON. */
export interface BuildState {
  readonly position: number;
  readonly build: BuildInfo | null;
  readonly graphRevision: number;
  /**
   * The graph's nodes by id: a read-only record. A state `evolveBuild` made holds them in a
   * persistent table behind a record view (record-table.ts, decision 0027); one restored from a
   * snapshot or made by hand holds a plain record. Read both alike; never write to either.
   */
  readonly nodes: Readonly<Record<string, NodeRecord>>;
  readonly horizon: HorizonRecord | null;
  /**
   * Every checkpoint, by milestone: the whole one as its CheckpointWritten event carries it, its
   * SHA-256 and its position — whole while its milestone is in the horizon's detailed window, its
   * head once a horizon replaces that window (decision 0032).
   */
  readonly checkpoints: Readonly<Record<string, CheckpointRecord>>;
  /** Every attempt, by attempt id (sharded: it grows with the build, see sharded.ts). */
  readonly attempts: Sharded<AttemptRecord>;
  /** Every integration job, by job id (sharded). */
  readonly jobs: Sharded<JobRecord>;
  /** Attempts started and not finished, oldest first (R-11 recovery without scanning history). */
  readonly openAttempts: readonly string[];
  /** Jobs started or verified and not ended, oldest first. */
  readonly openJobs: readonly string[];
  /** Number of jobs ever started (the next job id). */
  readonly jobCount: number;
  /** Verification commands run and how many of them were cache hits. */
  readonly verifications: { readonly commands: number; readonly cacheHits: number };
  /**
   * Recorded call durations (the critical path's estimates): worker calls that report
   * one (AttemptFinished.durationMs), and verification jobs that ran a command (cache hits aside).
   */
  readonly durations?: { readonly worker: { readonly calls: number; readonly ms: number }; readonly verify: { readonly jobs: number; readonly ms: number } };
  readonly plannerCalls: Readonly<Record<string, PlannerCallRecord>>;
  readonly integrationHead: string | null;
  readonly calls: { readonly planner: number; readonly worker: number };
  /**
   * EffectReinvoked and RefRepaired events so far: recovery-only events an uninterrupted,
   * untampered run never appends (the host's logical clock skips them, R-19).
   */
  readonly recoveries: number;
  readonly completed: boolean;
  readonly blocked: { readonly reason: string; readonly nodeIds: readonly string[] } | null;
  /** Graph revision → position of the event that produced it (time travel by revision; revision-positions.ts). */
  readonly revisionPositions: RevisionPositions;
  /**
   * Position of every live planned node in the stable topological order of the plan that added
   * it, computed once when the plan is folded: ranking a wave never re-sorts the graph.
   */
  readonly topoIndex?: Readonly<Record<string, number>>;
  /** Node groups a BatchSplit left to integrate, next first (R-25 bisection). */
  readonly batchQueue: readonly (readonly string[])[];
  /** Every summary ever made, absorbed ones included (R-22 keeps them as history). */
  readonly summaries: Readonly<Record<string, SummaryRecord>>;
  /** Checkpointed milestones not compacted yet, in checkpoint order (only when settings.compaction). */
  readonly pendingCompactions: readonly string[];
  /** System-level acceptance runs; absent until the first one. */
  readonly acceptance?: AcceptanceState;
  /** The tests of the integration head, once a verification or a promotion says what they are. */
  readonly headTests?: HeadTests;
  /** Tests promotions retired so far, when any. */
  readonly retiredTests?: number;
  /** The parent of a fork, from its newest ForkedFrom; `at`: that event's position. */
  readonly fork?: ForkRecord;
  /** Planner and worker results adopted from a fork's parent instead of calling; absent: none. */
  readonly reused?: { readonly planner: number; readonly worker: number };
  /** What the build's calls used; absent until the first call is recorded. */
  readonly spend?: SpendLedger;
  /** The budget an operator set (BudgetChanged, R-59); absent: the one the build started with (settings.budget). */
  readonly budget?: Budget;
  /** The build is paused on its budget (the last BudgetReached since the budget last changed); absent: not paused. */
  readonly budgetPause?: DataOf<'BudgetReached'>;
  /** The notification outbox: triggers not yet notified, per notifier; absent: the build notifies nobody. */
  readonly notify?: NotifyOutbox;
  /** Operators' reviews of gated heads of the horizon revision in force (R-60), by reviewKey; absent: none. */
  readonly reviews?: Readonly<Record<string, ReviewRecord>>;
}

/** An operator's review of a gated head: asked for (ApprovalRequested), then approved or rejected (HeadReviewed). */
export interface ReviewRecord {
  readonly gate: 'checkpoint' | 'land';
  readonly milestoneId?: string;
  readonly head: string;
  readonly status: 'requested' | 'approved' | 'rejected';
  readonly reason?: string;
  readonly user?: string;
  readonly horizonRevision: number;
  /** The position of the event that last changed it. */
  readonly position: number;
}

export interface NotifyOutbox {
  /** Events a notifier is to be told of, oldest first. */
  readonly pending: readonly { readonly position: number; readonly notifier: number; readonly kind: NotifyKind }[];
  readonly delivered: number;
  readonly failed: number;
  /** When each notifier was last told of each kind (`notifier:kind` → recordedAt), for coalescing. */
  readonly last: Readonly<Record<string, string>>;
}

export interface ForkRecord {
  readonly buildId: string;
  readonly repo: string;
  readonly dir: string;
  readonly position: number;
  readonly headHash: string;
  readonly at: number;
}

export const initialBuildState: BuildState = {
  position: 0,
  build: null,
  graphRevision: 0,
  nodes: {},
  horizon: null,
  checkpoints: {},
  attempts: [],
  jobs: [],
  openAttempts: [],
  openJobs: [],
  jobCount: 0,
  verifications: { commands: 0, cacheHits: 0 },
  plannerCalls: {},
  integrationHead: null,
  calls: { planner: 0, worker: 0 },
  recoveries: 0,
  completed: false,
  blocked: null,
  revisionPositions: revisionPositionsFrom(0, [0]),
  batchQueue: [],
  summaries: {},
  pendingCompactions: [],
};

/**
 * The fold's own immer instance. Auto-freeze is off: deep-freezing every new subtree cost a fifth
 * of a step, and nothing outside `produce` writes to a state (the types are readonly throughout).
 */
const immer = new Immer({ autoFreeze: false });

/**
 * The records the fold keeps as persistent tables (record-table.ts, decisions 0027 and 0035), not
 * as immer's plain records: immer copies a record whole at its first write in every event — the
 * nodes at nearly every event, the checkpoints, summaries and planner calls once or twice per
 * milestone, each as large as the build's history.
 */
const TABLE_KEYS = ['nodes', 'checkpoints', 'summaries', 'plannerCalls'] as const;
type TableKey = (typeof TABLE_KEYS)[number];
const isTableKey = (key: PropertyKey): key is TableKey => (TABLE_KEYS as readonly PropertyKey[]).includes(key);

/** Fold one stored event into the build state (pure; R-7). Unknown types are ignored. */
export function evolveBuild(state: BuildState, event: StoredEvent): BuildState {
  // The graph index (R-9 SHA, R-10 ready wave) follows the nodes the event touched (decision 0021).
  const touched = new Set<string>();
  const tables = new Map<TableKey, TableDraft<object>>();
  const tableDraft = (key: TableKey): Record<string, unknown> => {
    let t = tables.get(key);
    if (t === undefined) tables.set(key, (t = new TableDraft<object>(state[key], immer, key === 'nodes' ? touched : undefined)));
    return t.proxy;
  };
  let next = immer.produce(state, (draft) => {
    draft.position = event.position;
    applyDomainEvent(withTables(draft, tableDraft), { type: event.type, data: event.data } as DomainEvent, event.metadata.recordedAt);
  });
  let changed: Partial<Record<TableKey, unknown>> | null = null;
  for (const [key, t] of tables) {
    const folded = t.commit();
    if (folded !== null) (changed ??= {})[key] = folded;
  }
  if (changed !== null) next = { ...next, ...changed } as BuildState;
  noteNodesFolded(state.nodes, next.nodes, touched);
  if (next.summaries !== state.summaries) carrySummaryIndex(state.summaries, next.summaries);
  return next;
}

/** The fold's draft with its tables' records answered by their table drafts (never immer's: see evolveBuild). */
function withTables(draft: Draft<BuildState>, tableDraft: (key: TableKey) => Record<string, unknown>): Draft<BuildState> {
  return new Proxy(draft, {
    get: (target, key) => (isTableKey(key) ? tableDraft(key) : Reflect.get(target, key)),
    set: (target, key, value) => {
      if (isTableKey(key)) throw new Error(`a fold may change ${String(key)} one by one, not replace them whole`);
      return Reflect.set(target, key, value);
    },
  });
}

/**
 * `state` with the records the fold keeps as tables made plain records (a shallow copy; a state
 * already plain is returned as it is): what a structured clone, canonical JSON or a fold in place
 * takes.
 */
export function plainState<S extends BuildState>(state: S): S {
  if (!TABLE_KEYS.some((key) => isRecordTable(state[key]))) return state;
  const plain = { ...state } as Record<string, unknown>;
  for (const key of TABLE_KEYS) plain[key] = plainRecord(state[key] as Readonly<Record<string, unknown>>);
  return plain as S;
}

/**
 * A mutable copy of `state` that shares nothing with it (for a fold in place): its tables as plain
 * records, the rest structurally cloned.
 */
export function ownedCopy(state: BuildState): Draft<BuildState> {
  return structuredClone(plainState(state)) as Draft<BuildState>;
}

/**
 * Fold one stored event into a mutable state, in place: the same recipe as `evolveBuild`, without
 * immer's copies (an audit that folds a whole log once and keeps no earlier state; ~10x cheaper).
 * `state` must be the caller's own (e.g. `ownedCopy(initialBuildState)`): it is changed. Its tables'
 * records are made plain records first (a state `evolveBuild` made holds tables).
 */
export function evolveBuildInPlace(state: Draft<BuildState>, event: StoredEvent): void {
  const plain = plainState(state as BuildState); // a table becomes a plain record; a plain one stays
  if (plain !== state) for (const key of TABLE_KEYS) (state as Record<TableKey, unknown>)[key] = plain[key];
  forgetNodes(state.nodes); // changed in place: nothing derived from it stays
  state.position = event.position;
  applyDomainEvent(state, { type: event.type, data: event.data } as DomainEvent, event.metadata.recordedAt);
  forgetNodes(state.nodes);
}

/**
 * Whether a planner or worker call may still be in flight or unrecorded: an attempt is open, or a
 * planner call was invoked and not answered. Only such calls are ever asked about in the call
 * marks (a resume's recall), so with none the marks can be forgotten (decision 0025).
 */
export function callsInDoubt(state: Pick<BuildState, 'openAttempts' | 'plannerCalls'>): boolean {
  return state.openAttempts.length > 0 || someValue(state.plannerCalls, (c) => c.status === 'invoked');
}

/** An attempt by id. */
export function attemptOf(state: Pick<BuildState, 'attempts'>, attemptId: string): AttemptRecord | undefined {
  return shardGet(state.attempts, attemptId);
}

/** A job by id. */
export function jobOf(state: Pick<BuildState, 'jobs'>, jobId: string): JobRecord | undefined {
  return shardGet(state.jobs, jobId);
}

/** The log position that produced graph revision `revision`, or undefined. */
export function positionOfRevision(state: Pick<BuildState, 'revisionPositions'>, revision: number): number | undefined {
  return revisionPosition(state.revisionPositions, revision);
}

/**
 * The build state without its closed history (R-6 time travel, R-37 audit, reading commands):
 * attempts that have finished (except each graph node's latest) and the positions of past graph
 * revisions dropped; everything else (graph, horizon, checkpoints, jobs, summaries, planner calls
 * — one per planning round —, counters, open work) kept. (Of checkpoints outside the window and
 * of absorbed summaries the state itself keeps only their heads: decision 0032.)
 * The fold never reads what is dropped for anything it keeps, so for every state `s` and events
 * `E`, `buildView(fold(buildView(s), E))` equals `buildView(fold(s, E))` (property-tested): a
 * view is a valid place to start folding from, and it stays small however long the build runs.
 * The next action decided on a view is the one decided on the whole state, and so is everything
 * `status` and `show` print (property-tested on simulated builds): they read the view. A step is
 * never decided on a view: a compaction lists the evidence of earlier attempts, which it drops.
 * Jobs are kept whole: a replayed IntegrationStarted looks up the job it names.
 */
export function buildView(state: BuildState): BuildState {
  const attempts: Record<string, AttemptRecord> = {};
  const keep = (id: string): void => {
    const a = attemptOf(state, id);
    if (a !== undefined) attempts[id] = a;
  };
  for (const id of state.openAttempts) keep(id);
  // A validated node is integrated with its latest attempt's commit.
  for (const id in state.nodes) if (state.nodes[id]!.attempts > 0) keep(attemptIdOf(id, state.nodes[id]!.attempts));
  const at = positionOfRevision(state, state.graphRevision);
  return {
    ...state,
    attempts: shardedOf(attempts),
    revisionPositions: at === undefined ? revisionPositionsFrom(state.graphRevision + 1, []) : revisionPositionsFrom(state.graphRevision, [at]),
  };
}
