// Warm caches across builds (issue 16): the demo build (textkit: 16 nodes, real `node --test`
// verification) run twice, each in a new repository, with one shared verification cache
// (LONGBUILD_CACHE_DIR), then once more with a cache of its own. Prints, per build, the
// verification commands run and replayed and the wall time.
// Run: npm run build && node bench/shared-cache.mjs
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initFromBlueprint } from '../dist/adapters/build-init.js';
import { openBuild } from '../dist/adapters/session.js';
import { demoBlueprint } from '../dist/adapters/demo/demo-blueprint.js';

const work = mkdtempSync(join(tmpdir(), 'lb-bench-cache-'));
const blueprint = join(work, 'textkit.json');
writeFileSync(blueprint, JSON.stringify(demoBlueprint()));
const shared = join(work, 'shared-cache');

async function build(name, cacheDir) {
  const repo = join(work, name);
  const env = { ...process.env, LONGBUILD_SIGNING_KEY: join(work, 'signing.key'), ...(cacheDir ? { LONGBUILD_CACHE_DIR: cacheDir } : {}) };
  await initFromBlueprint(blueprint, { repo, env });
  const s = await openBuild({ repo, env });
  const t0 = Date.now();
  try {
    for (let r = await s.advance(); r.outcome !== 'horizon_complete' && r.outcome !== 'blocked'; r = await s.advance());
  } finally {
    await s.close();
  }
  const st = s.controller.current;
  return { name, seconds: (Date.now() - t0) / 1000, run: st.verifications.commands - st.verifications.cacheHits, replayed: st.verifications.cacheHits, head: st.integrationHead };
}

const rows = [await build('first (shared cache, cold)', shared), await build('second (shared cache, warm)', shared), await build('third (a cache of its own)', null)];
console.log('textkit (16 nodes, node --test verification), three builds in new repositories');
console.log('build                          verifications run  replayed  wall s');
for (const r of rows) console.log(`${r.name.padEnd(30)} ${String(r.run).padStart(17)} ${String(r.replayed).padStart(9)} ${r.seconds.toFixed(1).padStart(7)}`);
console.log(`same integration head: ${rows.every((r) => r.head === rows[0].head)}; warm / cold wall time: ${(rows[1].seconds / rows[0].seconds).toFixed(2)}`);
rmSync(work, { recursive: true, force: true });
