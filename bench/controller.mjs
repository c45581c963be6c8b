// Controller overhead per step (decide + append + project) with effects that return at once,
// on graphs of 1k, 10k and 100k nodes (issue 3). Run: npm run build && node bench/controller.mjs [window|long] [sizes...]
//   long   (default) a whole build whose graph grows to N nodes: milestones of 50 read-only nodes,
//          detailed window 2, compaction on; per-step times by tenth of the build (must stay flat).
//   window one horizon whose two detailed milestones hold all N nodes (an active graph of N).
// Steps as `longbuild run` takes them: held (group commit) and the projections written behind the log.
// Prints median / p90 step time, steps, and log bytes per step.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { ProjectionStore } from '../dist/projections/engine.js';
import { allProjections } from '../dist/projections/all-projections.js';
import { Controller } from '../dist/adapters/controller/controller.js';
import { logicalClock } from '../dist/adapters/clock.js';
import { noFaults } from '../dist/adapters/faults.js';
import { canonicalSha256 } from '../dist/events/hash.js';
import { ScriptedPlanner } from '../dist/adapters/blueprint/scripted-planner.js';
import { parseBlueprint } from '../dist/adapters/blueprint/blueprint.js';

const mode = ['window', 'long'].includes(process.argv[2]) ? process.argv[2] : 'long';
const sizes = process.argv.slice(2).map(Number).filter(Boolean);
const SIZES = sizes.length ? sizes : [1000, 10000, 100000];
const HEAD = 'a'.repeat(40);

/** A plan of n read-only nodes in two detailed milestones; node i depends on up to two earlier nodes. */
function plan(n) {
  const half = Math.ceil(n / 2);
  const nodes = [];
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  for (let i = 0; i < n; i++) {
    const m = i < half ? 'm1' : 'm2';
    const lo = i < half ? 0 : half;
    const deps = new Set();
    if (i > lo) for (let k = 0; k < 2; k++) if (rand() < 0.7) deps.add(`n${lo + Math.floor(rand() * (i - lo))}`);
    nodes.push({ id: `n${i}`, kind: 'read-only', deps: [...deps] });
    void m;
  }
  return {
    detailed: [
      { id: 'm1', title: 'one', nodes: nodes.slice(0, half) },
      { id: 'm2', title: 'two', nodes: nodes.slice(half) },
    ],
    coarse: [],
  };
}

const instantGit = {
  prepareAttemptWorktree: async () => '', findAttemptCommit: async () => null, commitWorktree: async () => null,
  removeAttemptWorktree: async () => {}, changedPaths: async () => [], readRef: async () => HEAD,
  integrateAndVerify: async () => ({ ok: false, reason: 'not used' }), promote: async () => ({ ok: true }),
  observeRefs: async () => ({ integration: HEAD, published: HEAD }), repairRef: async () => {},
};

/** A fresh build directory: log, projections and the BuildInitialized event. */
function initBenchBuild(prefix, request, compaction, snapshotEvery) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const log = new SqliteEventLog({ path: join(dir, 'events.db'), synchronous: process.env.SYNC ?? 'NORMAL' });
  const store = ProjectionStore.open(join(dir, 'projections.db'), allProjections(), { snapshotEvery });
  log.appendSync('build-bench', [{
    type: 'BuildInitialized',
    data: {
      buildId: 'bench', request, requestSha256: canonicalSha256(request), integrationRef: 'refs/heads/longbuild/integration', baseHead: HEAD,
      verify: [], settings: { detailedWindow: 2, coarseWindow: 12, maxBatch: 1, maxAttempts: 3, compaction, plannerRoute: 'bench' },
      driver: { kind: 'blueprint', sourceSha256: canonicalSha256('bench') },
    },
    metadata: { recordedAt: '2026-01-01T00:00:00.000Z' },
  }], 'no-stream');
  store.catchUp(log.iterateAll(1));
  return { dir, log, store };
}

async function bench(n, steps) {
  const { dir, log, store } = initBenchBuild('lb-bench-ctl-', { title: 'bench' }, false, 0);
  const proposal = plan(n);
  const controller = await Controller.open({
    log, clock: logicalClock(), planner: { route: 'bench', propose: async () => proposal },
    worker: { implement: async () => ({ outcome: 'recorded', stdout: '', stderr: '' }) },
    git: instantGit, evidence: { put: () => 'e'.repeat(64) }, faults: noFaults, protectedPaths: [],
    onAppended: (events, state) => store.catchUpLater(events, new Map([['build', state]])),
  });
  const t0 = performance.now();
  await controller.advance(); // seal
  const sealMs = performance.now() - t0;
  const times = [];
  const bytes0 = statSync(join(dir, 'events.db')).size;
  const pos0 = controller.current.position;
  for (let i = 0; i < steps; i++) {
    const t = performance.now();
    const r = await controller.advance({ held: true });
    times.push(performance.now() - t);
    if (r.outcome !== 'dispatched') throw new Error(`unexpected ${r.outcome}`);
  }
  await controller.sync();
  log.db.pragma('wal_checkpoint(TRUNCATE)');
  const bytes = statSync(join(dir, 'events.db')).size - bytes0;
  const rows = log.db.prepare('SELECT SUM(LENGTH(data) + LENGTH(metadata) + LENGTH(prev_hash) + LENGTH(hash) + LENGTH(type)) AS b FROM events WHERE position > ?').get(pos0).b;
  times.sort((a, b) => a - b);
  store.close();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return { n, sealMs, median: times[Math.floor(times.length / 2)], p90: times[Math.floor(times.length * 0.9)], steps, logBytesPerStep: rows / steps, fileBytesPerStep: bytes / steps };
}

/** A long build: n read-only nodes in milestones of `per`, each depending on its predecessor's first node. */
async function benchLong(n, per = 50) {
  const milestones = [];
  for (let m = 0; m < Math.ceil(n / per); m++) {
    const nodes = [];
    for (let i = 0; i < per && m * per + i < n; i++) {
      const deps = i > 0 ? [`m${m}-n${Math.floor(i / 2)}`] : m > 0 ? [`m${m - 1}-n0`] : [];
      nodes.push({ id: `m${m}-n${i}`, kind: 'read-only', deps, decision: 'ok' });
    }
    milestones.push({ id: `m${m}`, title: `milestone ${m}`, nodes });
  }
  const blueprint = parseBlueprint({ request: { title: 'long' }, verify: [], detailedWindow: 2, milestones });
  const { dir, log, store } = initBenchBuild('lb-bench-long-', blueprint.request, true, Number(process.env.SNAP ?? 1000));
  const controller = await Controller.open({
    log, clock: logicalClock(), planner: new ScriptedPlanner(blueprint),
    worker: { implement: async () => ({ outcome: 'recorded', decision: 'ok', stdout: '', stderr: '' }) },
    git: instantGit, evidence: { put: () => 'e'.repeat(64) }, faults: noFaults, protectedPaths: [],
    onAppended: (events, state) => store.catchUpLater(events, new Map([['build', state]])),
  });
  const times = [];
  let maxActive = 0;
  for (;;) {
    const t = performance.now();
    const r = await controller.advance({ held: true });
    times.push(performance.now() - t);
    maxActive = Math.max(maxActive, Object.keys(controller.current.nodes).length);
    if (r.outcome === 'horizon_complete' || r.outcome === 'blocked') {
      if (r.outcome === 'blocked') throw new Error(r.detail);
      break;
    }
  }
  await controller.sync();
  const events = controller.current.position;
  const bytes = log.db.prepare('SELECT SUM(LENGTH(data) + LENGTH(metadata) + LENGTH(prev_hash) + LENGTH(hash) + LENGTH(type)) AS b FROM events').get().b;
  store.close();
  await log.close();
  if (process.env.KEEP) console.log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
  const tenth = Math.ceil(times.length / 10);
  const deciles = [];
  for (let d = 0; d < 10; d++) {
    const part = times.slice(d * tenth, (d + 1) * tenth).sort((a, b) => a - b);
    if (part.length) deciles.push(part[Math.floor(part.length / 2)]);
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { n, steps: times.length, events, maxActive, median: sorted[Math.floor(sorted.length / 2)], p90: sorted[Math.floor(sorted.length * 0.9)], deciles, bytesPerStep: bytes / times.length };
}

if (mode === 'long') {
  console.log(`controller step overhead over a whole build (synchronous=${process.env.SYNC ?? 'NORMAL'}; instant effects; milestones of 50 read-only nodes, window 2, compaction on)`);
  console.log('graph nodes   steps    max active   median ms   p90 ms   median ms by tenth of the build          log bytes/step');
  for (const n of sizes.length ? sizes : [1000, 10000, 100000]) {
    const r = await benchLong(n);
    console.log(`${String(r.n).padEnd(12)} ${String(r.steps).padStart(6)}   ${String(r.maxActive).padStart(10)}   ${r.median.toFixed(3).padStart(9)}   ${r.p90.toFixed(3).padStart(6)}   ${r.deciles.map((x) => x.toFixed(2)).join(' ').padEnd(40)} ${r.bytesPerStep.toFixed(0).padStart(6)}`);
  }
} else {
  console.log(`controller step overhead (synchronous=${process.env.SYNC ?? 'NORMAL'}; effects instant; read-only nodes: AttemptStarted + AttemptFinished per step)`);
  console.log('nodes    seal ms   median ms   p90 ms   steps   log bytes/step   file bytes/step');
  for (const n of SIZES) {
    const r = await bench(n, Math.min(400, Math.floor(n / 2)));
    console.log(`${String(r.n).padEnd(8)} ${r.sealMs.toFixed(0).padStart(7)}   ${r.median.toFixed(3).padStart(9)}   ${r.p90.toFixed(3).padStart(6)}   ${String(r.steps).padStart(5)}   ${r.logBytesPerStep.toFixed(0).padStart(14)}   ${r.fileBytesPerStep.toFixed(0).padStart(15)}`);
  }
}
