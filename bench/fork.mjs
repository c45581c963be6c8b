// Fork reuse (issue 18, R-41): the demo build (textkit: 16 nodes in 4 milestones, real `node --test`
// verification, one failing attempt, compaction and a renewal) is built once; then forked at a
// quarter, half and three quarters of its log, unchanged and with one writable node's files
// changed, and each fork run to the end. Prints, per fork: the planner and worker calls made and
// adopted, the wall time of `fork` and of the run, and whether the tree is the parent's.
// Run: npm run build && node bench/fork.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initFromBlueprint } from '../dist/adapters/build-init.js';
import { blueprintDriver } from '../dist/adapters/driver-file.js';
import { openBuild } from '../dist/adapters/session.js';
import { forkBuild } from '../dist/adapters/fork/fork-build.js';
import { demoBlueprint } from '../dist/adapters/demo/demo-blueprint.js';
import { ScriptedPlanner } from '../dist/adapters/blueprint/scripted-planner.js';
import { ScriptedWorker } from '../dist/adapters/blueprint/scripted-worker.js';

const work = mkdtempSync(join(tmpdir(), 'lb-bench-fork-'));
const env = { ...process.env, LONGBUILD_SIGNING_KEY: join(work, 'signing.key') };
const bp = demoBlueprint();
const bpPath = join(work, 'textkit.json');
writeFileSync(bpPath, JSON.stringify(bp));

/** Run a build to its end with the scripted drivers, counting the calls they get. */
async function run(repo, blueprint) {
  const calls = { planner: 0, worker: 0 };
  const p = new ScriptedPlanner(blueprint);
  const w = new ScriptedWorker(blueprint);
  const s = await openBuild({
    repo, env, warn: () => undefined,
    planner: { route: p.route, propose: (i) => ((calls.planner += 1), p.propose(i)) },
    worker: { implement: (k, d) => ((calls.worker += 1), w.implement(k, d)) },
  });
  const t0 = performance.now();
  try {
    await s.runAll(() => undefined);
  } finally {
    await s.close();
  }
  const st = s.controller.current;
  return { calls, reused: st.reused ?? { planner: 0, worker: 0 }, seconds: (performance.now() - t0) / 1000, position: st.position };
}

const tree = (repo) => execFileSync('git', ['-C', repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'], { encoding: 'utf8' }).trim();

const parent = join(work, 'parent');
await initFromBlueprint(bpPath, { repo: parent, env });
const built = await run(parent, bp);
console.log(`parent: ${built.position} events, ${built.calls.planner} planner and ${built.calls.worker} worker calls, ${built.seconds.toFixed(2)} s`);

// One writable node of the second milestone, its files changed.
const changed = structuredClone(bp);
const node = changed.milestones[1].nodes.find((n) => n.kind === 'writable' && n.files);
const [file] = Object.keys(node.files);
node.files[file] += '\n// changed in the fork\n';
const changedPath = join(work, 'changed.json');
writeFileSync(changedPath, JSON.stringify(changed));

// A fresh build of the changed blueprint, for comparison with the changed forks.
const fresh = join(work, 'fresh');
await initFromBlueprint(changedPath, { repo: fresh, env });
const f = await run(fresh, changed);
console.log(`fresh build of the changed blueprint: ${f.calls.planner} planner and ${f.calls.worker} worker calls, ${f.seconds.toFixed(2)} s`);

console.log(`\nfork point  blueprint          fork s  run s   planner made/adopted  worker made/adopted  tree`);
for (const fraction of [0.25, 0.5, 0.75]) {
  for (const [label, path, blueprint] of [['same', undefined, bp], [`${node.id} changed`, changedPath, changed]]) {
    const to = join(work, `fork-${fraction}-${label.replace(/\W+/g, '-')}`);
    let at = Math.max(1, Math.floor(built.position * fraction));
    const t0 = performance.now();
    for (;;) {
      try {
        await forkBuild({ parent: { repo: parent }, at, to, env, ...(path ? { driver: blueprintDriver(path) } : {}) });
        break;
      } catch (err) {
        if (!/inside one decision/.test(err.message)) throw err;
        at += 1;
      }
    }
    const forkSeconds = (performance.now() - t0) / 1000;
    const r = await run(to, blueprint);
    const same = tree(to) === tree(parent) ? "parent's" : tree(to) === tree(fresh) ? "fresh build's" : 'other';
    console.log(`${String(at).padStart(5)}       ${label.padEnd(18)} ${forkSeconds.toFixed(2).padStart(5)}  ${r.seconds.toFixed(2).padStart(5)}   ${`${r.calls.planner}/${r.reused.planner}`.padStart(10)}            ${`${r.calls.worker}/${r.reused.worker}`.padStart(8)}          ${same}`);
  }
}
rmSync(work, { recursive: true, force: true });
