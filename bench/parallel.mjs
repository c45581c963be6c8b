// Several workers in flight (issue 16): a build of 8 independent writable nodes, each worker
// taking 2 s (it sleeps, then writes its files: the blueprint's scripted worker) and each
// verification 1 s (`sleep 1`, a real process), with real git, for K = 1, 2, 4, 8, without and
// with batching (maxBatch 8). Prints wall time, speed-up over K = 1 and the ideal.
// Run: npm run build && node bench/parallel.mjs [workerMs] [verifyS]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initFromBlueprint, openBuild } from '../dist/adapters/session.js';
import { ScriptedWorker } from '../dist/adapters/blueprint/scripted-worker.js';
import { loadBlueprint } from '../dist/adapters/blueprint/blueprint.js';

const workerMs = Number(process.argv[2] ?? 2000);
const verifyS = String(process.argv[3] ?? 1);
const N = 8;

async function build(k, maxBatch) {
  const dir = mkdtempSync(join(tmpdir(), 'lb-bench-par-'));
  const bp = {
    request: { goal: 'eight independent modules' }, verify: [['sleep', verifyS]], detailedWindow: 1, maxBatch, concurrency: k, sandbox: 'off',
    milestones: [{ id: 'm1', title: 'modules', nodes: Array.from({ length: N }, (_, i) => ({ id: `mod-${i}`, kind: 'writable', deps: [], files: { [`src/mod-${i}.txt`]: `module ${i}\n` } })) }],
  };
  const path = join(dir, 'blueprint.json');
  writeFileSync(path, JSON.stringify(bp));
  const repo = join(dir, 'repo');
  const env = { ...process.env, LONGBUILD_SIGNING_KEY: join(dir, 'signing.key') };
  await initFromBlueprint(path, { repo, env });
  const inner = new ScriptedWorker(loadBlueprint(path));
  const worker = { implement: async (packet, wt) => (await new Promise((r) => setTimeout(r, workerMs)), inner.implement(packet, wt)) };
  const s = await openBuild({ repo, env, worker });
  const t0 = Date.now();
  let steps = 0;
  try {
    if (k > 1) await s.runAll(() => void steps++);
    else for (let r = await s.advance(); ; r = await s.advance()) if (++steps && (r.outcome === 'horizon_complete' || r.outcome === 'blocked')) break;
  } finally {
    await s.close();
  }
  const st = s.controller.current;
  if (!st.completed) throw new Error(`K=${k}: the build did not complete`);
  return (Date.now() - t0) / 1000;
}

const rows = [];
for (const maxBatch of [1, 8]) {
  for (const k of [1, 2, 4, 8]) rows.push({ maxBatch, k, s: await build(k, maxBatch) });
}
// Lower bound: the workers' rounds then one verification (a batch), or — one integration at a
// time — the first worker then every verification in a row, whichever is longer.
const ideal = (k, maxBatch) => {
  const w = workerMs / 1000;
  const v = Number(verifyS);
  if (k === 1) return maxBatch > 1 ? N * w + v : N * (w + v); // one step at a time
  return maxBatch > 1 ? Math.ceil(N / k) * w + v : Math.max(Math.ceil(N / k) * w + v, w + N * v);
};
console.log(`${N} independent writable nodes, worker ${workerMs} ms, verification ${verifyS} s (real git, real sleep processes)`);
console.log('maxBatch  K  wall s  speed-up vs K=1  lower bound s');
for (const r of rows) {
  const base = rows.find((x) => x.maxBatch === r.maxBatch && x.k === 1).s;
  console.log(`${String(r.maxBatch).padStart(8)} ${String(r.k).padStart(2)} ${r.s.toFixed(1).padStart(7)} ${(base / r.s).toFixed(2).padStart(16)} ${ideal(r.k, r.maxBatch).toFixed(1).padStart(14)}`);
}
