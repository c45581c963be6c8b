// The controller's fold alone (decision 0017, "Bucket names"): the events of the 1,000-node
// workload of bench/peers (read-only nodes, milestones of 20, compaction and renewals), recorded
// once by a real `longbuild run`, folded event by event with `evolveBuild` — the immutable fold
// the controller makes at every append — from the initial state. With LONGBUILD_BASELINE=DIR the
// fold of another built checkout runs interleaved on the same events. Prints the median of
// ROUNDS (default 7) folds, µs per event.
//   npm run build && node bench/fold.mjs            # BENCH_NODES=1000
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib/cli.mjs';
import { pathToFileURL } from 'node:url';
import { blueprint } from './peers/lib.mjs';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const NODES = Number(process.env.BENCH_NODES ?? 1000);
const here = join(import.meta.dirname, '..');
const checkouts = [['longbuild', here]];
if (process.env.LONGBUILD_BASELINE) checkouts.push(['baseline', process.env.LONGBUILD_BASELINE]);
const root = mkdtempSync(join(tmpdir(), 'lb-bench-fold-'));

try {
  const repo = join(root, 'repo');
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'base']);
  writeFileSync(join(root, 'blueprint.json'), JSON.stringify(blueprint(NODES)));
  const cli = join(here, 'bin', 'longbuild.js');
  execFileSync(process.execPath, [cli, 'init', '--blueprint', join(root, 'blueprint.json')], { cwd: repo, stdio: 'ignore' });
  execFileSync(process.execPath, [cli, 'run', '--json'], { cwd: repo, stdio: 'ignore' });
  const { SqliteLogReader } = await import(pathToFileURL(join(here, 'dist', 'adapters', 'log', 'sqlite-log-reader.js')).href);
  const reader = new SqliteLogReader({ path: join(repo, '.longbuild', 'events.db') });
  const events = reader.readAllSync();
  await reader.close();
  const folds = [];
  for (const [name, dir] of checkouts) {
    const { evolveBuild, initialBuildState } = await import(pathToFileURL(join(dir, 'dist', 'projections', 'build-state.js')).href);
    folds.push({ name, evolveBuild, initialBuildState, times: [] });
  }
  const load = [loadavg()[0]];
  for (let round = 0; round < ROUNDS; round++) {
    for (const f of folds) {
      let state = f.initialBuildState;
      const t = performance.now();
      for (const e of events) state = f.evolveBuild(state, e);
      f.times.push(performance.now() - t);
    }
  }
  load.push(loadavg()[0]);
  console.log(`${events.length} events of a ${NODES}-node build, median of ${ROUNDS} folds each, interleaved (load ${load.map((l) => l.toFixed(2)).join(' → ')})`);
  for (const f of folds) console.log(`${f.name.padEnd(10)} ${median(f.times).toFixed(1).padStart(8)} ms  ${(1000 * median(f.times) / events.length).toFixed(1).padStart(6)} µs/event`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
