// Start-up to the first step (issue 19): a whole `longbuild run` process on a freshly initialised
// build of test/fixtures/helios.json, killed (LONGBUILD_CRASH_AT) where it is about to append its
// first decision (`before-append:PlannerInvoked`) — module loading, opening the build, the lease,
// stale-lock clearing and the first decision, nothing of the first effect. Beside it `node -e 0`,
// the Node.js start-up no command can beat, the same `run` without V8's code cache
// (LONGBUILD_COMPILE_CACHE=off: every function it calls compiled anew, decision 0033), and started
// from a V8 start-up snapshot of the CLI (what `longbuild fuzz` starts its cases' runs from,
// decision 0028). The cached rows start from the cache a first, unmeasured run of each left (one
// step, then a normal exit). With
// LONGBUILD_BASELINE=DIR the same of another built checkout runs interleaved (each on a build its
// own `init` made). Prints medians, ms.
//   npm run build && node bench/startup.mjs            # ROUNDS=15 by default
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib/cli.mjs';
import { buildCliSnapshot } from '../dist/adapters/fuzz/cli-snapshot.js';

const ROUNDS = Number(process.env.ROUNDS ?? 15);
const POINT = 'before-append:PlannerInvoked:1';
const here = join(import.meta.dirname, '..');
const bins = [['longbuild', here]];
if (process.env.LONGBUILD_BASELINE) bins.push(['baseline', process.env.LONGBUILD_BASELINE]);
const root = mkdtempSync(join(tmpdir(), 'lb-bench-startup-'));
const timed = (argv, opts = {}) => {
  const t = performance.now();
  const r = spawnSync(process.execPath, argv, { encoding: 'utf8', ...opts });
  return { ms: performance.now() - t, r };
};

try {
  const templates = new Map();
  for (const [name, dir] of bins) {
    const repo = join(root, `template-${name}`);
    mkdirSync(repo);
    execFileSync('git', ['init', '-q', repo]);
    execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'base']);
    execFileSync(process.execPath, [join(dir, 'bin', 'longbuild.js'), 'init', '--blueprint', join(here, 'test', 'fixtures', 'helios.json')], { cwd: repo, stdio: 'ignore' });
    templates.set(name, repo);
  }
  const snapshot = await buildCliSnapshot(root, process.env);
  if (!('launch' in snapshot)) throw new Error(`the start-up snapshot: ${snapshot.reason}`);
  bins.push(['snapshot', here, snapshot.launch]);
  templates.set('snapshot', templates.get('longbuild'));
  bins.splice(1, 0, ['longbuild, no code cache', here, undefined, { LONGBUILD_COMPILE_CACHE: 'off' }]);
  templates.set('longbuild, no code cache', templates.get('longbuild'));
  const results = new Map([['node -e 0', []], ...bins.map(([name]) => [`${name} run, to its first step`, []])]);
  const load = [loadavg()[0]];
  for (let round = -1; round < ROUNDS; round++) {
    const warmUp = round < 0; // leaves each CLI's code cache, as any first run does
    if (!warmUp) results.get('node -e 0').push(timed(['-e', '0']).ms);
    for (const [name, dir, launch, env] of bins) {
      const repo = join(root, `run-${name}-${round}`);
      cpSync(templates.get(name), repo, { recursive: true });
      const bin = launch ?? [join(dir, 'bin', 'longbuild.js')];
      if (warmUp) {
        // A process killed where it stands writes no cache: this one exits after its first step.
        execFileSync(process.execPath, [...bin, 'run', '--max-steps', '1', '--json'], { cwd: repo, env: { ...process.env, ...env }, stdio: 'ignore' });
        rmSync(repo, { recursive: true, force: true });
        continue;
      }
      const { ms, r } = timed([...bin, 'run', '--json'], { cwd: repo, env: { ...process.env, ...env, LONGBUILD_CRASH_AT: POINT } });
      if (r.signal !== 'SIGKILL') throw new Error(`${name}: run was not stopped at ${POINT} (exit ${r.status}): ${r.stderr.trim()}`);
      results.get(`${name} run, to its first step`).push(ms);
      rmSync(repo, { recursive: true, force: true });
    }
  }
  load.push(loadavg()[0]);
  console.log(`median of ${ROUNDS} whole processes, interleaved, ms (load ${load.map((l) => l.toFixed(2)).join(' → ')})`);
  for (const [name, xs] of results) console.log(`${name.padEnd(40)} ${median(xs).toFixed(0).padStart(6)}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
