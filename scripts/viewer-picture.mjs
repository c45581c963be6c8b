#!/usr/bin/env node
// Draws docs/images/viewer.png, the README's picture of `longbuild ui`: the demo build at a point
// where work is in flight, in Debian's chromium (playwright-core). Run after `npm run build`:
//   node scripts/viewer-picture.mjs [POSITION]
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin', 'longbuild.js');
const executablePath = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
if (!executablePath) { console.error('viewer-picture: chromium is missing (apt-get install -y chromium)'); process.exit(1); }
const demo = join(mkdtempSync(join(tmpdir(), 'longbuild-picture-')), 'textkit');
execFileSync(process.execPath, [bin, 'demo', demo, '--json'], { stdio: ['ignore', 'ignore', 'inherit'] });
const ui = spawn(process.execPath, [bin, 'ui', '--port', '0', '--json'], { cwd: demo, stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve) => {
  let out = '';
  ui.stdout.on('data', (b) => { out += b; if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]).url); });
});
const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  const at = process.argv[2] ?? '18';
  await page.goto(`${url}?at=${at}`);
  await page.waitForSelector(`body[data-rendered="${at}"]`);
  await page.waitForFunction(() => /chain verified up to/.test(document.querySelector('[data-testid=badge]')?.textContent ?? ''), null, { timeout: 60_000 });
  mkdirSync(join(root, 'docs', 'images'), { recursive: true });
  writeFileSync(join(root, 'docs', 'images', 'viewer.png'), await page.screenshot());
  console.log(`docs/images/viewer.png: the demo build at position ${at}`);
} finally {
  await browser.close();
  ui.kill('SIGINT');
}
