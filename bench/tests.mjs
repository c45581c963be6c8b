// What judging tests costs (issue 43, R-49..R-51). Run on demand:
//   npm run build && node bench/tests.mjs                       (40 test files x 5 tests, 4 nodes, 3 rounds)
//   BENCH_FILES=80 BENCH_NODES=6 BENCH_ROUNDS=5 node bench/tests.mjs
// Prints figures; not a timed test. One blueprint build per row, interleaved round by round, with
// the verification cache off (every command runs), verified by `node --test` in the sandbox:
//   plain       nodes add new test files (no declaration, no hold-out), reports read (`auto`)
//   no-report   the same with `"report": "none"`: exit codes alone (no ratchet, no base measured)
//   holdout     nodes change an existing test file, declared `"changes": ["tests"]`: each job also
//               runs the base's tests on its code
// For each row: the run's wall time, and per job the verification commands' own time (from the
// log) — the hold-out's cost is what its row adds per job.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBins, median } from './lib/cli.mjs';

const FILES = Number(process.env.BENCH_FILES ?? 40);
const NODES = Number(process.env.BENCH_NODES ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const [, cli] = cliBins()[0];
const env = { ...process.env, LONGBUILD_VERIFY_CACHE: 'off' };

const testFile = (i, extra = 0) => `const test = require('node:test');\nconst assert = require('node:assert');\n${Array.from({ length: 5 + extra }, (_, k) => `test('file ${i} case ${k}', () => assert.strictEqual(${i} + ${k}, ${i + k}));\n`).join('')}`;

function blueprint(mode) {
  const seedFiles = { 'package.json': JSON.stringify({ name: 'bench', private: true, scripts: { test: 'node --test' } }) };
  for (let i = 0; i < FILES; i++) seedFiles[`test/f${i}.test.js`] = testFile(i);
  const nodes = [{ id: 'seed', kind: 'writable', deps: [], changes: ['verification'], files: seedFiles }];
  for (let n = 0; n < NODES; n++) {
    const files = mode === 'holdout' ? { [`test/f${n}.test.js`]: testFile(n, 1) } : { [`test/new${n}.test.js`]: testFile(1000 + n) };
    nodes.push({ id: `n${n}`, kind: 'writable', deps: [n === 0 ? 'seed' : `n${n - 1}`], ...(mode === 'holdout' ? { changes: ['tests'] } : {}), files });
  }
  return {
    request: { goal: `bench ${mode}` },
    verify: [mode === 'no-report' ? { run: ['node', '--test'], report: 'none' } : ['node', '--test']],
    detailedWindow: 1, compaction: false,
    milestones: [{ id: 'm', title: 'M', nodes }],
  };
}

function once(mode) {
  const dir = mkdtempSync(join(tmpdir(), `lb-bench-tests-${mode}-`));
  writeFileSync(join(dir, 'bp.json'), JSON.stringify(blueprint(mode)));
  const run = (args) => spawnSync(process.execPath, [cli, ...args], { cwd: dir, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (run(['init', '--blueprint', join(dir, 'bp.json')]).status !== 0) throw new Error(`init failed (${mode})`);
  const t0 = performance.now();
  const r = run(['run', '--json']);
  const wall = performance.now() - t0;
  if (r.status !== 0) throw new Error(`run failed (${mode}): ${r.stderr}`);
  const events = run(['log', '--json', '--type', 'VerificationFinished']).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
  // The jobs of the nodes after the seed: the verification commands' own time, and whether a hold-out ran.
  const jobs = events.slice(1);
  const verifyMs = jobs.reduce((t, v) => t + v.evidence.reduce((u, e) => u + e.durationMs, 0), 0) / jobs.length;
  const holdouts = jobs.filter((v) => v.tests?.holdout !== undefined).length;
  const tests = jobs.at(-1).tests?.passed ?? null;
  return { wall, verifyMs, holdouts, tests };
}

const modes = ['plain', 'no-report', 'holdout'];
const results = Object.fromEntries(modes.map((m) => [m, []]));
for (let round = 0; round < ROUNDS; round++) for (const m of modes) results[m].push(once(m));
console.log(`${FILES} test files x 5 tests, ${NODES} nodes after the seed, ${ROUNDS} rounds (median), cache off, ${process.env.LONGBUILD_BWRAP === '' ? 'unsandboxed' : 'sandboxed when bubblewrap is installed'}`);
console.log('row         run wall s   per job: verify ms   hold-outs   tests on the head');
const base = median(results['no-report'].map((r) => r.wall));
for (const m of modes) {
  const rs = results[m];
  const wall = median(rs.map((r) => r.wall));
  console.log(`${m.padEnd(11)} ${(wall / 1000).toFixed(2).padStart(10)}   ${median(rs.map((r) => r.verifyMs)).toFixed(0).padStart(18)}   ${String(rs[0].holdouts).padStart(9)}   ${String(rs[0].tests ?? '-').padStart(17)}   (${(wall / base).toFixed(2)}x no-report; ${((wall - base) / NODES / 1000).toFixed(2)} s per job over it)`);
}
