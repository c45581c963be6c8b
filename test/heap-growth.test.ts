/**
 * A long `run` keeps V8's young generation at the size it started with (issue 50 item 2,
 * decision 0057): V8 grows each semi-space from 1 to 16 MB when much of it survives a scavenge,
 * which a controller's steps do, and the old generation's limit grows with it. Measured by the
 * process itself (a `--require` probe reads `v8.getHeapSpaceStatistics()` at exit) on two real
 * runs: the young generation of a 400-node build is that of a 10-node one. Without the flag the
 * 400-node build's is two to four times as large (16 or 32 MB against 8), so this test fails.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { chainBuild } from './support/random-blueprint.js';

/** The young generation's size (bytes) when a whole `run` of an `n`-node build exits. */
function youngGenerationAtExit(n: number): number {
  const { repo } = chainBuild(n, 'heap growth');
  const probe = join(repo, '..', `${repo.split('/').pop()}-probe.cjs`);
  const out = `${probe}.out`;
  writeFileSync(probe, `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, String(require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size)));\n`);
  const run = runCli(['run', '--json'], { cwd: repo, env: { NODE_OPTIONS: `--require ${probe}` } });
  expect(run.code, run.stderr).toBe(0);
  return Number(readFileSync(out, 'utf8'));
}

describe('a long run keeps its young generation at its starting size (decision 0057)', () => {
  it('the young generation of a 400-node run is that of a 10-node run', () => {
    const short = youngGenerationAtExit(10);
    const long = youngGenerationAtExit(400);
    expect(short).toBeGreaterThan(0);
    expect(long, `young generation ${long} B at the end of a 400-node run, ${short} B at the end of a 10-node run`).toBe(short);
  });
});
