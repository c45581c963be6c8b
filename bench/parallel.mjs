// Several workers in flight (issue 16): a build of 8 independent writable nodes, each worker
// taking 2 s (it sleeps, then writes its files: the blueprint's scripted worker) and each
// verification 1 s (`sleep 1`, a real process), with real git, for K = 1, 2, 4, 8, without and
// with batching (maxBatch 8). Speculation (integration jobs verified at once) is left at its
// default, the concurrency. Every configuration runs R times, interleaved (the machine is shared
// and noisy); the table gives the median wall time, the speed-up over K = 1 of the same row group
// and the lower bound: the workers' rounds, then one verification.
// Run: npm run build && node bench/parallel.mjs [repeats=3] [workerMs=2000] [verifyS=1]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initFromBlueprint } from '../dist/adapters/build-init.js';
import { openBuild } from '../dist/adapters/session.js';
import { ScriptedWorker } from '../dist/adapters/blueprint/scripted-worker.js';
import { loadBlueprint } from '../dist/adapters/blueprint/blueprint.js';

const repeats = Number(process.argv[2] ?? 3);
const workerMs = Number(process.argv[3] ?? 2000);
const verifyS = String(process.argv[4] ?? 1);
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
  try {
    if (k > 1) await s.runAll(() => {});
    else for (let r = await s.advance(); r.outcome !== 'horizon_complete' && r.outcome !== 'blocked'; r = await s.advance());
  } finally {
    await s.close();
  }
  const st = s.controller.current;
  if (!st.completed) throw new Error(`K=${k}: the build did not complete`);
  const seconds = (Date.now() - t0) / 1000;
  rmSync(dir, { recursive: true, force: true });
  return seconds;
}

const configs = [1, 8].flatMap((maxBatch) => [1, 2, 4, 8].map((k) => ({ maxBatch, k, runs: [] })));
for (let r = 0; r < repeats; r++) for (const c of configs) c.runs.push(await build(c.k, c.maxBatch));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// Lower bound: one worker round per K nodes, then the last verification (speculative jobs verify
// alongside each other, a batch once); K = 1 without batching verifies after every node.
const ideal = (k, maxBatch) => {
  const w = workerMs / 1000;
  const v = Number(verifyS);
  if (k === 1) return maxBatch > 1 ? N * w + v : N * (w + v);
  return Math.ceil(N / k) * w + v;
};
console.log(`${N} independent writable nodes, worker ${workerMs} ms, verification ${verifyS} s (real git, real sleep processes); median of ${repeats} interleaved runs`);
console.log('maxBatch  K  wall s  speed-up vs K=1  lower bound s  runs');
for (const c of configs) {
  const base = median(configs.find((x) => x.maxBatch === c.maxBatch && x.k === 1).runs);
  const m = median(c.runs);
  console.log(`${String(c.maxBatch).padStart(8)} ${String(c.k).padStart(2)} ${m.toFixed(1).padStart(7)} ${(base / m).toFixed(2).padStart(16)} ${ideal(c.k, c.maxBatch).toFixed(1).padStart(14)}  ${c.runs.map((x) => x.toFixed(1)).join(' ')}`);
}
