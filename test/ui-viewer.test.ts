/// <reference lib="dom" />
/**
 * Issue 18: `longbuild ui`, the local read-only viewer. Its API against the CLI (`show`, `diff`,
 * `log`) on the demo build, its refusals (other hosts, writes, bad input), and the page itself in
 * a real browser (Debian's chromium driven by playwright-core): load, step the timeline, the graph's
 * nodes in the states of that point, an event's JSON, hash and evidence, a diff between two
 * points, a 1,000-node build, and a running build followed live. Screenshots of each view are kept
 * in test-artifacts/ui/ and checked to be non-blank.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, cliJson, runCli, tempDir } from './support/cli.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const ARTIFACTS = join(ROOT, 'test-artifacts', 'ui');

/** `longbuild ui --port 0 --json` in `repo`; resolves with its URL once it listens. */
function startUi(repo: string, extra: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'ui', '--port', '0', '--json', ...extra], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve({ url: JSON.parse(line!).url, child });
    });
    child.stderr!.on('data', (b: Buffer) => { err += b.toString(); });
    child.on('exit', (code) => reject(new Error(`longbuild ui exited ${code}: ${err}`)));
  });
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const done = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGINT');
  return done;
}

/** A screenshot saved as an artifact, checked to hold a picture (many colours), not a blank page. */
async function snap(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const png = await page.screenshot({ fullPage: false });
  writeFileSync(join(ARTIFACTS, `${name}.png`), png);
  const colours = await page.evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width;
    c.height = img.height;
    const g = c.getContext('2d')!;
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4 * 7) seen.add((d[i]! << 16) | (d[i + 1]! << 8) | d[i + 2]!);
    return seen.size;
  }, png.toString('base64'));
  expect(colours, `${name}.png looks blank`).toBeGreaterThan(12);
}

const get = async (url: string, init?: RequestInit) => {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, text, json: () => JSON.parse(text) };
};

describe.skipIf(CHROMIUM === undefined)('longbuild ui (issue 18)', () => {
  let demo: string;
  let ui: { url: string; child: ChildProcess };
  let browser: Browser;

  beforeAll(async () => {
    demo = join(tempDir(), 'textkit');
    cliJson(['demo', demo], { cwd: ROOT });
    ui = await startUi(demo);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (ui) await stop(ui.child);
  });

  it('the API is the CLI\'s: a view is `show --at`, a diff is `diff`, events are the log with their hashes and evidence', async () => {
    const meta = (await get(`${ui.url}api/meta`)).json();
    const log = runCli(['log', '--json'], { cwd: demo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(meta.head).toBe(log.length);
    expect(meta.completed).toBe(true);
    expect(new Set(meta.marks.map((m: { kind: string }) => m.kind))).toEqual(new Set(['revision', 'checkpoint', 'compaction', 'renewal', 'failure', 'completed']));
    for (const at of [0, 12, 26, meta.head]) {
      const view = (await get(`${ui.url}api/view?at=${at}`)).json();
      const { layout, criticalPath, ...rest } = view;
      expect(rest).toEqual(cliJson(['show', '--at', String(at)], { cwd: demo }));
      expect(criticalPath.nodes.every((id: string) => view.nodes.some((n: { id: string; state: string }) => n.id === id && n.state !== 'accepted'))).toBe(true);
      expect(Object.keys(layout.nodes).sort()).toEqual(view.nodes.map((n: { id: string }) => n.id).sort());
    }
    const diff = (await get(`${ui.url}api/diff?from=25&to=26`)).json();
    const cli = cliJson(['diff', '25', '26'], { cwd: demo });
    expect(diff.compacted).toEqual(cli.compacted);
    expect(diff.rewired).toEqual(cli.rewired);
    expect(cli.compacted).toHaveLength(1); // the demo's first compaction: five nodes into a summary
    expect(cli.rewired.length).toBe(4); // its four dependents now depend on the summary
    // Every event's hash is the SHA-256 of the canonical bytes the API gives.
    for (const p of [1, 26, meta.head]) {
      const e = (await get(`${ui.url}api/event?position=${p}`)).json();
      expect(createHash('sha256').update(e.canonical).digest('hex')).toBe(e.hash);
      expect(e.hash).toBe(log[p - 1].hash);
    }
    const verified = log.filter((e: { type: string }) => e.type === 'VerificationFinished').at(-1); // the last: every test file ran
    const ev = (await get(`${ui.url}api/event?position=${verified.position}`)).json();
    expect(ev.evidence.length).toBeGreaterThan(0);
    const text = await get(`${ui.url}api/evidence?sha256=${ev.evidence.find((x: { path: string }) => x.path.endsWith('stdoutSha256')).sha256}`);
    expect(text.status).toBe(200);
    expect(text.text).toMatch(/# pass \d+/); // node:test's report
    const filtered = (await get(`${ui.url}api/events?type=CheckpointWritten`)).json();
    expect(filtered.rows.map((r: { position: number }) => r.position)).toEqual(log.filter((e: { type: string }) => e.type === 'CheckpointWritten').map((e: { position: number }) => e.position));
    const byNode = (await get(`${ui.url}api/events?node=wrap`)).json();
    expect(byNode.rows.length).toBeGreaterThan(3);
    expect(byNode.rows.every((r: { nodes: string[] }) => r.nodes.includes('wrap'))).toBe(true);
  });

  it('a node named in the URL fills the panel with its last failure and the evidence of it; the critical path and the timeline have colours of their own, with a legend (issue 49)', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // wrap's first attempt fails verification (the demo's revised node): at the head its panel names that failure.
    const log = runCli(['log', '--json'], { cwd: demo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const failed = log.find((e: { type: string }) => e.type === 'IntegrationFailed');
    expect(failed.data.nodeIds ?? failed.data.nodes ?? ['wrap']).toContain('wrap');
    const at = failed.position + 1;
    await page.goto(`${ui.url}?at=${at}&node=wrap`);
    await page.waitForSelector(`body[data-rendered="${at}"]`);
    await page.waitForFunction(() => /IntegrationFailed at \d+/.test(document.querySelector('[data-testid=node-failure]')?.textContent ?? ''));
    expect(await page.locator('[data-testid=node-details]').textContent()).toMatch(/nodewrap/);
    expect(await page.locator('[data-testid=failure-event]').textContent()).toBe(`(IntegrationFailed at ${failed.position})`);
    await page.locator('[data-testid=node-failure] [data-testid=evidence-link]').first().click();
    await page.waitForFunction(() => /fail/i.test(document.querySelector('[data-testid=evidence-text]')?.textContent ?? ''));
    await snap(page, 'node-last-failure');
    // Before the failure there is none to name.
    await page.goto(`${ui.url}?at=${failed.position - 1}&node=wrap`);
    await page.waitForFunction(() => document.querySelector('[data-testid=node-failure]')?.textContent === 'none');
    // The critical path is drawn in its own colour, not the failure red of a blocked node; the timeline says what its marks are.
    await page.goto(`${ui.url}?at=26`);
    await page.waitForSelector('body[data-rendered="26"]');
    const stroke = await page.$eval('[data-testid=graph-svg] .node.critical rect', (r) => getComputedStyle(r).stroke);
    const blocked = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--blocked').trim());
    expect(stroke).not.toBe(blocked);
    expect(stroke).toBe('rgb(123, 31, 162)');
    expect(await page.locator('[data-testid=mark-legend]').textContent()).toBe('revisioncheckpointcompactionrenewalfailurecompletedspend');
    // A long label wraps inside its column instead of running into its value.
    const overlap = await page.$$eval('.kv', (kvs) => kvs.some((kv) => Array.from(kv.children).some((c, i, all) => i % 2 === 0 && all[i + 1] !== undefined && c.getBoundingClientRect().right > all[i + 1]!.getBoundingClientRect().left + 0.5)));
    expect(overlap).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('refuses what a read-only local viewer must: writes, other hosts, paths outside its assets, bad positions (one-line JSON errors)', async () => {
    expect((await get(`${ui.url}api/meta`, { method: 'POST' })).status).toBe(405);
    const rebinding = await new Promise<number>((resolve) => {
      const u = new URL(ui.url);
      // fetch() will not send another Host header; a raw request does (what a DNS-rebinding page makes).
      import('node:http').then(({ request }) => {
        const r = request({ host: u.hostname, port: u.port, path: '/api/meta', headers: { host: 'attacker.example:80' } }, (res) => resolve(res.statusCode ?? 0));
        r.end();
      });
    });
    expect(rebinding).toBe(403);
    for (const path of ['../package.json', '..%2Fpackage.json', 'app.js/../../package.json', 'nope.js']) {
      expect((await get(`${ui.url}${path}`)).status, path).toBe(404);
    }
    const bad = await get(`${ui.url}api/view?at=abc`);
    expect(bad.status).toBe(400);
    expect(bad.json().error).toMatch(/^at must be a whole number/);
    expect((await get(`${ui.url}api/view?at=999999`)).json().error).toMatch(/beyond the end of the log/);
    expect((await get(`${ui.url}api/evidence?sha256=..%2F..%2Fetc%2Fpasswd`)).status).toBe(400);
    // Nothing was written: the log is as it was.
    expect(cliJson(['verify'], { cwd: demo }).ok).toBe(true);
  });

  it('the page: load, step the timeline, the graph at that point, an event with its hash and evidence, a diff; the point is in the URL', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(ui.url);
    await page.waitForSelector('body[data-ready="true"]');
    const meta = (await get(`${ui.url}api/meta`)).json();
    const head = meta.head as number;
    // A finished build opens on its last milestone's graph (issue 49): its last checkpoint, before that milestone was compacted.
    const start = Math.max(...meta.marks.filter((m: { kind: string }) => m.kind === 'checkpoint').map((m: { position: number }) => m.position));
    expect(start).toBeLessThan(head);
    await page.waitForSelector(`body[data-rendered="${start}"]`);
    const opened = await page.$$eval('[data-testid=graph-svg] .node', (gs) => gs.map((g) => (g as SVGGElement).dataset.id!));
    expect(opened.filter((id) => !id.startsWith('summary-')).length).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=badge]').textContent({ timeout: 30_000 })).toBeTruthy();
    await page.waitForFunction(() => /chain verified up to/.test(document.querySelector('[data-testid=badge]')!.textContent ?? ''), null, { timeout: 60_000 });
    await snap(page, 'demo-head');
    // Arrow keys step event by event; the graph is the state of that point.
    await page.locator('[data-testid=slider]').focus();
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowLeft');
    await page.waitForSelector(`body[data-rendered="${start - 3}"]`);
    expect(page.url()).toContain(`at=${start - 3}`);
    // Dragging the slider: the page follows the value it is moved to.
    const box = (await page.locator('[data-testid=slider]').boundingBox())!;
    await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2, { steps: 6 });
    await page.mouse.up();
    const dragged = Number(await page.locator('[data-testid=slider]').inputValue());
    expect(dragged).toBeLessThan(head * 0.5);
    await page.waitForSelector(`body[data-rendered="${dragged}"]`);
    // Jump to a point by its URL: the nodes shown are those of `show --at` in the same states.
    await page.goto(`${ui.url}?at=26`);
    await page.waitForSelector('body[data-rendered="26"]');
    const shown = await page.$$eval('[data-testid=graph-svg] .node', (gs) => gs.map((g) => `${(g as SVGGElement).dataset.id}:${(g as SVGGElement).dataset.state}`).sort());
    const want = cliJson(['show', '--at', '26'], { cwd: demo }).nodes.map((n: { id: string; state: string }) => `${n.id}:${n.state}`).sort();
    expect(shown).toEqual(want);
    // The critical path (issue 16) is outlined: the nodes `status` would name at that point.
    const critical = await page.$$eval('[data-testid=graph-svg] .node.critical', (gs) => gs.map((g) => (g as SVGGElement).dataset.id));
    expect(critical.length).toBeGreaterThan(0);
    expect([...critical].sort()).toEqual([...(await get(`${ui.url}api/view?at=26`)).json().criticalPath.nodes].sort());
    expect(await page.locator('[data-testid=critical]').textContent()).toMatch(/^critical path: \d+ nodes?/);
    await snap(page, 'demo-at-26');
    // A node's declaration: the demo's package node may change the verification surface.
    await page.goto(`${ui.url}?at=10`);
    await page.waitForSelector('body[data-rendered="10"]');
    await page.locator('[data-testid=graph-svg] .node[data-id="package"]').click();
    expect(await page.locator('[data-testid=node-changes]').textContent()).toBe('verification');
    await page.goto(`${ui.url}?at=26`);
    await page.waitForSelector('body[data-rendered="26"]');
    // The summary expands into what it compacted.
    await page.locator('[data-testid=graph-svg] .node[data-id^="summary-"]').click();
    expect(await page.locator('[data-testid=summary-holds] li').count()).toBe(5);
    // An event: its canonical JSON, its hash recomputed in the page, its evidence shown.
    await page.goto(`${ui.url}?at=${head}`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.selectOption('[data-testid=type-filter]', 'VerificationFinished');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=event-list] .row').length > 0 && Array.from(document.querySelectorAll('[data-testid=event-list] .row .t')).every((t) => t.textContent === 'VerificationFinished'));
    // The virtualised list may draw itself again under the click on a busy machine: click until the event shows.
    await expect.poll(async () => {
      await page.locator('[data-testid=event-list] .row').last().click();
      return page.locator('[data-testid=hash-ok]').waitFor({ timeout: 10_000 }).then(() => true, () => false);
    }, { timeout: 120_000, interval: 0 }).toBe(true);
    expect(await page.locator('[data-testid=event-json]').textContent()).toContain('"type": "VerificationFinished"');
    // What its tests said: counts, the base, the tests no longer passing.
    expect(await page.locator('[data-testid=event-tests]').textContent()).toMatch(/\d+ passed, 0 failed, 0 skipped.*base head.*\d+ passed.*no longer passing.*none/s);
    await page.locator('[data-testid=evidence-link]').first().click();
    await page.waitForFunction(() => /# pass/.test(document.querySelector('[data-testid=evidence-text]')?.textContent ?? ''));
    expect(page.url()).toMatch(/event=\d+/);
    await snap(page, 'demo-event');
    // A diff: compare from 25, step to 26 — compaction and rewiring.
    await page.goto(`${ui.url}?at=25`);
    await page.waitForSelector('body[data-rendered="25"]');
    await page.locator('[data-testid=compare]').click();
    await page.locator('[data-testid=slider]').focus();
    await page.keyboard.press('ArrowRight');
    await page.waitForSelector('body[data-rendered="26"]');
    await page.waitForFunction(() => /compacted/.test(document.querySelector('[data-testid=diff]')?.textContent ?? ''));
    const diffText = await page.locator('[data-testid=diff]').textContent();
    expect(diffText).toMatch(/compacted.*summary-/s);
    expect(diffText).toMatch(/dependencies/);
    expect(page.url()).toContain('cmp=25');
    await snap(page, 'demo-diff');
    expect(errors).toEqual([]);
    await page.close();
  }, 300_000);

  it('a 1,000-node build: any point renders in the page (times printed), and a running build is followed live to its end', async () => {
    // 1,000 read-only nodes in 50 milestones of 20 (compaction and renewals on the way).
    const dir = tempDir();
    const milestones = Array.from({ length: 50 }, (_, m) => ({
      id: `m${m}`, title: `milestone ${m}`,
      nodes: Array.from({ length: 20 }, (_, i) => ({ id: `m${m}-n${i}`, kind: 'read-only', deps: i > 0 ? [`m${m}-n${Math.floor(i / 2)}`] : m > 0 ? [`m${m - 1}-n0`] : [], decision: 'ok' })),
    }));
    const bp = join(dir, 'big.json');
    writeFileSync(bp, JSON.stringify({ request: { title: 'a thousand nodes' }, verify: [], detailedWindow: 2, milestones }));
    const repo = join(dir, 'big');
    mkdirSync(repo);
    cliJson(['init', '--blueprint', bp], { cwd: repo });
    const big = await startUi(repo);
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(big.url);
      await page.waitForSelector('body[data-ready="true"]');
      // Run the build while the page is open: the page follows the head to the end.
      const run = spawn(process.execPath, [BIN, 'run', '--json'], { cwd: repo, stdio: 'ignore' });
      const ran = new Promise<number | null>((r) => run.once('exit', (code) => r(code)));
      await page.waitForFunction(() => /completed/.test(document.querySelector('[data-testid=graph-meta]')?.textContent ?? ''), null, { timeout: 120_000 });
      expect(await ran).toBe(0);
      // The viewer read the build all along: nothing it did changed the build (chain and projections verify).
      expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
      const head = (await get(`${big.url}api/meta`)).json().head as number;
      expect(await page.evaluate(() => document.body.dataset.rendered)).toBe(String(head));
      // The badge follows: the chain is checked again as the log grows.
      await page.waitForFunction((n) => (document.querySelector('[data-testid=badge]')?.textContent ?? '').includes(`verified up to ${n}`), head, { timeout: 60_000 });
      await snap(page, 'big-live-end');
      // Points across the build, rendered from a cold cache: the time from request to drawn graph.
      const times: number[] = [];
      for (const at of [Math.floor(head / 7), Math.floor(head / 3), Math.floor(head / 2), head - 5]) {
        await page.goto(`${big.url}?at=${at}`);
        await page.waitForSelector(`body[data-rendered="${at}"]`);
        const shown = await page.$$eval('[data-testid=graph-svg] .node', (gs) => gs.length);
        expect(shown).toBe(cliJson(['show', '--at', String(at)], { cwd: repo }).nodes.length);
        times.push(Number(await page.evaluate(() => document.body.dataset.renderMs)));
      }
      console.log(`ui: 1,000-node build (${head} events): point rendered in ${times.join(', ')} ms (request to drawn graph, in chromium)`);
      await snap(page, 'big-point');
      await page.close();
    } finally {
      await stop(big.child);
    }
  }, 300_000);

  it('text an agent controls (a request title, milestone and node titles, a decision) is shown as text in the page, never run as markup', async () => {
    const payload = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
    const dir = tempDir();
    const bp = join(dir, 'hostile.json');
    writeFileSync(bp, JSON.stringify({
      request: { title: payload }, verify: [], detailedWindow: 1,
      milestones: [{ id: 'm1', title: payload, nodes: [{ id: 'decide', kind: 'read-only', deps: [], title: payload, decision: payload }] }],
    }));
    const repo = join(dir, 'hostile');
    mkdirSync(repo);
    cliJson(['init', '--blueprint', bp], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    const hostile = await startUi(repo);
    try {
      const page = await browser.newPage();
      await page.goto(`${hostile.url}?at=1`);
      await page.waitForSelector('body[data-ready="true"]');
      expect(await page.locator('[data-testid=title]').textContent()).toBe(payload);
      const decided = (await get(`${hostile.url}api/events?type=AttemptFinished`)).json().rows[0].position;
      await page.goto(`${hostile.url}?event=${decided}`);
      await page.waitForSelector('[data-testid=hash-ok]');
      expect(await page.locator('[data-testid=event-json]').textContent()).toContain('onerror=\\"window.__pwned=1\\"');
      await page.locator('[data-testid=graph-svg] .node[data-id="decide"]').click();
      expect(await page.locator('[data-testid=details]').textContent()).toContain(payload);
      expect(await page.locator('[data-testid=horizon]').textContent()).toContain(payload);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.locator('img, script:not([type=module])').count()).toBe(0);
      await page.close();
    } finally {
      await stop(hostile.child);
    }
  }, 120_000);

  it('usage: a port in use is refused in one line; --host must name an address', async () => {
    const port = new URL(ui.url).port;
    const r = runCli(['ui', '--port', port], { cwd: demo, timeoutMs: 30_000 });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/port \d+ on 127\.0\.0\.1 is in use; give another with --port/);
    const h = runCli(['ui', '--port', '0', '--host', 'not-an-address.invalid'], { cwd: demo, timeoutMs: 30_000 });
    expect(h.code).toBe(1);
    expect(h.stderr).toMatch(/cannot listen on not-an-address\.invalid/);
  });
});

describe('longbuild ui without a build', () => {
  it('says there is no build here, in one line', () => {
    const r = runCli(['ui', '--port', '0'], { cwd: tempDir() });
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/no build|longbuild init/);
  });
});

