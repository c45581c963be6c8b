// Integration benchmark (issue 5, R-24/R-25/R-27). Run on demand:
//   npm run build && node bench/integration.mjs            (8 candidates, verify = `sleep 1`)
//   BENCH_NODES=16 BENCH_VERIFY_MS=1000 node bench/integration.mjs
// Prints figures; not a timed test. On a real git repository it integrates the same N
// independent candidate commits (each made from the same base head, as a wave's workers make
// them) three ways — serially (one job per node: worktree, apply, verify, promote), and in
// batches of 4 and of 8 (one job per batch: the batch applied together, verified once, one
// compare-and-set ref update) — and reports the cost per node of each phase. Then the
// verification cache: a hit (lookup, re-check of the entry, clean workspace before and after)
// against running the command.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attemptBranch, commitAttempt, ensureRepo, integrateCandidates, prepareAttemptWorktree, promote, removeWorkspace,
} from '../dist/adapters/git/git.js';
import { verifyWithCache } from '../dist/adapters/cache/cached-verification.js';
import { VerificationCache } from '../dist/adapters/cache/verification-cache.js';
import { runProcess } from '../dist/adapters/process/run-process.js';

const N = Number(process.env.BENCH_NODES ?? 8);
const VERIFY_MS = Number(process.env.BENCH_VERIFY_MS ?? 1000);
const DATE = '2026-01-01T00:00:00Z';
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
const VERIFY = [['sleep', String(VERIFY_MS / 1000)]];

const repo = mkdtempSync(join(tmpdir(), 'lb-bench-int-'));
const base = await ensureRepo(repo, DATE);
const worktrees = join(repo, '.longbuild', 'worktrees');
const workspaces = join(repo, '.longbuild', 'workspaces');

/** The host's commit of an attempt's clone onto its branch. */
async function commit(worktree, id, baseHead, message) {
  mkdirSync(join(repo, '.longbuild', 'index'), { recursive: true });
  const r = await commitAttempt(join(repo, '.git'), worktree, attemptBranch(id), baseHead, message, DATE, { maxFileBytes: 1 << 20, indexFile: join(repo, '.longbuild', 'index', `${id}.index`) });
  if (r.kind !== 'committed') throw new Error(`attempt ${id} not committed: ${JSON.stringify(r)}`);
  return r;
}

// A small real project so apply and status have something to do.
{
  const p = await prepareAttemptWorktree(repo, worktrees, 'seed.1', attemptBranch('seed.1'), base);
  for (let i = 0; i < 200; i++) writeFileSync(join(p.worktree, `file-${i}.txt`), `line ${i}\n`.repeat(50));
  const c = await commit(p.worktree, 'seed.1', base, 'seed');
  await removeWorkspace(repo, p.worktree);
  var head0 = c.commit;
}
const candidates = [];
for (let i = 0; i < N; i++) {
  const id = `node${i}.1`;
  const p = await prepareAttemptWorktree(repo, worktrees, id, attemptBranch(id), head0);
  writeFileSync(join(p.worktree, `node-${i}.js`), `module.exports = ${i};\n`);
  candidates.push((await commit(p.worktree, id, head0, `node ${i}`)).commit);
  await removeWorkspace(repo, p.worktree);
}

const ms = (t0) => performance.now() - t0;

/** Integrate all candidates in jobs of `size` onto a fresh ref; phase totals in ms. */
async function integrateAll(size, label) {
  const ref = `refs/heads/bench/${label}`;
  if ((await promote(repo, ref, head0, null)) !== 'promoted') throw new Error('ref exists');
  let head = head0;
  const t = { apply: 0, verify: 0, promote: 0, cleanup: 0, jobs: 0 };
  const started = performance.now();
  for (let i = 0; i < candidates.length; i += size) {
    const group = candidates.slice(i, i + size);
    let t0 = performance.now();
    const applied = await integrateCandidates(repo, workspaces, `${label}-${i}`, head, group, DATE);
    t.apply += ms(t0);
    if (applied.kind !== 'applied') throw new Error(`conflict in ${label}`);
    t0 = performance.now();
    const v = await verifyWithCache({ workspace: applied.workspace, gitDir: applied.gitDir, tree: applied.tree, commands: VERIFY, env: ENV, timeoutMs: 60_000, cache: null, run: runProcess });
    t.verify += ms(t0);
    if (!v.passed) throw new Error(`verification failed: ${v.reason}`);
    t0 = performance.now();
    if ((await promote(repo, ref, applied.resultCommit, head)) !== 'promoted') throw new Error('CAS refused');
    t.promote += ms(t0);
    t0 = performance.now();
    await removeWorkspace(repo, applied.workspace);
    t.cleanup += ms(t0);
    head = applied.resultCommit;
    t.jobs += 1;
  }
  return { label, size, total: ms(started), ...t };
}

const rows = [];
for (const [size, label] of [[1, 'serial'], [4, 'batch-4'], [8, 'batch-8']]) rows.push(await integrateAll(size, label));

const f = (x) => x.toFixed(0).padStart(7);
console.log(`\nintegration of ${N} independent candidates, verification = ${JSON.stringify(VERIFY[0])} (${VERIFY_MS} ms)`);
console.log('mode       jobs  total ms  per node ms  (worktree+apply  verify  promote  cleanup per node)');
for (const r of rows) {
  console.log(`${r.label.padEnd(9)} ${String(r.jobs).padStart(5)} ${f(r.total)}   ${f(r.total / N)}      ${f(r.apply / N)}      ${f(r.verify / N)}  ${f(r.promote / N)}  ${f(r.cleanup / N)}`);
}
const serial = rows[0].total;
for (const r of rows.slice(1)) console.log(`${r.label}: ${(serial / r.total).toFixed(2)}x faster than serial (${(100 * (1 - r.total / serial)).toFixed(0)}% less wall time)`);

// ---- the cache: a hit against running the command ----------------------------------------------
const cache = new VerificationCache(join(repo, '.longbuild', 'cache'));
const applied = await integrateCandidates(repo, workspaces, 'cache-job', head0, candidates, DATE);
const opts = { workspace: applied.workspace, gitDir: applied.gitDir, tree: applied.tree, commands: VERIFY, env: ENV, timeoutMs: 60_000, cache, run: runProcess };
let t0 = performance.now();
const miss = await verifyWithCache(opts);
const missMs = ms(t0);
if (!miss.passed || miss.commands[0].cacheHit) throw new Error('expected a stored miss');
const hits = [];
for (let i = 0; i < 20; i++) {
  t0 = performance.now();
  const hit = await verifyWithCache(opts);
  hits.push(ms(t0));
  if (!hit.commands[0].cacheHit) throw new Error('expected a hit');
}
hits.sort((a, b) => a - b);
const median = hits[Math.floor(hits.length / 2)];
// The cache's own share of a hit: the lookup (read key, read entry, hash re-check, decode).
const { trustedEnvSha256 } = await import('../dist/commands/cache-key.js');
const identity = { tree: applied.tree, argv: VERIFY[0], envSha256: trustedEnvSha256(ENV) };
const lookups = [];
for (let i = 0; i < 200; i++) {
  t0 = performance.now();
  if (cache.lookup(identity) === null) throw new Error('expected a hit');
  lookups.push(ms(t0));
}
lookups.sort((a, b) => a - b);
const lookupMedian = lookups[Math.floor(lookups.length / 2)];
await removeWorkspace(repo, applied.workspace);
console.log(`\nverification cache: run (miss, stored) ${missMs.toFixed(0)} ms; hit median ${median.toFixed(1)} ms (min ${hits[0].toFixed(1)}, max ${hits.at(-1).toFixed(1)}) = ${(100 * median / missMs).toFixed(1)}% of running the command (target <= 5%)`);
console.log(`  a hit = lookup ${lookupMedian.toFixed(2)} ms (${(100 * lookupMedian / missMs).toFixed(2)}%) + \`git status\` of the workspace before and after (which a run does too)`);

// ---- end to end: the controller building N independent nodes with maxBatch 1, 4, 8 -------------
// (`longbuild init` + `longbuild run` as child processes; workers are the scripted ones, so the
// difference is integration: jobs, verifications and promotions.) Skip with BENCH_E2E=0.
if (process.env.BENCH_E2E !== '0') {
  const { spawnSync } = await import('node:child_process');
  const bin = new URL('../bin/longbuild.js', import.meta.url).pathname;
  console.log(`\nend to end (longbuild run, ${N} independent writable nodes, verify ${JSON.stringify(VERIFY[0])})`);
  const e2e = [];
  for (const maxBatch of [1, 4, 8]) {
    const dir = mkdtempSync(join(tmpdir(), 'lb-bench-e2e-'));
    const nodes = Array.from({ length: N }, (_, i) => ({ id: `n${i + 1}`, kind: 'writable', deps: [], files: { [`src/n${i + 1}.js`]: `module.exports = ${i};\n` } }));
    writeFileSync(join(dir, 'bp.json'), JSON.stringify({ request: { title: 'bench' }, verify: VERIFY, detailedWindow: 1, maxBatch, milestones: [{ id: 'm1', title: 'M1', nodes }] }));
    const cli = (...args) => {
      const r = spawnSync(process.execPath, [bin, ...args, '--json'], { cwd: dir, encoding: 'utf8', env: { ...process.env, LONGBUILD_VERIFY_CACHE: 'off' } });
      if (r.status !== 0) throw new Error(`longbuild ${args.join(' ')}: ${r.stderr}`);
      return JSON.parse(r.stdout);
    };
    cli('init', '--blueprint', join(dir, 'bp.json'));
    const t0 = performance.now();
    const out = cli('run');
    const wall = ms(t0);
    e2e.push(wall);
    console.log(`maxBatch ${String(maxBatch).padEnd(2)} ${out.outcome}: ${f(wall)} ms wall (${(wall / N).toFixed(0)} ms per node), ${out.outcomes.integrated ?? 0} integration jobs`);
  }
  console.log(`wall-time improvement: maxBatch 4 ${(100 * (1 - e2e[1] / e2e[0])).toFixed(0)}%, maxBatch 8 ${(100 * (1 - e2e[2] / e2e[0])).toFixed(0)}% less than maxBatch 1`);
}
