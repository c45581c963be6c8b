// The viewer on a big build (issue 18). Run on demand: `npm run build && node bench/ui.mjs`.
// Makes a synthetic build of BENCH_EVENTS events (default 100000; projections snapshotted every
// 1000), starts `longbuild ui` on it, and measures for random points of the log:
//   api     GET /api/view?at=P from a cold cache (time travel from the nearest snapshot + layout)
//   page    the page in Debian's chromium (playwright-core): navigation to ?at=P until the graph of
//           that point is drawn (the page's own request-to-drawn time, and the whole navigation)
// Prints medians and maxima; not a timed test. LONGBUILD_BASELINE=DIR runs another built checkout's CLI instead.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from './lib/cli.mjs';
import { syntheticBuild } from './lib/synthetic-build.mjs';

const N = Number(process.env.BENCH_EVENTS ?? 100_000);
const POINTS = Number(process.env.BENCH_POINTS ?? 20);
const BIN = join(process.env.LONGBUILD_BASELINE ?? join(import.meta.dirname, '..'), 'bin', 'longbuild.js');
const root = mkdtempSync(join(tmpdir(), 'lb-bench-ui-'));
const max = (xs) => Math.max(...xs);

let t = performance.now();
const b = await syntheticBuild(root, 'big', N, { signEvery: 10_000, snapshotEvery: 1000 });
console.log(`synthetic ${N}-event build made in ${((performance.now() - t) / 1000).toFixed(1)} s`);

const child = spawn(process.execPath, [BIN, 'ui', '--port', '0', '--json'], { cwd: b.repo, stdio: ['ignore', 'pipe', 'inherit'] });
t = performance.now();
const url = await new Promise((resolve, reject) => {
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).url);
  });
  child.on('exit', (code) => reject(new Error(`ui exited ${code}`)));
});
console.log(`ui listening after ${(performance.now() - t).toFixed(0)} ms`);
await fetch(`${url}api/meta`);
console.log(`first /api/meta after ${(performance.now() - t).toFixed(0)} ms (the timeline and list of ${N} events: from the event index in projections.db, decision 0051)`);

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
const points = Array.from({ length: POINTS }, () => 1 + Math.floor(rand() * (N - 1)));

const api = [];
const first = performance.now();
await (await fetch(`${url}api/view?at=${N}`)).json();
console.log(`api  first /api/view (at the head; opens the build for reading): ${(performance.now() - first).toFixed(0)} ms`);
for (const p of points) {
  const s = performance.now();
  const r = await fetch(`${url}api/view?at=${p}`);
  await r.json();
  api.push(performance.now() - s);
}
console.log(`api  /api/view at ${POINTS} random points (cold): median ${median(api).toFixed(0)} ms, max ${max(api).toFixed(0)} ms`);

const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (chromium) {
  const { chromium: pw } = await import('playwright-core');
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  const drawn = [];
  const nav = [];
  for (const p of points.map((x) => Math.min(N, x + 1))) {
    const s = performance.now();
    await page.goto(`${url}?at=${p}`);
    await page.waitForSelector(`body[data-rendered="${p}"]`);
    nav.push(performance.now() - s);
    drawn.push(Number(await page.evaluate(() => document.body.dataset.renderMs)));
  }
  console.log(`page request-to-drawn graph at ${POINTS} random points (cold): median ${median(drawn)} ms, max ${max(drawn)} ms; whole navigation (page, meta, events, view): median ${median(nav).toFixed(0)} ms, max ${max(nav).toFixed(0)} ms`);
  await browser.close();
} else console.log('page: no chromium here (apt-get install chromium)');

child.kill('SIGINT');
await new Promise((r) => child.once('exit', r));
if (!process.env.BENCH_KEEP) rmSync(root, { recursive: true, force: true });
