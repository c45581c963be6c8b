// Reading commands on a big build (issue 19): `--version` (start-up alone), `status`, `show`,
// `show --at P` and `log --tail 5` (all types, and one type; decision 0053) on a synthetic build
// of BENCH_EVENTS events (default 100000; 1000 shows start-up on a small build), each command run
// ROUNDS times as a whole CLI process, plus `node -e 0` (the Node.js start-up no command can beat).
// With LONGBUILD_BASELINE=DIR the same commands of another built checkout run interleaved. Prints
// medians, ms.
//   npm run build && node bench/cli-read.mjs
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBins, median } from './lib/cli.mjs';
import { syntheticBuild } from './lib/synthetic-build.mjs';

const N = Number(process.env.BENCH_EVENTS ?? 100_000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const bins = cliBins();
const root = mkdtempSync(join(tmpdir(), 'lb-bench-read-'));
try {
  const t0 = performance.now();
  const b = await syntheticBuild(root, 'big', N, { signEvery: 10_000, snapshotEvery: 1000 });
  console.log(`synthetic ${N}-event build made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // Each checkout reads a copy of its own: two versions of the projections' layout on one build
  // would rebuild them at every switch.
  const repos = new Map(bins.map(([name], i) => {
    if (i === 0) return [name, b.repo];
    const copy = join(root, `copy-${name}`);
    cpSync(b.repo, copy, { recursive: true, preserveTimestamps: true });
    return [name, copy];
  }));
  const time = (argv, cwd = b.repo) => {
    const t = performance.now();
    const r = spawnSync(process.execPath, argv, { cwd, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}\n${r.stderr}`);
    return performance.now() - t;
  };
  const cases = [['--version'], ['status', '--json'], ['show', '--json'], ['show', '--at', String(Math.floor(N / 2)), '--json'], ['log', '--tail', '5', '--json'], ['log', '--tail', '5', '--type', 'AttemptStarted', '--json']];
  for (const [name, bin] of bins) time([bin, 'status', '--json'], repos.get(name)); // a first open may catch the projections up
  const results = new Map();
  for (let r = 0; r < ROUNDS; r++) {
    results.set('node -e 0', [...(results.get('node -e 0') ?? []), time(['-e', '0'])]);
    for (const [name, bin] of bins) {
      for (const c of cases) {
        const key = `${name} ${c.filter((x) => x !== '--json').join(' ')}`;
        results.set(key, [...(results.get(key) ?? []), time([bin, ...c], repos.get(name))]);
      }
    }
  }
  console.log(`median of ${ROUNDS} runs, whole process, ms`);
  for (const [k, xs] of results) console.log(`${k.padEnd(36)} ${median(xs).toFixed(0).padStart(6)}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
