/// <reference lib="dom" />
/**
 * The viewer shows spend (issue 46, R-58) in a real browser (Debian's chromium, playwright-core):
 * the cumulative line on the timeline, the total at the chosen point, a node's and its milestone's
 * spend in its panel — on a command build whose worker reports a cost per call.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { BIN, cliJson, runCli } from './support/cli.js';
import { build } from './support/spend-build.js';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

function startUi(repo: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'ui', '--port', '0', '--json'], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('\n')) resolve({ url: JSON.parse(out.split('\n')[0]!).url, child });
    });
    child.on('exit', (code) => reject(new Error(`longbuild ui exited ${code}`)));
  });
}

describe.skipIf(CHROMIUM === undefined)('the viewer shows spend (issue 46)', () => {
  it('a cumulative spend line on the timeline, the total at a point, a node\'s and its milestone\'s spend', async () => {
    const { repo } = build({ milestones: 1, perMilestone: 2, compaction: false });
    expect(runCli(['run'], { cwd: repo }).code).toBe(0);
    const ui = await startUi(repo);
    const browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] });
    try {
      const meta = await (await fetch(`${ui.url}api/meta`)).json() as { spend: { position: number; usd: number; tokens: number }[] };
      // The planner's report (priced nowhere: cost unknown) and two workers' at $0.25.
      expect(meta.spend.map((p) => p.usd)).toEqual([0, 0.25, 0.5]);
      expect(meta.spend.at(-1)!.tokens).toBe(cliJson(['status'], { cwd: repo }).spend.inputTokens + cliJson(['status'], { cwd: repo }).spend.outputTokens);
      const page = await browser.newPage();
      await page.goto(ui.url);
      await page.waitForSelector('[data-testid="spend-line"]');
      expect(await page.locator('[data-testid="spend-line"] title').textContent()).toMatch(/^spend: \$0\.50 by position \d+$/);
      await page.waitForFunction(() => document.body.dataset.rendered !== undefined);
      expect(await page.locator('[data-testid="graph-meta"]').textContent()).toMatch(/spend \$0\.50 · 12,600 tokens/);
      await page.locator('.node[data-id="m1-n0"]').click();
      expect(await page.locator('[data-testid="node-spent"]').textContent()).toBe('$0.25 · 5,700 tokens in 1 call');
      expect(await page.locator('[data-testid="milestone-spent"]').textContent()).toBe('$0.50 · 11,400 tokens');
      // At the first worker's result the total is what was spent by then.
      const first = meta.spend[1]!.position;
      await page.goto(`${ui.url}?at=${first}`);
      await page.waitForFunction((p) => document.body.dataset.rendered === String(p), first);
      expect(await page.locator('[data-testid="graph-meta"]').textContent()).toMatch(/spend \$0\.25 · 6,900 tokens/);
    } finally {
      await browser.close();
      ui.child.kill('SIGINT');
    }
  }, 120_000);
});
