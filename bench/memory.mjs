// A long build's memory (issue 50 item 2, decisions 0052 and 0054): the controller's peak RSS
// (VmHWM, read by the process itself at exit) running the bench/peers workload whole, at each
// size in BENCH_SIZES (default 1000,10000,50000 read-only nodes), and each size's ratio to the
// first. With LONGBUILD_BASELINE=DIR another built checkout runs the same builds, interleaved.
//   npm run build && node bench/memory.mjs          # BENCH_SIZES=1000,5000 for a quick look
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliBins } from './lib/cli.mjs';
import { blueprint } from './peers/lib.mjs';

const SIZES = (process.env.BENCH_SIZES ?? '1000,10000,50000').split(',').map(Number);
const bins = cliBins();
const root = mkdtempSync(join(tmpdir(), 'lb-bench-memory-'));
// Loaded before the CLI (NODE_OPTIONS --require): at exit, the peak RSS and the V8 heap into a file.
const probe = join(root, 'peak.cjs');
writeFileSync(probe, `process.on('exit', () => {
  const s = require('fs').readFileSync('/proc/self/status', 'utf8');
  const kb = (k) => Number(new RegExp(k + ':\\\\s+(\\\\d+)').exec(s)?.[1] ?? 0);
  require('fs').writeFileSync(process.env.LB_PEAK_FILE, JSON.stringify({ hwmKb: kb('VmHWM'), heapTotal: process.memoryUsage().heapTotal }));
});\n`);

/** One build of `n` nodes run whole by `bin`: its peak RSS in MB, heap at exit in MB, and wall seconds. */
function runBuild(bin, n) {
  const repo = join(root, `${n}-${Math.random().toString(36).slice(2, 8)}`);
  mkdirSync(repo);
  const git = (...a) => execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', ...a], { cwd: repo, stdio: 'ignore' });
  git('init', '-q');
  git('commit', '-q', '--allow-empty', '-m', 'base');
  writeFileSync(join(repo, '..', `${n}.json`), JSON.stringify(blueprint(n)));
  execFileSync(process.execPath, [bin, 'init', '--blueprint', join(repo, '..', `${n}.json`)], { cwd: repo, stdio: 'ignore' });
  const out = join(repo, '..', 'peak.json');
  const t = performance.now();
  const r = spawnSync(process.execPath, [bin, 'run', '--json'], { cwd: repo, encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, NODE_OPTIONS: `--require ${probe}`, LB_PEAK_FILE: out } });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0) throw new Error(`longbuild run (${n} nodes) exited ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  const peak = JSON.parse(readFileSync(out, 'utf8'));
  rmSync(repo, { recursive: true, force: true });
  return { mb: peak.hwmKb / 1024, heapMb: peak.heapTotal / 1048576, s };
}

try {
  const rows = [];
  for (const n of SIZES) {
    for (const [name, bin] of bins) {
      process.stderr.write(`${name}: ${n} nodes…\n`);
      rows.push({ name, n, ...runBuild(bin, n) });
    }
  }
  console.log(`\nload ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
  console.log('| checkout | nodes | peak RSS MB | ÷ first size | V8 heap at exit MB | wall s |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) {
    const first = rows.find((x) => x.name === r.name && x.n === SIZES[0]);
    console.log(`| ${r.name} | ${r.n.toLocaleString('en')} | ${r.mb.toFixed(0)} | ${(r.mb / first.mb).toFixed(2)}× | ${r.heapMb.toFixed(0)} | ${r.s.toFixed(1)} |`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
