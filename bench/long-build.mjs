// A long build, end to end (issue 19, decision 0032): the bench/peers workload at BENCH_NODES
// read-only nodes (default 50,000: 2,500 milestones of 20, ~108,750 events; its `run` takes
// ~2.5 min here), run whole by each checkout on a build of its own, then `status`, `show --at P`
// (P at a half and at nine tenths of the log) and `step` on the finished build, each a whole CLI
// process, ROUNDS times (default 3). With LONGBUILD_BASELINE=DIR another built checkout does the
// same, interleaved. Prints the run's wall time, bytes stored per node and each command's median.
//   npm run build && node bench/long-build.mjs          # BENCH_NODES=10000 for a quicker look
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBins, median } from './lib/cli.mjs';
import { blueprint, bytesUnder } from './peers/lib.mjs';

const N = Number(process.env.BENCH_NODES ?? 50_000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const bins = cliBins();
const root = mkdtempSync(join(tmpdir(), 'lb-bench-long-'));

/** One whole CLI process in `repo`; its wall time in ms (it must succeed). */
function timed(bin, repo, args) {
  const t = performance.now();
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: repo, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`longbuild ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  return { ms, stdout: r.stdout };
}

try {
  const bp = join(root, 'blueprint.json');
  writeFileSync(bp, JSON.stringify(blueprint(N)));
  const load = [loadavg()[0]];
  const builds = new Map();
  for (const [name, bin] of bins) {
    const repo = join(root, name);
    mkdirSync(repo);
    execFileSync('git', ['init', '-q', repo]);
    execFileSync('git', ['-C', repo, '-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '--allow-empty', '-m', 'base']);
    timed(bin, repo, ['init', '--blueprint', bp]);
    const run = timed(bin, repo, ['run', '--json']);
    const position = JSON.parse(timed(bin, repo, ['status', '--json']).stdout).position;
    const lb = join(repo, '.longbuild');
    const bytes = bytesUnder(lb) - bytesUnder(join(lb, 'integrator.git')) - bytesUnder(join(lb, 'driver.json'));
    builds.set(name, { bin, repo, position });
    console.log(`${name}: ${N} nodes run in ${(run.ms / 1000).toFixed(1)} s, ${position} events, ${Math.round(bytes / N)} bytes stored per node`);
  }
  const position = builds.get('longbuild').position;
  const commands = [['status', '--json'], ['show', '--at', String(Math.round(position / 2)), '--json'], ['show', '--at', String(Math.round(position * 0.9)), '--json'], ['step', '--json']];
  const results = new Map();
  for (let round = 0; round < ROUNDS; round++) {
    for (const args of commands) {
      for (const [name, { bin, repo }] of builds) {
        const key = `${name} ${args.filter((a) => a !== '--json').join(' ')}`;
        results.set(key, [...(results.get(key) ?? []), timed(bin, repo, args).ms]);
      }
    }
  }
  load.push(loadavg()[0]);
  console.log(`median of ${ROUNDS} whole processes each, interleaved, ms (load ${load.map((l) => l.toFixed(2)).join(' → ')})`);
  for (const [key, xs] of results) console.log(`${key.padEnd(40)} ${median(xs).toFixed(0).padStart(6)}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
