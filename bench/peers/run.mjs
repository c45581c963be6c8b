// Per-node cost of longbuild and its peers, the same 1,000-node durable workload, runs interleaved.
//   cd bench/peers && npm install && cd ../.. && npm run build
//   LONGBUILD_PG_URL="$(scripts/start-postgres.sh)" node bench/peers/run.mjs [--rounds R] [--nodes N] [--only a,b]
// Prints one table (median of R rounds): wall ms per node, CPU ms per node (client + server),
// bytes stored per node, each system's ratio to longbuild on SQLite and to the SQLite floor, and the
// machine's load. Workloads: bench/peers/README.md.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { blueprint, bytesUnder, childrenCpuMs, cpuOfProcesses } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
// LONGBUILD_BASELINE=DIR adds the rows of another checkout's CLI (built), e.g. main before a change.
const cli = join(root, 'bin', 'longbuild.js');
const baselineCli = process.env.LONGBUILD_BASELINE ? join(process.env.LONGBUILD_BASELINE, 'bin', 'longbuild.js') : null;
const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const ROUNDS = Number(arg('--rounds', 3));
const N = Number(arg('--nodes', 1000));
const only = arg('--only', '')?.split(',').filter(Boolean);
const pgUrl = process.env.LONGBUILD_PG_URL;
const restateBin = join(here, 'node_modules', '@restatedev', 'restate-server-linux-x64', 'bin', 'restate-server');

const git = (cwd, ...a) => spawnSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', ...a], { cwd, stdio: 'ignore' });
const sh = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26, ...opts });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return r.stdout;
};
const lastJson = (out) => JSON.parse(out.trim().split('\n').filter((l) => l.startsWith('{')).pop());
const pgCpu = () => cpuOfProcesses((c) => c === 'postgres');

/** Timed longbuild run (the CLI process whole, start-up included); log on SQLite or PostgreSQL. */
async function longbuild(dir, backend, bin = cli) {
  const repo = join(dir, 'repo');
  mkdirSync(repo);
  git(repo, 'init', '-q');
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'base');
  const bp = join(dir, 'bp.json');
  writeFileSync(bp, JSON.stringify(blueprint(N)));
  const schema = `lb_peers_${process.pid}_${Date.now()}`;
  const logArg = backend === 'pg' ? ['--log', `postgres:${pgUrl}?schema=${schema}`] : [];
  sh('node', [bin, 'init', '--blueprint', bp, ...logArg], { cwd: repo });
  const server0 = backend === 'pg' ? pgCpu() : 0;
  const cpu0 = childrenCpuMs();
  const t0 = performance.now();
  const out = lastJson(sh('node', [bin, 'run', '--json'], { cwd: repo }));
  const ms = performance.now() - t0;
  const cpuMs = childrenCpuMs() - cpu0;
  const serverMs = backend === 'pg' ? pgCpu() - server0 : 0;
  if (out.outcome !== 'horizon_complete') throw new Error(`longbuild run ended ${out.outcome}`);
  const lb = join(repo, '.longbuild');
  let bytes = bytesUnder(lb) - bytesUnder(join(lb, 'integrator.git')) - bytesUnder(join(lb, 'driver.json'));
  if (backend === 'pg') {
    const c = new pg.Client({ connectionString: pgUrl });
    await c.connect();
    const { rows } = await c.query(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS b FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'r'`, [schema]);
    bytes += Number(rows[0].b);
    await c.query(`DROP SCHEMA ${schema} CASCADE`);
    await c.end();
  }
  return { ms, wallMs: ms, cpuMs, serverMs, bytes };
}

/** A peer workload script run in its own process; its in-process timing of the steps is reported. */
function script(name, extra = [], serverCpu = () => 0) {
  return async (dir) => {
    const server0 = serverCpu();
    const t0 = performance.now();
    const r = lastJson(sh('node', [join(here, name), dir, String(N), ...extra], { env: process.env }));
    const wallMs = performance.now() - t0;
    return { ...r, wallMs, serverMs: serverCpu() - server0 };
  };
}

/**
 * Restate: a fresh server (own base dir) per run; bytes are what its data directory grew by from
 * ready to a clean shutdown (SIGTERM flushes its RocksDB memtables).
 */
async function restateRun(dir) {
  const base = join(dir, 'restate');
  mkdirSync(base);
  const server = spawn(restateBin, ['--no-logo'], { cwd: base, env: { ...process.env, RESTATE_BASE_DIR: base, RESTATE_LOG_FILTER: 'error' }, stdio: 'ignore' });
  try {
    for (let i = 0; ; i++) {
      try { if ((await fetch('http://127.0.0.1:9070/health')).ok && (await fetch('http://127.0.0.1:8080/restate/health')).ok) break; } catch { /* not up yet */ }
      if (i > 300) throw new Error('the Restate server did not come up in 30 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    const cpuOfServer = () => cpuOfProcesses((c) => c.startsWith('restate-server'));
    const before = bytesUnder(base);
    const r = await script('restate.mjs', [], cpuOfServer)(dir);
    const exited = new Promise((res) => server.once('exit', res));
    server.kill('SIGTERM');
    await exited;
    return { ...r, bytes: bytesUnder(base) - before };
  } finally {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  }
}

const systems = [
  { key: 'longbuild', label: 'longbuild CLI, SQLite log', run: (d) => longbuild(d, 'sqlite') },
  { key: 'longbuild-pg', label: 'longbuild CLI, PostgreSQL log', pg: true, run: (d) => longbuild(d, 'pg') },
  ...(baselineCli ? [
    { key: 'baseline', label: 'longbuild CLI, SQLite log (baseline)', run: (d) => longbuild(d, 'sqlite', baselineCli) },
    { key: 'baseline-pg', label: 'longbuild CLI, PostgreSQL log (baseline)', pg: true, run: (d) => longbuild(d, 'pg', baselineCli) },
  ] : []),
  { key: 'langgraph-full', label: 'LangGraph SqliteSaver, synchronous=FULL set', run: script('langgraph.mjs', ['full']) },
  { key: 'langgraph', label: 'LangGraph SqliteSaver, as shipped', run: script('langgraph.mjs', ['shipped']) },
  { key: 'dbos', label: 'DBOS Transact 5.3 (PostgreSQL)', pg: true, run: script('dbos.mjs', [], pgCpu) },
  { key: 'restate', label: 'Restate 1.7 server + TS SDK 1.12', run: restateRun },
  { key: 'floor-sqlite', label: 'floor: SQLite, one durable commit per node', run: script('floor-sqlite.mjs') },
  { key: 'floor-sqlite-mark', label: 'floor: SQLite, one durable commit + one flushed call mark per node (R-18)', run: script('floor-sqlite.mjs', ['mark']) },
  { key: 'floor-pg', label: 'floor: PostgreSQL, one INSERT transaction per node', pg: true, run: script('floor-pg.mjs', [], pgCpu) },
].filter((s) => (!only?.length || only.includes(s.key)) && (!s.pg || pgUrl));
if (!pgUrl) console.error('LONGBUILD_PG_URL is not set: the PostgreSQL rows are left out (export LONGBUILD_PG_URL="$(scripts/start-postgres.sh)")');

const results = new Map(systems.map((s) => [s.key, []]));
const load0 = loadavg()[0];
for (let round = 0; round < ROUNDS; round++) {
  // Interleaved: each round runs every system once, starting one further along each time.
  for (let k = 0; k < systems.length; k++) {
    const s = systems[(k + round) % systems.length];
    const dir = mkdtempSync(join(tmpdir(), `lb-peers-${s.key}-`));
    try {
      const r = await s.run(dir);
      results.get(s.key).push(r);
      process.stderr.write(`round ${round + 1}/${ROUNDS} ${s.key}: ${(r.ms / N).toFixed(3)} ms/node\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const load1 = loadavg()[0];
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const rows = systems.map((s) => {
  const rs = results.get(s.key);
  // A row labels itself with the durability it reported running at (LangGraph: the pragma in effect during its steps).
  const reported = [...new Set(rs.map((r) => r.synchronous).filter((x) => x !== undefined))];
  const label = reported.length > 0 ? `${s.label} (ran at synchronous=${reported.join('/')})` : s.label;
  return { key: s.key, label, ms: median(rs.map((r) => r.ms)) / N, wall: median(rs.map((r) => r.wallMs)) / N, cpu: median(rs.map((r) => r.cpuMs)) / N, server: median(rs.map((r) => r.serverMs)) / N, bytes: median(rs.map((r) => r.bytes)) / N };
});
const ref = rows.find((r) => r.key === 'longbuild');
const floor = rows.find((r) => r.key === 'floor-sqlite');
const f2 = (x) => x.toFixed(2);
const fmtRatio = (a, b) => (a && b ? `${f2(a / b)}×` : '—');
console.log(`\n${N} nodes, median of ${ROUNDS} interleaved rounds; ${cpus().length} cores, load average ${load0.toFixed(2)} → ${load1.toFixed(2)}`);
console.log('\n| system | wall ms/node | CPU ms/node (client + server) | bytes stored/node | wall ÷ longbuild SQLite | wall ÷ SQLite floor |');
console.log('|---|---|---|---|---|---|');
for (const r of rows) {
  const cpu = r.server ? `${f2(r.cpu)} + ${f2(r.server)}` : f2(r.cpu);
  console.log(`| ${r.label} | ${r.ms.toFixed(3)} | ${cpu} | ${Math.round(r.bytes).toLocaleString('en')} | ${fmtRatio(r.ms, ref?.ms)} | ${fmtRatio(r.ms, floor?.ms)} |`);
}
console.log('\nwall: longbuild, the `longbuild run` process start to exit (start-up included); peers, their steps timed in process (start-up and launch left out).');
if (process.argv.includes('--json')) console.log(JSON.stringify({ nodes: N, rounds: ROUNDS, load: [load0, load1], rows }));
