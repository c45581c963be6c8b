import type { Draft } from 'immer';
import { canonicalJson } from '../events/canonical.js';
import type { DataOf } from '../events/catalogue.js';
import type { Projection, TableSpec } from './projection.js';
import type { SummaryRecord } from './summaries.js';
import { buildView, evolveBuild, evolveBuildInPlace, initialBuildState, ownedCopy, type AttemptRecord, type BuildState, type JobRecord, type NodeRecord, type PlannerCallRecord } from './build-state.js';

const json = (v: unknown): string => canonicalJson(v);

const nodesTable: TableSpec<BuildState> = {
  name: 'graph_nodes',
  columns: ['id', 'kind', 'state', 'milestone', 'deps', 'attempts', 'commit_sha', 'receipt_job_id', 'contract', 'foundation', 'decision'],
  keyColumns: 1,
  entities: (s) => s.nodes,
  toRow: (id, e) => {
    const n = e as NodeRecord;
    return [id, n.kind, n.state, n.milestone, json(n.deps), n.attempts, n.commit, n.receiptJobId, n.contract ?? null, n.foundation ?? null, n.decision ?? null];
  },
};

const horizonsTable: TableSpec<BuildState> = {
  name: 'long_build_horizons',
  columns: ['horizon_id', 'revision', 'plan_sha256', 'detailed', 'coarse', 'pins', 'call_id'],
  keyColumns: 1,
  // One row per horizon identity; renewal compares-and-sets its revision in the same row.
  entities: (s) => (s.horizon ? { [s.horizon.horizonId]: s.horizon } : {}),
  toRow: (id, e) => {
    const h = e as NonNullable<BuildState['horizon']>;
    return [id, h.revision, h.planSha256, json(h.detailed), json(h.coarse), json(h.pins), h.callId];
  },
};

/**
 * Every checkpoint: what it certifies. The whole checkpoint is its CheckpointWritten event, at
 * `position` (the state keeps it whole only while its window is open: decision 0032).
 */
const checkpointsTable: TableSpec<BuildState> = {
  name: 'milestone_checkpoints',
  columns: ['milestone_id', 'sha256', 'position', 'horizon_id', 'horizon_revision', 'graph_revision', 'graph_sha256', 'integration_head'],
  keyColumns: 1,
  entities: (s) => s.checkpoints,
  toRow: (id, e) => {
    const c = e as BuildState['checkpoints'][string];
    return [id, c.sha256, c.position, c.checkpoint.horizonId, c.checkpoint.horizonRevision, c.checkpoint.graphRevision, c.checkpoint.graphSha256, c.checkpoint.integrationHead];
  },
};

/**
 * Every summary ever made; an absorbed one keeps its row and names its absorber. The
 * whole summary is its MilestoneCompacted event, at `position` (decision 0032).
 */
const summariesTable: TableSpec<BuildState> = {
  name: 'graph_summaries',
  columns: ['summary_id', 'milestone_id', 'sha256', 'position', 'absorbed_by', 'checkpoint_sha256', 'graph_revision_before', 'compacted_node_ids', 'absorbed_summary_ids'],
  keyColumns: 1,
  entities: (s) => s.summaries,
  toRow: (id, e) => {
    const r = e as SummaryRecord;
    const d = r.summary;
    return [id, d.milestoneId, r.sha256, r.position, r.absorbedBy, d.checkpoint.sha256, d.graphBefore.revision, json(d.compactedNodeIds), json(d.absorbedSummaryIds)];
  },
};

/**
 * Every attempt ever made, kept from the events: the state lets go of a compacted node's attempts
 * (decision 0054), the table keeps them. AttemptStarted puts the row the fold makes (it replaces a
 * record of the same id, as the fold does); AttemptFinished sets what the fold sets, on a row that
 * exists (the fold changes only an attempt it has).
 */
const attemptsTable: TableSpec<BuildState> = {
  name: 'attempts',
  columns: ['attempt_id', 'node_id', 'attempt', 'base_head', 'branch', 'status', 'commit_sha', 'adopted'],
  keyColumns: 1,
  entities: (s) => s.attempts,
  sharded: true,
  fromEvent: (e) => {
    if (e.type === 'AttemptStarted') {
      const d = e.data as DataOf<'AttemptStarted'>;
      return { put: [d.attemptId, d.nodeId, d.attempt, d.baseHead, d.branch, 'started', null, 0] };
    }
    if (e.type === 'AttemptFinished') {
      const d = e.data as DataOf<'AttemptFinished'>;
      return { key: [d.attemptId], set: { status: d.outcome, commit_sha: d.commit ?? null, adopted: d.adopted ? 1 : 0 } };
    }
    return null;
  },
  toRow: (id, e) => {
    const a = e as AttemptRecord;
    return [id, a.nodeId, a.attempt, a.baseHead, a.branch, a.status, a.commit, a.adopted ? 1 : 0];
  },
};

const jobsTable: TableSpec<BuildState> = {
  name: 'integration_jobs',
  columns: ['job_id', 'node_ids', 'base_head', 'status', 'result_commit', 'tree', 'cache_hit', 'receipt'],
  keyColumns: 1,
  entities: (s) => s.jobs,
  sharded: true,
  toRow: (id, e) => {
    const j = e as JobRecord;
    return [id, json(j.nodeIds), j.baseHead, j.status, j.verification?.resultCommit ?? null, j.verification?.tree ?? null, j.receipt ? (j.receipt.cacheHit ? 1 : 0) : null, j.receipt ? json(j.receipt) : null];
  },
};

const plannerCallsTable: TableSpec<BuildState> = {
  name: 'planner_calls',
  columns: ['call_id', 'purpose', 'status', 'invocations', 'rejection'],
  keyColumns: 1,
  entities: (s) => s.plannerCalls,
  toRow: (id, e) => {
    const c = e as PlannerCallRecord;
    return [id, c.purpose, c.status, c.invocations, c.rejection ? json(c.rejection) : null];
  },
};

/** Build-wide scalars as key/value rows; rebuilt whenever the state object changes. */
const metaTable: TableSpec<BuildState> = {
  name: 'build_meta',
  columns: ['key', 'value'],
  keyColumns: 1,
  entities: (s) => metaOf(s),
  toRow: (key, value) => [key, value as string],
};

const metaCache = new WeakMap<BuildState, Record<string, string>>();
function metaOf(s: BuildState): Record<string, string> {
  let m = metaCache.get(s);
  if (!m) {
    m = {
      build_id: s.build?.buildId ?? '',
      graph_revision: String(s.graphRevision),
      integration_head: s.integrationHead ?? '',
      completed: s.completed ? 'true' : 'false',
      blocked: s.blocked ? s.blocked.reason : '',
      planner_calls: String(s.calls.planner),
      worker_calls: String(s.calls.worker),
    };
    metaCache.set(s, m);
  }
  return m;
}

/**
 * The build read model: graph, horizon, checkpoints, attempts, integration jobs and
 * receipts, planner calls — all one fold of the log, mirrored into SQLite tables.
 */
export const buildProjection: Projection<BuildState> = {
  name: 'build',
  initialState: initialBuildState,
  /**
   * 2: the state counts recovery events (`recoveries`); snapshots of version 1 lack the count.
   * 3: a job records the job it is stacked on and whether it took a split's group (speculative integration).
   * 4: the view keeps each node's latest attempt and every planner call (reading commands read it).
   * 5: bucket names and revision keys are never integer-like (`bucketsOf`, `revisionKey`).
   * 6: the view keeps the heads of checkpoints and absorbed summaries, not their lists (decision 0032).
   * 7: the state itself does, for checkpoints outside the horizon's window and absorbed summaries,
   *    and the view keeps what the state keeps (decision 0032).
   * 8: the bucket levels of sharded collections are arrays, not objects (decision 0035).
   * 9: the spend ledger (R-58: `spend`, each node's `spent`) and the budget (R-59: `budget`, `budgetPause`).
   * 10: the attempts of compacted nodes leave the state; the attempts table keeps them (decision 0054).
   * 11: graph revisions' positions are a list in chunks, not a sharded record (decision 0055).
   * 12: each milestone's spend is a sharded collection, and a leaf a delete empties is let go (decision 0056).
   */
  stateVersion: 12,
  evolve: evolveBuild,
  evolveInPlace: (state, event) => evolveBuildInPlace(state as Draft<BuildState>, event),
  ownedCopy: (state) => ownedCopy(state),
  tables: [nodesTable, horizonsTable, checkpointsTable, summariesTable, attemptsTable, jobsTable, plannerCallsTable, metaTable],
  view: { name: 'build-view', of: buildView },
};
