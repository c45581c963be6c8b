import { Immer, isDraft, original, type Draft } from 'immer';
import { planOrder } from './graph.js';
import { forgetNodes, noteNodesFolded } from './graph-index.js';
import { isRecordTable, plainRecord, someValue, TableDraft } from './record-table.js';
import type { JsonValue } from '../events/canonical.js';
import type { StoredEvent } from '../events/envelope.js';
import type { DataOf, DomainEvent, NodeState } from '../events/catalogue.js';
import { CorruptLogError } from '../events/errors.js';
import { applyCompaction, carrySummaryIndex, summaryLookups, type SummaryRecord } from './summaries.js';
import { shardDraft, shardedOf, shardGet, shardSet, type Sharded } from './sharded.js';

export type { AcceptanceRun, AcceptanceState, AttemptRecord, BuildInfo, CheckpointHead, CheckpointRecord, HorizonRecord, JobRecord, NodeRecord, PlannerCallRecord } from './build-records.js';
export { checkpointHeadOf, wholeCheckpoint } from './build-records.js';
import { attemptIdOf, checkpointHeadOf, type AcceptanceState, type CheckpointHead, type CheckpointRecord, type AttemptRecord, type BuildInfo, type HorizonRecord, type JobRecord, type NodeRecord, type PlannerCallRecord } from './build-records.js';

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
   * Recorded call durations (the critical path's estimates, issue 16): worker calls that report
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
  /** Graph revision → position of the event that produced it (time travel by revision; sharded). */
  readonly revisionPositions: Sharded<number>;
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
  /** System-level acceptance runs (issue 16); absent until the first one. */
  readonly acceptance?: AcceptanceState;
  /** The parent of a fork, from its newest ForkedFrom; `at`: that event's position. */
  readonly fork?: ForkRecord;
  /** Planner and worker results adopted from a fork's parent instead of calling; absent: none. */
  readonly reused?: { readonly planner: number; readonly worker: number };
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
  revisionPositions: shardedOf({ [revisionKey(0)]: 0 }),
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
    graphBumped = false;
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
  graphBumped = false;
  applyDomainEvent(state, { type: event.type, data: event.data } as DomainEvent, event.metadata.recordedAt);
  forgetNodes(state.nodes);
}

/**
 * Whether the event being folded has already made a graph revision. Set at the start of every
 * (synchronous) produce of one event; it replaces a read of `revisionPositions` through the
 * draft, which made immer copy two 64-entry bucket indexes per event just to look.
 */
let graphBumped = false;

function bumpGraph(draft: Draft<BuildState>): void {
  // One event is one graph change however many nodes it touches (a batch promotion), so every
  // revision names exactly one position and time travel by revision lands on that revision.
  if (graphBumped) return;
  graphBumped = true;
  draft.graphRevision += 1;
  shardSet(draft.revisionPositions, revisionKey(draft.graphRevision), draft.position);
}

function closeJob(draft: Draft<BuildState>, jobId: string): void {
  if (draft.openJobs.includes(jobId)) draft.openJobs = draft.openJobs.filter((id) => id !== jobId);
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

/**
 * The key of graph revision `revision` in `revisionPositions`: never an integer-like string, which
 * V8 would keep as an element of its leaf and make every copy of that leaf slow (decision 0017,
 * "Bucket names").
 */
function revisionKey(revision: number): string {
  return `r${revision}`;
}

/** The log position that produced graph revision `revision`, or undefined. */
export function positionOfRevision(state: Pick<BuildState, 'revisionPositions'>, revision: number): number | undefined {
  return shardGet(state.revisionPositions, revisionKey(revision));
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
    revisionPositions: shardedOf(at === undefined ? {} : { [revisionKey(state.graphRevision)]: at }),
  };
}

function setNodeState(draft: Draft<BuildState>, nodeId: string, state: NodeState): void {
  const node = draft.nodes[nodeId];
  if (!node || node.state === state) return;
  node.state = state;
  bumpGraph(draft);
}

function failedNodeState(draft: Draft<BuildState>, nodeId: string): NodeState {
  const node = draft.nodes[nodeId];
  const max = node?.attemptLimit ?? draft.build?.settings.maxAttempts ?? 3;
  return node && node.attempts >= max ? 'blocked' : 'revising';
}

function applyDomainEvent(draft: Draft<BuildState>, event: DomainEvent, recordedAt: string): void {
  switch (event.type) {
    case 'BuildInitialized': {
      const d = event.data;
      draft.build = {
        buildId: d.buildId, request: d.request as Draft<JsonValue>, requestSha256: d.requestSha256, integrationRef: d.integrationRef,
        baseHead: d.baseHead, verify: d.verify, settings: d.settings, driver: d.driver,
        ...(d.sandbox === undefined ? {} : { sandbox: d.sandbox }),
        ...(d.acceptance === undefined ? {} : { acceptance: d.acceptance }),
      };
      draft.integrationHead = d.baseHead;
      return;
    }
    case 'PlannerInvoked': {
      const d = event.data;
      draft.plannerCalls[d.callId] = { callId: d.callId, purpose: d.purpose, status: 'invoked', invocations: 1, rejection: null };
      draft.calls.planner += 1;
      return;
    }
    case 'EffectReinvoked': {
      draft.recoveries += 1;
      if (event.data.effect === 'planner') {
        draft.calls.planner += 1;
        const call = draft.plannerCalls[event.data.key];
        if (call) call.invocations += 1;
      } else {
        draft.calls.worker += 1;
        const prefix = `${draft.build?.buildId}:`;
        const attemptId = event.data.key.startsWith(prefix) ? event.data.key.slice(prefix.length) : event.data.key;
        const attempt = shardDraft(draft.attempts, attemptId);
        if (attempt) attempt.invocations = (attempt.invocations ?? 1) + 1;
      }
      return;
    }
    case 'PlannerReturned': {
      const call = draft.plannerCalls[event.data.callId];
      if (call) call.status = 'returned';
      if (event.data.reused !== undefined) (draft.reused ??= { planner: 0, worker: 0 }).planner += 1;
      return;
    }
    case 'ProposalRejected': {
      const call = draft.plannerCalls[event.data.callId];
      if (call) {
        call.status = 'rejected';
        call.rejection = { rule: event.data.rule, reason: event.data.reason };
      }
      return;
    }
    case 'HorizonSealed':
    case 'HorizonRenewed': {
      // a repeat of the horizon in force is a no-op; another plan under its identity (or a
      // revision out of order) is a log no correct host writes.
      const conflict = horizonConflict(draft.horizon, event.type, event.data);
      if (conflict === 'same') return;
      if (conflict !== null) throw new CorruptLogError(draft.position, conflict);
      applyHorizon(draft, event.data);
      return;
    }
    case 'AttemptStarted': {
      const d = event.data;
      shardSet(draft.attempts, d.attemptId, {
        attemptId: d.attemptId, nodeId: d.nodeId, attempt: d.attempt, baseHead: d.baseHead, branch: d.branch,
        commitDate: recordedAt, status: 'started', commit: null, adopted: false,
      });
      if (!draft.openAttempts.includes(d.attemptId)) draft.openAttempts.push(d.attemptId);
      const node = draft.nodes[d.nodeId];
      if (node) node.attempts = d.attempt;
      draft.calls.worker += 1;
      setNodeState(draft, d.nodeId, 'running');
      return;
    }
    case 'AttemptFinished': {
      const d = event.data;
      const attempt = shardDraft(draft.attempts, d.attemptId);
      draft.openAttempts = draft.openAttempts.filter((id) => id !== d.attemptId);
      if (attempt) {
        attempt.status = d.outcome;
        attempt.commit = d.commit ?? null;
        attempt.adopted = d.adopted;
        attempt.evidenceSha256 = d.evidenceSha256;
      }
      if (d.reused !== undefined) (draft.reused ??= { planner: 0, worker: 0 }).worker += 1;
      if (d.durationMs !== undefined) {
        draft.durations ??= { worker: { calls: 0, ms: 0 }, verify: { jobs: 0, ms: 0 } };
        draft.durations.worker.calls += 1;
        draft.durations.worker.ms += d.durationMs;
      }
      const node = draft.nodes[d.nodeId];
      if (node && d.decision !== undefined) node.decision = d.decision;
      if (node && d.outcome === 'failed') {
        node.lastFailure = { attemptId: d.attemptId, reason: d.reason ?? 'the attempt failed', ...(d.stdoutSha256 !== undefined && d.stderrSha256 !== undefined ? { evidence: [d.stdoutSha256, d.stderrSha256] } : {}) };
      }
      if (d.outcome === 'committed') setNodeState(draft, d.nodeId, 'validating');
      else if (d.outcome === 'recorded') setNodeState(draft, d.nodeId, 'accepted');
      else setNodeState(draft, d.nodeId, failedNodeState(draft, d.nodeId));
      return;
    }
    case 'IntegrationStarted': {
      const d = event.data;
      if (shardGet(draft.jobs as Sharded<JobRecord>, d.jobId) === undefined) {
        draft.jobCount += 1;
        draft.openJobs.push(d.jobId);
        for (const id of d.nodeIds) {
          const node = draft.nodes[id];
          if (node) node.jobIds = [...(node.jobIds ?? []), d.jobId];
        }
      }
      // A job that integrates the next half of a split takes it off the queue.
      const next = draft.batchQueue[0];
      const queued = next !== undefined && next.length === d.nodeIds.length && next.every((id, i) => id === d.nodeIds[i]);
      if (queued) draft.batchQueue.shift();
      shardSet(draft.jobs, d.jobId, {
        jobId: d.jobId, nodeIds: d.nodeIds, candidates: d.candidates, baseHead: d.baseHead, startedAt: recordedAt,
        status: 'started', verification: null, receipt: null, adopted: false,
        ...(d.after !== undefined ? { after: d.after } : {}), ...(queued ? { queued: true as const } : {}),
      });
      return;
    }
    case 'VerificationFinished': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      if (!job) return;
      // A candidate that did not apply ran no verification command (its evidence is the conflict).
      if (d.resultCommit !== null) {
        draft.verifications.commands += d.evidence.length;
        draft.verifications.cacheHits += d.evidence.filter((e) => e.cacheHit).length;
        const ran = d.evidence.filter((e) => !e.cacheHit);
        if (ran.length > 0) {
          draft.durations ??= { worker: { calls: 0, ms: 0 }, verify: { jobs: 0, ms: 0 } };
          draft.durations.verify.jobs += 1;
          draft.durations.verify.ms += Math.round(ran.reduce((t, e) => t + e.durationMs, 0));
        }
      }
      job.status = 'verified';
      job.verification = {
        passed: d.passed, ...(d.reason !== undefined ? { reason: d.reason } : {}), resultCommit: d.resultCommit, tree: d.tree, evidence: d.evidence, evidenceSha256: d.evidenceSha256,
      };
      return;
    }
    case 'IntegrationPromoted': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      closeJob(draft, d.jobId);
      if (job) {
        job.status = 'promoted';
        job.receipt = d.receipt;
        job.adopted = d.adopted;
      }
      draft.integrationHead = d.receipt.resultCommit;
      for (const c of d.receipt.candidates) {
        const node = draft.nodes[c.nodeId];
        if (node) {
          node.commit = c.commit;
          node.receiptJobId = d.jobId;
        }
        setNodeState(draft, c.nodeId, 'accepted');
      }
      return;
    }
    case 'IntegrationFailed': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      closeJob(draft, d.jobId);
      if (job) job.status = 'failed';
      // The failing command's output (the last one run) and each node's candidate, for the rework.
      const failing = job?.verification?.evidence.at(-1);
      for (const id of d.nodeIds) {
        const node = draft.nodes[id];
        const candidate = job?.candidates.find((c) => c.nodeId === id);
        if (node) {
          node.lastFailure = {
            jobId: d.jobId, reason: d.reason,
            ...(failing ? { evidence: [failing.stdoutSha256, failing.stderrSha256] } : {}),
            ...(candidate ? { candidate: { attemptId: candidate.attemptId, commit: candidate.commit } } : {}),
          };
        }
        setNodeState(draft, id, failedNodeState(draft, id));
      }
      return;
    }
    case 'IntegrationDiscarded': {
      // Its nodes stay validating and are integrated again; a split's group goes back in the queue.
      const job = shardDraft(draft.jobs, event.data.jobId);
      closeJob(draft, event.data.jobId);
      if (job) {
        job.status = 'discarded';
        if (job.queued === true) draft.batchQueue.push([...job.nodeIds]);
      }
      return;
    }
    case 'BatchSplit': {
      const job = shardDraft(draft.jobs, event.data.jobId);
      closeJob(draft, event.data.jobId);
      if (job) job.status = 'split';
      draft.batchQueue.unshift(...event.data.halves);
      return;
    }
    case 'CheckpointWritten': {
      const d = event.data;
      // Whole while its window is open (the planner's input reads it, R-16); a head otherwise (decision 0032).
      const open = draft.horizon?.detailed.some((m) => m.id === d.checkpoint.milestoneId) === true;
      draft.checkpoints[d.checkpoint.milestoneId] = { checkpoint: open ? d.checkpoint : checkpointHeadOf(d.checkpoint), sha256: d.checkpointSha256, position: draft.position };
      if (draft.build?.settings.compaction) draft.pendingCompactions.push(d.checkpoint.milestoneId);
      return;
    }
    case 'MilestoneCompacted': {
      if (draft.summaries[event.data.summaryId]) return; // a replayed compaction changes nothing
      applyCompaction(draft, event.data, draft.position);
      bumpGraph(draft);
      return;
    }
    case 'BuildCompleted':
      draft.completed = true;
      return;
    case 'BuildBlocked':
      draft.blocked = { reason: event.data.reason, nodeIds: event.data.nodeIds };
      return;
    case 'RefRepaired':
      draft.recoveries += 1; // the refs were made to agree with the log; nothing else changes
      return;
    case 'NodeRetried': {
      const node = draft.nodes[event.data.nodeId];
      if (!node || node.state !== 'blocked') return; // only a blocked node is retried (the decider says so)
      node.attemptLimit = event.data.attemptLimit;
      setNodeState(draft, event.data.nodeId, 'revising');
      draft.blocked = null;
      return;
    }
    case 'NodeCanceled': {
      for (const id of event.data.nodeIds) {
        const node = draft.nodes[id];
        if (node && node.state !== 'accepted') setNodeState(draft, id, 'canceled'); // accepted work stays accepted
      }
      draft.blocked = null;
      return;
    }
    case 'AcceptanceStarted': {
      const d = event.data;
      const a = (draft.acceptance ??= { runs: {}, count: 0, open: null, latest: null, requested: false });
      if (a.runs[d.runId] === undefined) a.count += 1;
      a.runs[d.runId] = { runId: d.runId, milestoneId: d.milestoneId, head: d.head, status: 'started' };
      a.open = d.runId;
      // A run on the head as it is answers an operator's request for one.
      if (d.milestoneId === null) a.requested = false;
      return;
    }
    case 'AcceptanceFinished': {
      const d = event.data;
      const run = draft.acceptance?.runs[d.runId];
      if (!run) return;
      run.status = d.passed ? 'passed' : 'failed';
      run.evidence = d.evidence;
      run.position = draft.position;
      if (d.reason !== undefined) run.reason = d.reason;
      draft.acceptance!.open = null;
      draft.acceptance!.latest = d.runId;
      return;
    }
    case 'AcceptanceRequested': {
      (draft.acceptance ??= { runs: {}, count: 0, open: null, latest: null, requested: false }).requested = true;
      return;
    }
    case 'ForkedFrom': {
      // the build goes on from the parent's state under the driver the fork names. Like a
      // recovery event, it is not part of the work: the logical clock skips it, so an unchanged
      // blueprint fork records the parent's times, commit dates and so commits.
      const d = event.data;
      if (draft.build) {
        Object.assign(draft.build, { driver: d.driver, request: d.request as Draft<JsonValue>, requestSha256: d.requestSha256, verify: d.verify, settings: d.settings });
        if (d.acceptance === undefined) delete draft.build.acceptance;
        else draft.build.acceptance = d.acceptance;
      }
      const { buildId, repo, dir, position, headHash } = d.parent;
      draft.fork = { buildId, repo, dir, position, headHash, at: draft.position };
      draft.recoveries += 1;
      return;
    }
    default: {
      // Exhaustive over the catalogue; an event type this build does not know is ignored.
      const unknown: never = event;
      void unknown;
    }
  }
}

/**
 * whether a seal or renewal may follow the horizon in force. 'same': the same plan under the
 * same identity and revision (a no-op); a reason: another plan under an identity already used
 * (the same horizon id at the same or an earlier revision, or a renewal skipping revisions); null: it may.
 */
export function horizonConflict(
  current: Pick<HorizonRecord, 'horizonId' | 'revision' | 'planSha256'> | null,
  type: 'HorizonSealed' | 'HorizonRenewed',
  d: { readonly horizonId: string; readonly revision: number; readonly planSha256: string },
): 'same' | string | null {
  if (current === null) return type === 'HorizonSealed' ? null : `R-15: renewal of ${d.horizonId} to r${d.revision} without a sealed horizon`;
  if (current.horizonId === d.horizonId && current.revision === d.revision && current.planSha256 === d.planSha256) return 'same';
  if (d.horizonId !== current.horizonId) return null; // a new identity reuses nothing
  if (type === 'HorizonRenewed' && d.revision === current.revision + 1) return null;
  return `R-15: ${type === 'HorizonSealed' ? 'a seal' : 'a renewal'} of ${d.horizonId} r${d.revision} (plan ${d.planSha256.slice(0, 12)}) would replace ${current.horizonId} r${current.revision} (plan ${current.planSha256.slice(0, 12)}): a sealed identity is never reused for another plan`;
}

function applyHorizon(draft: Draft<BuildState>, d: DataOf<'HorizonSealed'> | DataOf<'HorizonRenewed'>): void {
  // The checkpoints of the window this horizon replaces keep their heads (decision 0032): the
  // planner's input is the only reader of a checkpoint's lists, and only of its window's.
  const window = new Set(d.detailed.map((m) => m.id));
  for (const m of draft.horizon?.detailed ?? []) {
    const c = Object.hasOwn(draft.checkpoints, m.id) ? draft.checkpoints[m.id]! : undefined;
    if (c !== undefined && !window.has(m.id)) c.checkpoint = checkpointHeadOf(c.checkpoint) as Draft<CheckpointHead>;
  }
  draft.horizon = {
    horizonId: d.horizonId, revision: d.revision, planSha256: d.planSha256, detailed: d.detailed, coarse: d.coarse, pins: d.pins, callId: d.callId,
  };
  const added: string[] = [];
  // A dependency on compacted work is a dependency on the summary that now stands for it.
  const summaries = summaryLookups((isDraft(draft) ? original(draft)! : draft).summaries);
  const depsOf = (deps: readonly string[]): string[] => {
    const mapped = deps.map((dep) => (draft.nodes[dep] ? dep : summaries.liveSummaryOf(dep) ?? dep));
    // Two compacted deps may map to one summary: keep it once (only then, so old logs fold the same).
    return mapped.every((dep, i) => dep === deps[i]) ? mapped : [...new Set(mapped)];
  };
  for (const n of d.nodes) {
    if (draft.nodes[n.id] || summaries.liveSummaryOf(n.id) !== undefined) continue;
    draft.nodes[n.id] = {
      id: n.id, kind: n.kind, deps: depsOf(n.deps), milestone: n.milestone,
      state: n.accepted ? 'accepted' : 'queued',
      ...(n.title !== undefined ? { title: n.title } : {}),
      ...(n.description !== undefined ? { description: n.description } : {}),
      ...(n.acceptance !== undefined ? { acceptance: n.acceptance } : {}),
      ...(n.contract !== undefined ? { contract: n.contract } : {}),
      ...(n.foundation !== undefined ? { foundation: n.foundation } : {}),
      ...(n.decision !== undefined && n.accepted ? { decision: n.decision } : {}),
      attempts: 0, commit: null, receiptJobId: null,
    };
    added.push(n.id);
  }
  if (added.length > 0) {
    bumpGraph(draft);
    // R-10's tie-break is the plan's own order: a milestone's nodes all come from one plan, and
    // the order of a plan never depends on what was compacted before it.
    draft.topoIndex = { ...draft.topoIndex, ...planOrder(draft.nodes as Record<string, NodeRecord>, added) };
  }
}
