// The sandbox's cost per call: the same command run directly (process runner) and in the
// bubblewrap sandbox, alternating, N times each; prints the medians and the difference.
//   npm run build && node bench/sandbox.mjs [N=60]
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from '../dist/adapters/process/run-process.js';
import { ensureSandboxInit, findBwrap, runSandboxed } from '../dist/adapters/sandbox/sandbox.js';
import { homePaths, secretPaths } from '../dist/adapters/transparency/keys.js';

const n = Number(process.argv[2] ?? 60);
const bwrap = findBwrap();
if (!bwrap) {
  console.log('bubblewrap is not installed: nothing to measure (apt-get install bubblewrap)');
  process.exit(0);
}
const root = mkdtempSync(join(tmpdir(), 'lb-bench-sandbox-'));
const ws = join(root, 'ws');
mkdirSync(ws);
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const policy = (network) => ({ mode: 'bwrap', hide: [join(root, 'hidden')], network, initPath: ensureSandboxInit(join(root, 'sb')), bwrap });
// What every call hides since issue 44: the user's home (re-exposing the trusted PATH in it) and the keys.
const custody = () => ({ ...policy(false), home: homePaths(process.env), secret: secretPaths(process.env, undefined) });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const commands = { true: ['true'], 'node -e 0': [process.execPath, '-e', '0'] };
console.log(`${n} calls each, alternating; median wall ms per call`);
console.log('command      | direct | sandbox (net shared) | sandbox (no net) | added (no net) | no net + key custody (R-53)');
for (const [name, argv] of Object.entries(commands)) {
  const direct = [], shared = [], isolated = [], kept = [];
  for (let i = 0; i < n; i++) {
    let t = performance.now();
    await runProcess({ argv, cwd: ws, env, timeoutMs: 30_000 });
    direct.push(performance.now() - t);
    t = performance.now();
    await runSandboxed(policy(true), { argv, cwd: ws, env, timeoutMs: 30_000, rw: [ws] });
    shared.push(performance.now() - t);
    t = performance.now();
    await runSandboxed(policy(false), { argv, cwd: ws, env, timeoutMs: 30_000, rw: [ws] });
    isolated.push(performance.now() - t);
    t = performance.now();
    await runSandboxed(custody(), { argv, cwd: ws, env, timeoutMs: 30_000, rw: [ws] });
    kept.push(performance.now() - t);
  }
  const d = median(direct), s = median(shared), x = median(isolated);
  console.log(`${name.padEnd(12)} | ${d.toFixed(1).padStart(6)} | ${s.toFixed(1).padStart(20)} | ${x.toFixed(1).padStart(16)} | ${(x - d).toFixed(1).padStart(14)} | ${median(kept).toFixed(1).padStart(27)}`);
}
