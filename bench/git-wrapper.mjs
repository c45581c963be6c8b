// simple-git against longbuild's own git wrapper (issue 15: why git runs through src/adapters/git/exec.ts).
// Run: npm run build && node bench/git-wrapper.mjs [N]
// Prints per-call wall time for N `rev-parse HEAD` calls through each, with the same controlled
// environment, and which of longbuild's requirements simple-git refuses or cannot express.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit } from 'simple-git';
import { git, gitEnv } from '../dist/adapters/git/exec.js';

const N = Number(process.argv[2] ?? 300);
const repo = mkdtempSync(join(tmpdir(), 'lb-bench-git-'));
await git(repo, ['init', '-q', '.']);
await git(repo, ['commit', '-q', '--allow-empty', '-m', 'x'], { date: '2026-01-01T00:00:00Z' });

/** Does simple-git run `rev-parse HEAD` with this config and environment (its default guards on)? */
async function refusal(config, env) {
  try {
    await simpleGit({ baseDir: repo, config }).env(env).raw(['rev-parse', 'HEAD']);
    return 'accepted';
  } catch (err) {
    return `refused: ${String(err.message).split('\n')[0]}`;
  }
}
const env = gitEnv();
const minimalEnv = { PATH: env.PATH, HOME: env.HOME };
console.log('what every longbuild git call needs, and simple-git (default guards):');
console.log(`  -c core.hooksPath=/dev/null (no repository hook runs)   ${await refusal(['core.hooksPath=/dev/null'], minimalEnv)}`);
console.log(`  GIT_CONFIG_GLOBAL=/dev/null (no user config)            ${await refusal([], { ...minimalEnv, GIT_CONFIG_GLOBAL: '/dev/null' })}`);
console.log(`  -c protocol.allow=never (no remote transport)           ${await refusal(['protocol.allow=never'], minimalEnv)}`);
console.log('  stdin (update-ref --stdin transactions)                 no API: raw() takes no input');
console.log('  the process registry (Ctrl-C and lease loss kill trees)  no: simple-git spawns its own children');

const sg = simpleGit({
  baseDir: repo, config: ['core.hooksPath=/dev/null', 'gc.auto=0'],
  unsafe: { allowUnsafeHooksPath: true, allowUnsafeConfigPaths: true, allowUnsafeProtocolOverride: true },
}).env(env);

async function time(label, fn) {
  for (let i = 0; i < 20; i++) await fn(); // warm up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / N;
  console.log(`${label.padEnd(40)} ${ms.toFixed(3)} ms/call`);
  return ms;
}
// Interleaved, twice each: the machine is shared.
const a1 = await time('longbuild git() rev-parse HEAD', () => git(repo, ['rev-parse', 'HEAD']));
const b1 = await time('simple-git raw() rev-parse HEAD (guards off)', () => sg.raw(['rev-parse', 'HEAD']));
const a2 = await time('longbuild git() rev-parse HEAD', () => git(repo, ['rev-parse', 'HEAD']));
const b2 = await time('simple-git raw() rev-parse HEAD (guards off)', () => sg.raw(['rev-parse', 'HEAD']));
console.log(`ratio simple-git / longbuild: ${((b1 + b2) / (a1 + a2)).toFixed(2)}`);
