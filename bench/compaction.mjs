// Compaction benchmark (issue 4): active graph size, controller step overhead and `show --revision`
// latency over a 1,000-milestone synthetic build whose effects return at once, with and without
// compaction. Run: npx tsc -p tsconfig.build.json && node bench/compaction.mjs [milestones] [nodesPerMilestone]
// Per mode it prints: step time by build decile (does it stay flat?), active graph size, and the
// time-travel latency (fold from the nearest snapshot + ranking, what `show --revision` does).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { ProjectionStore } from '../dist/projections/engine.js';
import { allProjections } from '../dist/projections/all-projections.js';
import { buildProjection } from '../dist/projections/build-projection.js';
import { SqliteSnapshotStore } from '../dist/projections/snapshot-store.js';
import { stateAt } from '../dist/projections/time-travel.js';
import { graphSha256, rankReadyWave } from '../dist/projections/graph.js';
import { positionOfRevision } from '../dist/projections/build-state.js';
import { Controller } from '../dist/adapters/controller/controller.js';
import { nextAction } from '../dist/commands/next-action.js';
import { logicalClock } from '../dist/adapters/clock.js';
import { noFaults } from '../dist/adapters/faults.js';
import { canonicalSha256, sha256Hex } from '../dist/events/hash.js';
import { parseBlueprint } from '../dist/adapters/blueprint/blueprint.js';
import { ScriptedPlanner } from '../dist/adapters/blueprint/scripted-planner.js';

const M = Number(process.argv[2] ?? 1000);
const K = Number(process.argv[3] ?? 4);
const MODES = (process.argv[4] ?? 'both') === 'both' ? [true, false] : [process.argv[4] === 'on'];
const BASE = 'a'.repeat(40);

/** M milestones of K nodes: a chain of K-1 read-only nodes and one writable; each milestone consumes the one before. */
function blueprint(compaction) {
  const milestones = Array.from({ length: M }, (_, i) => ({
    id: `m${i}`,
    title: `Milestone ${i}`,
    nodes: Array.from({ length: K }, (_, j) => ({
      id: `m${i}-n${j}`,
      kind: j === K - 1 ? 'writable' : 'read-only',
      deps: j > 0 ? [`m${i}-n${j - 1}`] : i > 0 ? [`m${i - 1}-n${K - 1}`] : [],
    })),
  }));
  return parseBlueprint({ request: { title: 'bench' }, verify: [], detailedWindow: 2, coarseWindow: 12, compaction, milestones });
}

/** Git and verification that answer at once, deterministically; the integration ref lives in memory. */
function instantGit() {
  let head = BASE;
  const sha = (s) => sha256Hex(s).slice(0, 40);
  return {
    prepareAttemptWorktree: async () => ({ worktree: '', reworked: false }),
    findAttemptCommit: async (branch) => ({ commit: sha(`c:${branch}`), tree: sha(`t:${branch}`) }),
    commitAttempt: async (branch) => ({ kind: 'committed', commit: sha(`c:${branch}`), tree: sha(`t:${branch}`) }),
    removeAttemptWorktree: async () => {},
    keptAttemptWorktree: async () => null,
    deleteAttemptBranches: async () => {},
    filesChangedBy: async () => [],
    contentOf: async () => null,
    candidateProblem: async () => null,
    integrateAndVerify: async (jobId, h) => ({ ok: true, resultCommit: sha(`r:${jobId}:${h}`), tree: sha(`rt:${jobId}`), verification: { passed: true, commands: [] } }),
    readRef: async () => head,
    promote: async (_ref, next, expected) => (head === expected ? ((head = next), { ok: true }) : { ok: false, actual: head }),
    observeRefs: async () => ({ integration: head, published: head }),
    repairRef: async () => {},
  };
}

async function run(compaction) {
  const dir = mkdtempSync(join(tmpdir(), 'lb-bench-compaction-'));
  const log = new SqliteEventLog({ path: join(dir, 'events.db'), synchronous: process.env.SYNC ?? 'NORMAL' });
  const store = ProjectionStore.open(join(dir, 'projections.db'), allProjections());
  const bp = blueprint(compaction);
  const request = bp.request;
  log.appendSync('build-bench', [{
    type: 'BuildInitialized',
    data: {
      buildId: 'bench', request, requestSha256: canonicalSha256(request), integrationRef: 'refs/heads/longbuild/integration', baseHead: BASE,
      verify: [], settings: { detailedWindow: 2, coarseWindow: 12, maxBatch: 1, maxAttempts: 3, compaction, plannerRoute: 'scripted:blueprint' },
      driver: { kind: 'blueprint', sourceSha256: canonicalSha256(bp) },
    },
    metadata: { recordedAt: '2026-01-01T00:00:00.000Z' },
  }], 'no-stream');
  store.catchUp(log.iterateAll(1));
  const controller = await Controller.open({
    log, clock: logicalClock(), planner: new ScriptedPlanner(bp),
    worker: { implement: async (p) => ({ outcome: p.kind === 'writable' ? 'committed' : 'recorded', stdout: '', stderr: '' }) },
    git: instantGit(), evidence: { put: (b) => sha256Hex(b) }, faults: noFaults, protectedPaths: [],
    onAppended: (events, state) => store.catchUp(events, new Map([['build', state]])),
  });

  const buckets = Array.from({ length: 10 }, () => ({ ms: 0, decideMs: 0, steps: 0 }));
  let maxNodes = 0;
  let steps = 0;
  const t0 = performance.now();
  for (;;) {
    const checkpoints = Object.keys(controller.current.checkpoints).length;
    // The graph-dependent part of a step: the pure decision (ranking included), timed on its own.
    const td = performance.now();
    nextAction(controller.current);
    const decide = performance.now() - td;
    const t = performance.now();
    const r = await controller.advance();
    const dt = performance.now() - t;
    const b = buckets[Math.min(9, Math.floor((checkpoints / M) * 10))];
    b.ms += dt;
    b.decideMs += decide;
    b.steps += 1;
    steps += 1;
    maxNodes = Math.max(maxNodes, Object.keys(controller.current.nodes).length);
    if (r.outcome === 'horizon_complete') break;
    if (r.outcome === 'blocked') throw new Error(`blocked: ${r.reason}`);
  }
  const totalS = (performance.now() - t0) / 1000;
  const st = controller.current;

  // show --revision: the state as of a graph revision (fold from the nearest verified snapshot), then the ranking.
  const snapshots = new SqliteSnapshotStore(store.db);
  const latency = [];
  for (const frac of [0.1, 0.5, 0.9]) {
    const rev = Math.max(1, Math.floor(st.graphRevision * frac));
    const position = positionOfRevision(st, rev);
    const times = [];
    let nodes = 0;
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      const at = stateAt((from) => log.iterateAll(from), buildProjection, position, snapshots).state;
      graphSha256(at.nodes);
      rankReadyWave(at);
      times.push(performance.now() - t);
      nodes = Object.keys(at.nodes).length;
    }
    times.sort((a, b) => a - b);
    latency.push({ frac, rev, position, ms: times[2], nodes });
  }
  const result = {
    compaction, steps, totalS, events: st.position, finalNodes: Object.keys(st.nodes).length, maxNodes,
    summaries: Object.keys(st.summaries).length, buckets: buckets.map((b) => (b.steps ? b.ms / b.steps : 0)), decide: buckets.map((b) => (b.steps ? b.decideMs / b.steps : 0)), latency,
  };
  store.close();
  await log.close();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

console.log(`compaction benchmark: ${M} milestones x ${K} nodes (${K - 1} read-only + 1 writable), detailed window 2, effects instant, synchronous=${process.env.SYNC ?? 'NORMAL'}`);
for (const compaction of MODES) {
  const r = await run(compaction);
  console.log(`\n== compaction ${compaction ? 'ON' : 'OFF'}: ${r.steps} steps, ${r.events} events, ${r.totalS.toFixed(1)} s`);
  console.log(`active graph: ${r.finalNodes} nodes at the end, at most ${r.maxNodes} during the build; ${r.summaries} summaries in history`);
  console.log(`mean step ms by build decile: ${r.buckets.map((x) => x.toFixed(2)).join(' | ')}`);
  console.log(`  of which the decision (nextAction, ranking): ${r.decide.map((x) => x.toFixed(3)).join(' | ')}`);
  for (const l of r.latency) console.log(`show --revision ${l.rev} (${Math.round(l.frac * 100)}% in, position ${l.position}): ${l.ms.toFixed(1)} ms, ${l.nodes} nodes`);
}
