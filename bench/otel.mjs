// What `run --otel URL` costs a run (issue 48, decision 0045). Run on demand:
// `npm run build && node bench/otel.mjs`. Prints figures; not a timed test.
// The same blueprint build (BENCH_BLUEPRINT, default test/fixtures/orbit.json) run to its end
// ROUNDS times (BENCH_ROUNDS, default 3) each way, interleaved: without --otel; streaming to a
// collector that answers at once; to one that refuses (HTTP 500); to one that never answers. The
// spans go out in the background, so only the run's end waits (at most 10 s) for the last post.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin', 'longbuild.js');
const BLUEPRINT = process.env.BENCH_BLUEPRINT ?? join(ROOT, 'test', 'fixtures', 'orbit.json');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function collector(mode) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (mode === 'ok') res.writeHead(200).end('{}');
      else if (mode === 'refuse') res.writeHead(500).end('no');
      // 'hang': never answers
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => { server.closeAllConnections(); server.close(); } };
}

function runOnce(extra) {
  const dir = mkdtempSync(join(tmpdir(), 'longbuild-bench-otel-'));
  const repo = join(dir, 'repo');
  try {
    const init = spawnSync(process.execPath, [BIN, 'init', '--blueprint', BLUEPRINT, '--repo', repo], { encoding: 'utf8' });
    if (init.status !== 0) throw new Error(init.stderr);
    const t0 = performance.now();
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [BIN, 'run', '--repo', repo, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (c) => (err += c));
      child.on('close', (code) => {
        rmSync(dir, { recursive: true, force: true });
        if (code !== 0) fail(new Error(err)); else done(performance.now() - t0);
      });
    });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

const servers = { ok: await collector('ok'), refuse: await collector('refuse'), hang: await collector('hang') };
const ways = { 'no --otel': [], 'collector ok': ['--otel', servers.ok.url], 'collector refuses': ['--otel', servers.refuse.url], 'collector hangs': ['--otel', servers.hang.url] };
const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < ROUNDS; r++) for (const [k, extra] of Object.entries(ways)) times[k].push(await runOnce(extra));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(times['no --otel']);
console.log(`run of ${BLUEPRINT.split('/').pop()} to its end, median of ${ROUNDS} (ms), interleaved:`);
for (const [k, xs] of Object.entries(times)) console.log(`  ${k.padEnd(18)} ${median(xs).toFixed(0).padStart(7)}  ×${(median(xs) / base).toFixed(2)}`);
for (const s of Object.values(servers)) s.close();
