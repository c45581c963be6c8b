/**
 * Signed checkpoints a run missed (issue 45, R-35): the build's checkpoints/ directory made
 * read-only (a real read-only tmpfs mounted over it, as root) while a build runs. The run stops on
 * one line naming the file; once the directory is writable again, the next run signs what was
 * missed before anything else, so every promotion is covered by a signature made before the next
 * one, and `verify` passes.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HELIOS, runCli, tempDir } from './support/cli.js';
import { events } from './support/outcomes.js';
import { signedHeadPath } from '../src/adapters/transparency/keys.js';

const mounted: string[] = [];
afterAll(() => {
  for (const m of mounted) spawnSync('umount', ['-l', m]);
});
const canMount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,ro', 'tmpfs', tempDir()]).status === 0;
if (!canMount && process.env.CI) throw new Error('missed-checkpoints.test.ts needs to mount a tmpfs (run as root, as CI does)');

const SIGNED_AFTER = new Set(['IntegrationPromoted', 'CheckpointWritten', 'BuildCompleted', 'BuildBlocked']);

describe.runIf(canMount || process.env.CI)('signed checkpoints an unwritable checkpoints/ made a run miss (issue 45)', () => {
  it('R-35 the run stops naming the file; the next run signs every missed one first; each promotion is signed before the next', () => {
    const repo = tempDir();
    expect(runCli(['init', '--blueprint', HELIOS], { cwd: repo }).code).toBe(0);
    expect(runCli(['run', '--max-steps', '3'], { cwd: repo }).code).toBe(0);
    const dir = join(repo, '.longbuild', 'checkpoints');
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,ro', 'tmpfs', dir]).status).toBe(0);
    mounted.push(dir);
    const stopped = runCli(['run'], { cwd: repo });
    expect(stopped.code).toBe(1);
    expect(stopped.stderr.trim().split('\n')).toHaveLength(1);
    expect(stopped.stderr).toMatch(/checkpoints\/\d+\.checkpoint.*(read-only|EROFS)/);
    expect(spawnSync('umount', [dir]).status).toBe(0);
    mounted.pop();
    const resumed = runCli(['run'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/signed \d+ checkpoints? an earlier run missed \(at sizes? [\d, ]+\)/);
    // Every event R-35 signs after is covered by a checkpoint made before the next such event.
    const sizes = readdirSync(dir).map((f) => /^(\d+)\.checkpoint$/.exec(f)).filter((m) => m !== null).map((m) => Number(m![1]));
    const log = events(repo);
    const signed = log.map((e, i) => ({ type: e.type, position: i + 1 })).filter((e) => SIGNED_AFTER.has(e.type));
    for (const [i, e] of signed.entries()) {
      const next = signed[i + 1]?.position ?? log.length + 1;
      expect(sizes.some((s) => s >= e.position && s < next), `${e.type} at ${e.position}`).toBe(true);
    }
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });
});

/** The latest checkpoint file of a build, and its signature line damaged (one character changed). */
function damageLatest(repo: string): string {
  const dir = join(repo, '.longbuild', 'checkpoints');
  const last = readdirSync(dir).filter((f) => /^\d+\.checkpoint$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b)).at(-1)!;
  const file = join(dir, last);
  const text = readFileSync(file, 'utf8');
  const at = text.lastIndexOf(' ') + 10; // inside the signature's base64
  writeFileSync(file, text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1));
  return file;
}

describe('a damaged latest checkpoint file (issue 45)', () => {
  it('R-35 restored from this machine\'s copy of the last signature; without the copy, the refusal names the way out, which works', () => {
    const repo = tempDir();
    expect(runCli(['init', '--blueprint', HELIOS], { cwd: repo }).code).toBe(0);
    expect(runCli(['run', '--max-steps', '4'], { cwd: repo }).code).toBe(0);
    const file = damageLatest(repo);
    const good = runCli(['verify'], { cwd: repo });
    expect(good.code).toBe(1);
    const restored = runCli(['run', '--max-steps', '1'], { cwd: repo });
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stderr).toContain(`${file} did not verify (damaged): written again from this machine's copy of the last signature`);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    // Without the copy (another machine): one line naming the file and what to do; doing it works.
    const damaged = damageLatest(repo);
    const head = signedHeadPath(process.env, join(repo, '.longbuild'));
    renameSync(head, `${head}.elsewhere`);
    const refused = runCli(['run'], { cwd: repo });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(`move it aside (mv ${damaged} ${damaged}.damaged) and run again`);
    renameSync(damaged, `${damaged}.damaged`);
    const resumed = runCli(['run'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });
});
