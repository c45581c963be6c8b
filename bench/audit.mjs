// The verifiable log's costs (issue 13). Run on demand: `npm run build && node bench/audit.mjs`.
// Prints figures; not a timed test. Sections (BENCH_ONLY=append,bundle,revision):
//   append    append throughput, log alone vs log + Merkle tree + a signed checkpoint every K events
//   bundle    `audit export` and the standalone `node verify.mjs` on a synthetic N-event build
//   revision  reconstructing one past graph revision from the nearest snapshot (the build state's
//             view: closed history dropped) and checking it against the SHA-256 the log
//             recorded, at M events
// BENCH_EVENTS (default 100000) sizes `bundle`; BENCH_REVISION_EVENTS (default 1000000) `revision`
// (making the 1M-event synthetic build with its projections and snapshots takes about 55 minutes
// on a 2-core box; the measurement itself, seconds).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { buildPaths } from '../dist/adapters/build-dir.js';
import { Notary } from '../dist/adapters/transparency/notary.js';
import { buildVerifierKey, generateSigningKey } from '../dist/adapters/transparency/keys.js';
import { parseVerifierKey } from '../dist/events/signed-note.js';
import { syntheticBuild } from './lib/synthetic-build.mjs';
import { ProjectionStore } from '../dist/projections/engine.js';
import { allProjections } from '../dist/projections/all-projections.js';
import { buildProjection } from '../dist/projections/build-projection.js';
import { positionOfRevision } from '../dist/projections/build-state.js';
import { graphSha256 } from '../dist/projections/graph.js';
import { SqliteSnapshotStore } from '../dist/projections/snapshot-store.js';
import { stateAt } from '../dist/projections/time-travel.js';

const only = new Set((process.env.BENCH_ONLY ?? 'append,bundle,revision').split(','));
const N_BUNDLE = Number(process.env.BENCH_EVENTS ?? 100_000);
const N_REVISION = Number(process.env.BENCH_REVISION_EVENTS ?? 1_000_000);
const root = mkdtempSync(join(tmpdir(), 'lb-bench-audit-'));
const BIN = join(import.meta.dirname, '..', 'bin', 'longbuild.js');
const ms = (t) => `${(performance.now() - t).toFixed(0)} ms`;


if (only.has('append')) {
  // The controller's own path: one or two events per append, fsync'd (FULL), and a signed
  // checkpoint at every promotion; the demo promotes about every 6 events.
  const N = 3000;
  const EVERY = 6;
  for (const withTree of [false, true]) {
    const dir = join(root, `append-${withTree}`);
    mkdirSync(dir);
    const paths = buildPaths(dir);
    const log = new SqliteEventLog({ path: paths.events });
    const key = generateSigningKey();
    const notary = Notary.open(paths, log, 'b-bench', parseVerifierKey(buildVerifierKey('b-bench', key)), key);
    const t = performance.now();
    for (let i = 0; i < N; i++) {
      log.appendSync('s', [{ type: 'EffectReinvoked', data: { effect: 'worker', key: `k${i}` }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' } }], 'any');
      if (withTree && i % EVERY === EVERY - 1) await notary.sign();
    }
    const total = performance.now() - t;
    console.log(`append ${withTree ? 'log + tree + signed checkpoint every 6' : 'log alone (FULL fsync)                '}: ${(N / (total / 1000)).toFixed(0)} events/s (${(total / N * 1000).toFixed(0)} µs/event)`);
    notary.close();
    await log.close();
  }
  // Bulk appends (an import, a batch of events): the tree is off the append path; catch-up cost per event.
  const dir = join(root, 'bulk');
  mkdirSync(dir);
  const paths = buildPaths(dir);
  const log = new SqliteEventLog({ path: paths.events, synchronous: 'NORMAL' });
  const events = Array.from({ length: 1000 }, (_, i) => ({ type: 'EffectReinvoked', data: { effect: 'worker', key: `k${i}` }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' } }));
  let t = performance.now();
  for (let i = 0; i < 100; i++) log.appendSync('s', events, 'any');
  const appendMs = performance.now() - t;
  const key = generateSigningKey();
  const notary = Notary.open(paths, log, 'b-bench', parseVerifierKey(buildVerifierKey('b-bench', key)), key);
  t = performance.now();
  await notary.sign();
  const treeMs = performance.now() - t;
  console.log(`bulk 100k events: append ${appendMs.toFixed(0)} ms (${(appendMs / 100).toFixed(1)} µs/event); tree catch-up + first signature ${treeMs.toFixed(0)} ms (${(treeMs / 100).toFixed(1)} µs/event)`);
  notary.close();
  await log.close();
}

if (only.has('bundle')) {
  let t = performance.now();
  const b = await syntheticBuild(root, 'bundle', N_BUNDLE);
  console.log(`bundle: synthetic ${N_BUNDLE}-event build made in ${ms(t)}`);
  const out = join(root, 'bundle-out');
  t = performance.now();
  const ex = spawnSync(process.execPath, [BIN, 'audit', 'export', '--repo', b.repo, '--to', out], { encoding: 'utf8' });
  if (ex.status !== 0) throw new Error(ex.stderr);
  const exportMs = performance.now() - t;
  console.log(`bundle: audit export ${exportMs.toFixed(0)} ms`);
  t = performance.now();
  const v = spawnSync(process.execPath, [join(out, 'verify.mjs'), '--key', b.vkey], { encoding: 'utf8', env: { PATH: '' } });
  const verifyMs = performance.now() - t;
  if (v.status !== 0) throw new Error(v.stdout + v.stderr);
  console.log(`bundle: standalone node verify.mjs ${verifyMs.toFixed(0)} ms; export + verify ${((exportMs + verifyMs) / 1000).toFixed(1)} s (target ≤ 10 s)\n${v.stdout.trim().split('\n').map((l) => `  ${l}`).join('\n')}`);
}

if (only.has('revision')) {
  let t = performance.now();
  const b = await syntheticBuild(root, 'revision', N_REVISION, { signEvery: 0, snapshotEvery: 1000 });
  console.log(`revision: synthetic ${N_REVISION}-event build with snapshots every 1000 made in ${ms(t)}`);
  const log = new SqliteEventLog({ path: b.paths.events, readonly: true });
  const store = ProjectionStore.open(b.paths.projections, allProjections(), { snapshotEvery: 1000 });
  const snapshots = new SqliteSnapshotStore(store.db);
  const times = [];
  for (let i = 0; i < 20; i++) {
    const revision = 1 + Math.floor(((i * 7919) % 1000) / 1000 * (b.state.graphRevision - 1));
    t = performance.now();
    const position = positionOfRevision(b.state, revision);
    const st = stateAt((from, to) => log.readAllSync({ from, limit: to - from + 1 }), buildProjection, position, snapshots).state;
    const recorded = log.readAllSync({ from: position, limit: 1 })[0].metadata.graph;
    if (recorded.revision !== st.graphRevision || recorded.sha256 !== graphSha256(st.nodes)) throw new Error(`revision ${revision} does not match its record`);
    times.push(performance.now() - t);
  }
  times.sort((x, y) => x - y);
  console.log(`revision: reconstruct + check one past revision at ${N_REVISION} events: median ${times[10].toFixed(1)} ms, max ${times[19].toFixed(1)} ms (target ≤ 50 ms)`);
  store.close();
  await log.close();
}
if (!process.env.BENCH_KEEP) rmSync(root, { recursive: true, force: true }); else console.log(`kept ${root}`);
