/**
 * The attempts of compacted nodes leave the build state (decision 0054): a long build's controller
 * holds the attempts of the live graph, not of every node it ever ran. The `attempts` table keeps
 * every attempt, from the events (TableSpec.fromEvent), however the log is cut into batches and
 * whether it is caught up or rebuilt. The oracle below reads the events alone: the last
 * AttemptStarted of an id makes its row, a later AttemptFinished of it sets its outcome.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from '../src/events/canonical.js';
import { sealEvent, type StoredEvent } from '../src/events/envelope.js';
import { GENESIS_HASH } from '../src/events/hash.js';
import { allProjections } from '../src/projections/all-projections.js';
import { attemptOf, evolveBuild, initialBuildState, type BuildState } from '../src/projections/build-state.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { buildProjection } from '../src/projections/build-projection.js';
import { applyEventTables, createTableSql, TableWriter } from '../src/projections/tables.js';
import { shardedOf, shardEntries } from '../src/projections/sharded.js';
import { SqliteSnapshotStore } from '../src/projections/snapshot-store.js';
import { openSnapshot } from '../src/projections/snapshots.js';
import { buildLogArb } from './support/build-events.js';
import { cliJson, runCli } from './support/cli.js';
import { chainBuild } from './support/random-blueprint.js';

type Row = [string, string, number, string, string, string, string | null, number];

const SHA = 'f'.repeat(64);

/** What the generator leaves out of checkpoints and summaries and the projection tables read (the fold does not). */
function whole(e: StoredEvent): StoredEvent {
  const d = e.data as Record<string, JsonValue>;
  if (e.type === 'CheckpointWritten') {
    const c = d.checkpoint as Record<string, JsonValue>;
    return { ...e, data: { ...d, checkpoint: { horizonId: 'h', horizonRevision: 1, graphRevision: 0, graphSha256: SHA, integrationHead: null, ...c } } };
  }
  if (e.type === 'MilestoneCompacted') {
    const m = d.summary as Record<string, JsonValue>;
    return { ...e, data: { ...d, summary: { checkpoint: { milestoneId: m.milestoneId!, sha256: SHA }, graphBefore: { revision: 0, sha256: SHA }, ...m } } };
  }
  return e;
}

/** Chain a generated log (the store checks each event follows the one before it). */
function chained(log: readonly StoredEvent[]): StoredEvent[] {
  let prev = GENESIS_HASH;
  return log.map((e) => {
    const sealed = sealEvent({ ...whole(e), prevHash: prev });
    prev = sealed.hash;
    return sealed;
  });
}

/** The oracle: every attempt's row as the events make it, by id. */
function attemptRows(log: readonly StoredEvent[]): Map<string, Row> {
  const rows = new Map<string, Row>();
  for (const e of log) {
    const d = e.data as Record<string, JsonValue>;
    if (e.type === 'AttemptStarted') rows.set(d.attemptId as string, [d.attemptId as string, d.nodeId as string, d.attempt as number, d.baseHead as string, d.branch as string, 'started', null, 0]);
    else if (e.type === 'AttemptFinished') {
      const r = rows.get(d.attemptId as string);
      if (r) rows.set(r[0], [r[0], r[1], r[2], r[3], r[4], d.outcome as string, (d.commit as string | undefined) ?? null, d.adopted ? 1 : 0]);
    }
  }
  return rows;
}

const tableRows = (s: ProjectionStore): Row[] =>
  (s.db.prepare('SELECT attempt_id, node_id, attempt, base_head, branch, status, commit_sha, adopted FROM attempts ORDER BY attempt_id').raw().all() as Row[]);
const sorted = (rows: Map<string, Row>): Row[] => [...rows.values()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

/** Cut a log into consecutive batches at the given fractions. */
function batches(log: readonly StoredEvent[], cuts: readonly number[]): StoredEvent[][] {
  const at = [...new Set(cuts.map((c) => Math.round(c * log.length)))].filter((n) => n > 0 && n < log.length).sort((a, b) => a - b);
  const out: StoredEvent[][] = [];
  let from = 0;
  for (const n of [...at, log.length]) {
    out.push(log.slice(from, n));
    from = n;
  }
  return out.filter((b) => b.length > 0);
}

/**
 * Logs that compact nodes with attempts (the generic generator seldom does): a horizon planning
 * a–e, then attempts started and finished, compactions of some nodes, and renewals that plan
 * nodes again — a compacted id planned anew starts its attempts from 1, over the old ones' ids.
 */
const NODES = ['a', 'b', 'c', 'd', 'e'];
const GIT = 'e'.repeat(40);
const planOf = (ids: readonly string[]): JsonValue => ids.map((id) => ({ id, kind: 'read-only', deps: [], milestone: 'm1', title: id }));
const compactingLogArb: fc.Arbitrary<StoredEvent[]> = fc.tuple(
  buildLogArb.map((l) => l[0]!),
  fc.array(fc.oneof(
    fc.record({ t: fc.constant('start' as const), n: fc.constantFrom(...NODES), k: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ t: fc.constant('finish' as const), n: fc.constantFrom(...NODES), k: fc.integer({ min: 1, max: 3 }), outcome: fc.constantFrom('committed', 'recorded', 'failed'), adopted: fc.boolean() }),
    fc.record({ t: fc.constant('compact' as const), ids: fc.uniqueArray(fc.constantFrom(...NODES), { minLength: 1, maxLength: 3 }) }),
    fc.record({ t: fc.constant('renew' as const), ids: fc.uniqueArray(fc.constantFrom(...NODES), { minLength: 1, maxLength: 3 }) }),
  ), { minLength: 6, maxLength: 40, size: 'medium' }),
).map(([init, steps]) => {
  const horizon = (revision: number, ids: readonly string[]): Record<string, JsonValue> => ({ horizonId: 'h', revision, planSha256: SHA, detailed: [{ id: 'm1', title: 'M1' }], coarse: [], nodes: planOf(ids), pins: {}, callId: `c${revision}` });
  const body: [string, Record<string, JsonValue>][] = [['HorizonSealed', horizon(1, NODES)]];
  let revision = 1;
  let summaries = 0;
  const started: Record<string, number> = {};
  for (const s of steps) {
    if (s.t === 'start') {
      started[s.n] = s.k;
      body.push(['AttemptStarted', { attemptId: `${s.n}.${s.k}`, nodeId: s.n, attempt: s.k, baseHead: GIT, branch: `refs/heads/a/${s.n}.${s.k}` }]);
    } else if (s.t === 'finish') {
      const k = s.k === 3 ? s.k : started[s.n] ?? s.k; // mostly the node's last attempt; now and then another
      body.push(['AttemptFinished', { attemptId: `${s.n}.${k}`, nodeId: s.n, outcome: s.outcome, adopted: s.adopted, evidenceSha256: SHA, ...(s.outcome === 'committed' ? { commit: GIT } : {}) }]);
    }
    else if (s.t === 'compact') body.push(['MilestoneCompacted', { summaryId: `summary-${String(++summaries).padStart(16, '0')}`, summarySha256: SHA, summary: { milestoneId: 'm1', compactedNodeIds: s.ids, absorbedSummaryIds: [] } }]);
    else body.push(['HorizonRenewed', horizon(++revision, s.ids)]);
  }
  return [init, ...body.map(([type, data], i) => ({ ...init, position: i + 2, revision: i + 1, type, data }))];
});

const anyLogArb = fc.oneof(buildLogArb, { arbitrary: compactingLogArb, weight: 3 });

const hasCompactedAttempts = (log: readonly StoredEvent[]): boolean => {
  const state = log.reduce(evolveBuild, initialBuildState);
  return [...attemptRows(log).keys()].some((id) => attemptOf(state, id) === undefined);
};

describe('decision 0054: the state lets go of compacted nodes\' attempts, the attempts table keeps them', () => {
  it('(property) for all build logs and every cut into batches, caught up or rebuilt, the attempts table holds every attempt as the events made it', () => {
    let dropped = 0;
    fc.assert(
      fc.property(anyLogArb, fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), fc.integer({ min: 0, max: 12 }), (raw, cuts, snapshotEvery) => {
        const log = chained(raw);
        const want = sorted(attemptRows(log));
        if (hasCompactedAttempts(log)) dropped += 1;
        const caught = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery });
        const rebuilt = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery: 0 });
        try {
          for (const b of batches(log, cuts)) caught.catchUp(b);
          rebuilt.rebuild(log);
          expect(tableRows(caught)).toEqual(want);
          expect(tableRows(rebuilt)).toEqual(want);
          expect(caught.dump()).toBe(rebuilt.dump());
        } finally {
          caught.close();
          rebuilt.close();
        }
      }),
      { numRuns: 150 },
    );
    // The generator does make logs whose state has let attempts go (else the property says little).
    expect(dropped, `${dropped} of 150 logs`).toBeGreaterThanOrEqual(5);
  });

  it('(property) for all build logs, the state holds every attempt of a live node and every open attempt as the events made it, and lets go only of attempts of nodes no longer in the graph', () => {
    fc.assert(
      fc.property(anyLogArb, (raw) => {
        const log = chained(raw);
        const state: BuildState = log.reduce(evolveBuild, initialBuildState);
        const rows = attemptRows(log);
        const row = (a: NonNullable<ReturnType<typeof attemptOf>>): Row => [a.attemptId, a.nodeId, a.attempt, a.baseHead, a.branch, a.status, a.commit, a.adopted ? 1 : 0];
        for (const [id, a] of shardEntries(state.attempts)) expect(row(a), id).toEqual(rows.get(id));
        for (const [id, r] of rows) {
          if (attemptOf(state, id) !== undefined) continue;
          expect(state.nodes[r[1]], `${id} was let go while its node ${r[1]} is in the graph`).toBeUndefined();
          expect(state.openAttempts, `${id} was let go while open`).not.toContain(id);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a real run of 120 nodes in 6 compacted milestones: its stored build state holds the live graph\'s attempts only, its attempts table all 120, and verify and evidence read a compacted attempt', () => {
    const { repo } = chainBuild(120, 'attempt history');
    const run = runCli(['run', '--json'], { cwd: repo });
    expect(run.code, run.stderr).toBe(0);
    const db = new Database(join(repo, '.longbuild', 'projections.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) FROM attempts').pluck().get()).toBe(120);
      expect(db.prepare("SELECT status FROM attempts WHERE attempt_id = 'm0-n3.1'").pluck().get()).toBe('recorded');
      // The newest whole state on disk (what the next open restores) holds no attempt of a compacted node.
      const store = new SqliteSnapshotStore(db);
      const snap = [...store.candidates('build', Number.MAX_SAFE_INTEGER)][0]!;
      const state = openSnapshot<BuildState>(snap)!;
      expect(Object.keys(state.summaries).length).toBeGreaterThanOrEqual(5);
      const held = [...shardEntries(state.attempts)].map(([id, a]) => ({ id, live: state.nodes[a.nodeId] !== undefined || state.openAttempts.includes(id) }));
      expect(held.filter((a) => !a.live)).toEqual([]);
      expect(held.length).toBeLessThanOrEqual(40);
    } finally {
      db.close();
    }
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    expect(cliJson<{ id: string; outcome: string }>(['evidence', 'm0-n3.1', '--json'], { cwd: repo })).toMatchObject({ id: 'm0-n3.1', outcome: 'recorded' });
  });

  it('events that do not reach back to what an event-kept table holds (another process moved the tables back): the rows of what the state holds are put, and nothing is applied out of order', () => {
    const SHA40 = 'e'.repeat(40);
    const started = (position: number, id: string): StoredEvent => ({ position, streamId: 's', revision: position - 1, type: 'AttemptStarted', schemaVersion: 1, data: { attemptId: id, nodeId: id.split('.')[0]!, attempt: 1, baseHead: SHA40, branch: `refs/heads/a/${id}` }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' }, prevHash: '', hash: '' });
    const finished = (position: number, id: string): StoredEvent => ({ ...started(position, id), type: 'AttemptFinished', data: { attemptId: id, nodeId: id.split('.')[0]!, outcome: 'recorded', adopted: false, evidenceSha256: SHA } });
    const spec = buildProjection.tables.find((t) => t.name === 'attempts')!;
    const db = new Database(':memory:');
    try {
      db.exec(createTableSql(spec as never));
      const writer = new TableWriter(db, spec);
      const rows = (): unknown[] => db.prepare('SELECT attempt_id, status FROM attempts ORDER BY attempt_id').raw().all();
      // What the state holds: x.1 finished; the events this store has begin at position 7.
      const state: BuildState = { ...initialBuildState, attempts: shardedOf({ 'x.1': { attemptId: 'x.1', nodeId: 'x', attempt: 1, baseHead: SHA40, branch: 'refs/heads/a/x.1', commitDate: '2026-01-01T00:00:00.000Z', status: 'recorded', commit: null, adopted: false } }) };
      applyEventTables([writer], [started(7, 'y.1')], 5, state);
      expect(rows()).toEqual([['x.1', 'recorded']]);
      // Events that reach back to what the table holds (6 follows 5) are applied in order; earlier ones skipped.
      applyEventTables([writer], [finished(5, 'x.1'), started(6, 'z.1'), finished(7, 'z.1')], 5, state);
      expect(rows()).toEqual([['x.1', 'recorded'], ['z.1', 'recorded']]);
      // Nothing past what the table holds: nothing written.
      applyEventTables([writer], [started(3, 'w.1')], 5, state);
      expect(rows()).toEqual([['x.1', 'recorded'], ['z.1', 'recorded']]);
    } finally {
      db.close();
    }
  });
});
