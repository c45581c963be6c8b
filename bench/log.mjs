// Event-log and projection benchmarks (issue 2). Run on demand: `npm run build && node bench/log.mjs`.
// Prints figures; not a timed test. Options: BENCH_SCALE=0.1 for a quick run.
// On a shared machine wall-clock rates swing with load; CPU-time rates are printed beside them.
// BENCH_ONLY=batch,durable,rebuild picks sections (rebuild includes stateAt).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { produce } from 'immer';
import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { ProjectionStore } from '../dist/projections/engine.js';
import { immerProjection } from '../dist/projections/projection.js';
import { SqliteSnapshotStore } from '../dist/projections/snapshot-store.js';
import { stateAt } from '../dist/projections/time-travel.js';

const scale = Number(process.env.BENCH_SCALE ?? 1);
const N_BATCH = Math.round(100_000 * scale);
const N_DURABLE = Math.round(1_000 * Math.min(scale, 1));
const N_REBUILD = Math.round(1_000_000 * scale);
const dir = mkdtempSync(join(tmpdir(), 'lb-bench-'));
const meta = { recordedAt: '2026-01-01T00:00:00.000Z', correlationId: 'bench' };

/** A realistic domain event (AttemptStarted), validated by the real domain catalogue. */
function event(i) {
  return {
    type: 'AttemptStarted',
    data: { attemptId: `att-${i}`, nodeId: `node-${i % 50}`, attempt: 1 + (i % 3), baseHead: 'a'.repeat(40), branch: `longbuild/attempt/node-${i % 50}/${i}`, graphRevision: i },
    metadata: meta,
  };
}

const FLOOR_SCHEMA = `CREATE TABLE events (position INTEGER PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL, type TEXT NOT NULL,
  schema_version INTEGER NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL, UNIQUE (stream_id, revision))`;

/** The floor: a plain better-sqlite3 insert loop of the same rows (already encoded and hashed). */
function floorDb(path, synchronous) {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.exec(FLOOR_SCHEMA);
  return db;
}

function rowsOf(path) {
  const db = new Database(path, { readonly: true });
  const rows = db.prepare('SELECT * FROM events ORDER BY position').raw(true).all();
  db.close();
  return rows;
}

const cpuSeconds = (since) => { const u = process.cpuUsage(since); return (u.user + u.system) / 1e6; };
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const results = {};

const only = new Set((process.env.BENCH_ONLY ?? 'batch,durable,rebuild').split(','));

// 1. Batch append: one append of N_BATCH events (one transaction) vs the floor's one-transaction loop.
//    Ours twice: rows stored by the log's writer thread (the default for big batches) and in-thread
//    (parallelAppend: false). "returned" is when appendSync returns (committed and synced); the
//    writer thread checkpoints the WAL after that, so "to close" includes the checkpoint too —
//    the floor's figure always includes it (SQLite checkpoints inside its commit). The three
//    alternate in BATCH_ROUNDS rounds on fresh files (the machine's speed swings between seconds);
//    each ratio is the median of the rounds' ratios, with their range.
if (only.has('batch')) {
  const ROUNDS = Number(process.env.BENCH_BATCH_ROUNDS ?? 5);
  const events = Array.from({ length: N_BATCH }, (_, i) => event(i));
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = {};
    for (const mode of ['thread', 'in-thread']) {
      const path = join(dir, `batch-${mode}-${round}.db`);
      const log = new SqliteEventLog({ path, parallelAppend: mode === 'thread' ? undefined : false });
      const t = performance.now();
      const c = process.cpuUsage();
      log.appendSync('build', events, 'no-stream');
      const returned = performance.now() - t;
      await log.close();
      const closed = performance.now() - t;
      r[mode] = { returnedPerSec: N_BATCH / (returned / 1000), closedPerSec: N_BATCH / (closed / 1000), perCpuSec: N_BATCH / cpuSeconds(c) };
    }
    const rows = rowsOf(join(dir, `batch-thread-${round}.db`));
    const db = floorDb(join(dir, `batch-floor-${round}.db`), 'FULL');
    const insert = db.prepare('INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)');
    const t = performance.now();
    const c = process.cpuUsage();
    db.transaction(() => { for (const row of rows) insert.run(...row); })();
    r.floor = { perSec: N_BATCH / ((performance.now() - t) / 1000), perCpuSec: N_BATCH / cpuSeconds(c) };
    db.close();
    for (const f of ['thread', 'in-thread', 'floor']) rmSync(join(dir, `batch-${f}-${round}.db`), { force: true });
    rounds.push(r);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ratioOf = (pick) => { const xs = rounds.map((r) => pick(r) / r.floor.perSec); return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) }; };
  const pct = (x) => `${(100 * x).toFixed(0)}%`;
  const range = (q) => `${pct(q.median)} (rounds ${pct(q.min)}–${pct(q.max)})`;
  const summary = {};
  for (const mode of ['thread', 'in-thread']) {
    summary[mode] = {
      returnedPerSec: median(rounds.map((r) => r[mode].returnedPerSec)),
      perCpuSec: median(rounds.map((r) => r[mode].perCpuSec)),
      returned: ratioOf((r) => r[mode].returnedPerSec),
      toClose: ratioOf((r) => r[mode].closedPerSec),
    };
  }
  const floor = median(rounds.map((r) => r.floor.perSec));
  results.batch = { events: N_BATCH, rounds: ROUNDS, floorPerSec: floor, floorPerCpuSec: median(rounds.map((r) => r.floor.perCpuSec)), ours: summary, ratio: summary.thread.returned.median };
  console.log(`batch append ${fmt(N_BATCH)} events, ${ROUNDS} alternating rounds: floor ${fmt(floor)} ev/s (median)`);
  for (const mode of ['thread', 'in-thread']) {
    const o = summary[mode];
    console.log(`  rows stored ${mode.padEnd(9)}: ${fmt(o.returnedPerSec)} ev/s; of floor at return ${range(o.returned)}, to close ${range(o.toClose)}; ${fmt(o.perCpuSec)} ev per CPU second (floor ${fmt(results.batch.floorPerCpuSec)})`);
  }
}

// 2. Durable single-event appends (synchronous=FULL, one transaction each) vs single-row FULL
//    transactions. fsync time swings with the machine's load, so the two alternate in rounds.
if (only.has('durable')) {
  const log = new SqliteEventLog({ path: join(dir, 'durable.db'), synchronous: 'FULL' });
  const db = floorDb(join(dir, 'durable-floor.db'), 'FULL');
  const insert = db.prepare('INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)');
  const read = log.db.prepare('SELECT * FROM events WHERE position = ?').raw(true);
  const one = db.transaction((r) => insert.run(...r));
  const ROUNDS = 10;
  const per = Math.max(1, Math.round(N_DURABLE / ROUNDS));
  let oursMs = 0;
  let floorMs = 0;
  let i = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const from = i;
    let t = performance.now();
    for (let k = 0; k < per; k++, i++) log.appendSync('build', [event(i)], i === 0 ? 'no-stream' : i - 1);
    oursMs += performance.now() - t;
    const rows = [];
    for (let p = from + 1; p <= i; p++) rows.push(read.get(p));
    t = performance.now();
    for (const r of rows) one.immediate(r);
    floorMs += performance.now() - t;
  }
  const ours = i / (oursMs / 1000);
  const floor = i / (floorMs / 1000);
  await log.close();
  db.close();
  results.durable = { events: i, oursPerSec: ours, floorPerSec: floor, ratio: ours / floor };
  console.log(`durable single appends ${fmt(i)} (alternating rounds): ${fmt(ours)} ev/s vs floor ${fmt(floor)} ev/s -> ${(100 * ours / floor).toFixed(0)}% of floor`);
}

// 3. Full rebuild of N_REBUILD events with a small projection (two tables: events per type,
//    attempts per node) written as one immer recipe — the engine folds runs of events in one
//    produce — and the same recipe with one produce per event (evolve only); and the engine's
//    ceiling (an identity evolve: log read + fold loop only).
const recipe = (d, e) => {
  const t = d.types[e.type];
  d.types[e.type] = { count: (t?.count ?? 0) + 1, last: e.position };
  if (e.type === 'AttemptStarted' && e.data.attempt > 2) d.nodes[e.data.nodeId] = { attempts: e.data.attempt, last: e.position };
};
const smallTables = [
  { name: 'bench_types', columns: ['type', 'count', 'last'], keyColumns: 1, entities: (s) => s.types, toRow: (k, v) => [k, v.count, v.last] },
  { name: 'bench_nodes', columns: ['id', 'attempts', 'last'], keyColumns: 1, entities: (s) => s.nodes, toRow: (k, v) => [k, v.attempts, v.last] },
];
const small = immerProjection({ name: 'bench_small', initialState: { types: {}, nodes: {} }, recipe, tables: smallTables });
const smallPerEvent = { name: 'bench_small_per_event', initialState: { types: {}, nodes: {} }, evolve: (s, e) => produce(s, (d) => recipe(d, e)), tables: smallTables.map((t) => ({ ...t, name: `${t.name}_pe` })) };
const identity = { name: 'bench_identity', initialState: {}, evolve: (s) => s, tables: [] };
const SNAPSHOT_EVERY = Number(process.env.BENCH_SNAPSHOT_EVERY ?? 500);
const bigPath = join(dir, 'big.db');
if (only.has('rebuild')) {
  const log = new SqliteEventLog({ path: bigPath, synchronous: 'NORMAL' });
  const t = performance.now();
  for (let i = 0; i < N_REBUILD; i += 10_000) {
    log.appendSync('build', Array.from({ length: Math.min(10_000, N_REBUILD - i) }, (_, j) => event(i + j)), 'any');
  }
  console.log(`(setup: wrote ${fmt(N_REBUILD)} events in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
  for (const projection of [small, smallPerEvent, identity]) {
    const store = ProjectionStore.open(join(dir, `rebuild-${projection.name}.db`), [projection], { snapshotEvery: 0 });
    const t2 = performance.now();
    const c2 = process.cpuUsage();
    const n = store.rebuild(log.iterateAll());
    const secs = (performance.now() - t2) / 1000;
    const cpu = cpuSeconds(c2);
    store.close();
    results[`rebuild_${projection.name}`] = { events: n, seconds: secs, perSec: n / secs, cpuSeconds: cpu, perCpuSec: n / cpu };
    console.log(`full rebuild of ${fmt(n)} events, ${projection.name}: ${secs.toFixed(2)} s, ${fmt(n / secs)} ev/s (CPU ${cpu.toFixed(2)} s, ${fmt(n / cpu)} ev/s)`);
  }

  // 4. stateAt latency with a snapshot every SNAPSHOT_EVERY events.
  const snapStore = ProjectionStore.open(join(dir, 'snap-projections.db'), [small], { snapshotEvery: SNAPSHOT_EVERY });
  const t3 = performance.now();
  const n = snapStore.catchUp(log.iterateAll());
  console.log(`(setup: catch-up with a snapshot every ${SNAPSHOT_EVERY} events in ${((performance.now() - t3) / 1000).toFixed(1)} s)`);
  const snaps = new SqliteSnapshotStore(snapStore.db);
  const range = (from, to) => log.readAllSync({ from, limit: to - from + 1 });
  const wall = [];
  const cpu = [];
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < 300; i++) {
    const p = 1 + Math.floor(rand() * n);
    const t4 = performance.now();
    const c4 = process.cpuUsage();
    stateAt(range, small, p, snaps);
    cpu.push(cpuSeconds(c4) * 1000);
    wall.push(performance.now() - t4);
  }
  const pct = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  results.stateAt = { events: n, snapshotEvery: SNAPSHOT_EVERY, p50ms: pct(wall, 0.5), p99ms: pct(wall, 0.99), cpuP50ms: pct(cpu, 0.5), cpuP99ms: pct(cpu, 0.99) };
  console.log(`stateAt on ${fmt(n)} events (snapshot every ${SNAPSHOT_EVERY}): p50 ${pct(wall, 0.5).toFixed(2)} ms, p99 ${pct(wall, 0.99).toFixed(2)} ms (CPU p50 ${pct(cpu, 0.5).toFixed(2)} ms, p99 ${pct(cpu, 0.99).toFixed(2)} ms)`);
  snapStore.close();
  await log.close();
}

rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify(results));
