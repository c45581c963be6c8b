#!/usr/bin/env node
/**
 * Which deliberate bugs do the properties catch? (issue 15) For each mutant in catalogue.mjs:
 * copy the code, apply the bug (to src and the built dist), run the tests that claim to catch it,
 * report caught or MISSED. An unmutated copy runs first: the same tests must pass there.
 *
 *   npm run build && node test/mutants/run.mjs [--json] [NAME ...]
 *
 * Exit 0 when every mutant is caught and the control passes, 1 otherwise.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { MUTANTS, mutatedCopy } from './catalogue.mjs';

const args = process.argv.slice(2);
const json = args.includes('--json');
const names = args.filter((a) => !a.startsWith('--'));
const chosen = names.length > 0 ? MUTANTS.filter((m) => names.includes(m.name)) : MUTANTS;
if (chosen.length < names.length) {
  console.error(`longbuild mutants: unknown mutant among ${names.join(', ')} (known: ${MUTANTS.map((m) => m.name).join(', ')})`);
  process.exit(2);
}

/** Run test files in a copy; returns whether they passed and how long they took. */
function runTests(dir, files) {
  const started = Date.now();
  const r = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...files], { cwd: dir, encoding: 'utf8', env: { ...process.env, CI: 'true' }, maxBuffer: 64 << 20 });
  const failed = (r.stdout + r.stderr).split('\n').filter((l) => /×|FAIL/.test(l)).map((l) => l.replace(/\x1b\[[0-9;]*m/g, '').trim()).slice(0, 3);
  return { passed: r.status === 0, seconds: Math.round((Date.now() - started) / 100) / 10, failed };
}

const files = [...new Set(chosen.flatMap((m) => m.caughtBy))];
const log = (line) => { if (!json) console.log(line); };
log(`control: the unmutated code must pass ${files.join(', ')}`);
const controlDir = mutatedCopy(null);
const control = runTests(controlDir, files);
rmSync(controlDir, { recursive: true, force: true });
log(`  ${control.passed ? 'passed' : 'FAILED'} (${control.seconds} s)`);

const results = [];
for (const m of chosen) {
  const dir = mutatedCopy(m);
  const byFile = m.caughtBy.map((f) => ({ file: f, ...runTests(dir, [f]) }));
  rmSync(dir, { recursive: true, force: true });
  const caught = byFile.every((r) => !r.passed);
  results.push({ mutant: m.name, bug: m.bug, caught, tests: byFile.map(({ file, passed, seconds, failed }) => ({ file, caught: !passed, seconds, failed })) });
  log(`${caught ? 'caught ' : 'MISSED '} ${m.name}: ${m.bug}`);
  for (const r of byFile) log(`  ${r.passed ? 'passed (missed)' : 'failed (caught)'} ${r.file} (${r.seconds} s)${r.failed[0] ? `: ${r.failed[0]}` : ''}`);
}
const ok = control.passed && results.every((r) => r.caught);
if (json) console.log(JSON.stringify({ control: control.passed, mutants: results, ok }, null, 2));
else log(`${results.filter((r) => r.caught).length}/${results.length} mutants caught${control.passed ? '' : '; the control FAILED'}`);
process.exit(ok ? 0 : 1);
