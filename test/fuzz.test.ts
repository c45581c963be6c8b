/**
 * Issue 7: `longbuild fuzz` — real SIGKILLs at interruption points, resume, compare with a clean
 * run. CI runs deterministic samples; the full sweeps are documented in the
 * README (`longbuild fuzz --blueprint test/fixtures/helios.json --points all --jobs 2`).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { auditCalls, choosePoints, enumeratePoints } from '../src/commands/fuzz-compare.js';
import { HELIOS, ROOT, runCli, tempDir } from './support/cli.js';

const ORBIT = join(ROOT, 'test', 'fixtures', 'orbit.json');

function fuzzJson(args: string[], env: Record<string, string> = {}): { code: number | null; report: any; stderr: string } {
  const r = runCli(['fuzz', ...args, '--json'], { cwd: tempDir(), env, timeoutMs: 300_000 });
  return { code: r.code, report: r.stdout ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

describe('longbuild fuzz (issue 7)', () => {
  it('R-19 helios (seed shape): a deterministic sample of 8 interruption points resumes exactly, with no duplicate call', () => {
    const { code, report, stderr } = fuzzJson(['--blueprint', HELIOS, '--points', '8', '--seed', '7', '--jobs', '2']);
    expect(report?.failed ?? stderr, stderr).toEqual([]);
    expect(code).toBe(0);
    expect(report.points).toBe(8);
    expect(report.passed).toBe(8);
    expect(report.enumerated).toBeGreaterThanOrEqual(70);
    expect(report.duplicateCalls).toBe(0);
    expect(report.seed).toBe(7);
  }, 300_000);

  it('R-18 R-19 in-doubt calls: a crash between a call and its recorded result re-invokes it once (counted), nothing else is made twice', () => {
    const { code, report } = fuzzJson(['--blueprint', HELIOS, '--only', 'after-effect:planner:1', '--only', 'after-keep:planner:1', '--only', 'before-append:HorizonSealed:1', '--only', 'after-effect:worker:1', '--only', 'after-keep:worker:1', '--only', 'before-append:AttemptFinished:1', '--only', 'after-effect:promote:1', '--jobs', '2']);
    expect(report.failed).toEqual([]);
    expect(code).toBe(0);
    // A crash after a call returned and before its answer was kept leaves it in doubt (re-invoked
    // once, counted). Once the answer or the worker's outcome is kept, the resumed run records it
    // without calling again; the host's commit on the attempt branch and the promotion are adopted.
    expect(report.inDoubtByPoint).toEqual({ 'after-effect:planner:1': 1, 'after-effect:worker:1': 1 });
    expect(report.duplicateCalls).toBe(0);
  }, 300_000);

  it('R-23 orbit (4 milestones, renewals, compaction, a revised attempt): a sample of 6 interruption points resumes exactly', () => {
    const { code, report, stderr } = fuzzJson(['--blueprint', ORBIT, '--points', '6', '--seed', '11', '--jobs', '2']);
    expect(report?.failed ?? stderr, stderr).toEqual([]);
    expect(code).toBe(0);
    expect(report.points).toBe(6);
    expect(report.enumerated).toBeGreaterThan(100);
  }, 300_000);

  it('R-18 a planted resume bug (skip in-doubt adoption) is reported, with the command that reproduces it', () => {
    const { code, report } = fuzzJson(
      ['--blueprint', HELIOS, '--only', 'after-effect:promote:1', '--only', 'before-append:AttemptFinished:1', '--only', 'after-append:CheckpointWritten:1', '--jobs', '2'],
      { LONGBUILD_FUZZ_PLANT_BUG: 'skip-adoption' },
    );
    expect(code).toBe(1);
    expect(report.points).toBe(3);
    expect(report.passed).toBe(1); // a crash after a checkpoint needs no adoption: the bug is invisible there
    const byPoint = Object.fromEntries(report.failed.map((f: any) => [`${f.point}:${f.occurrence}`, f]));
    // Promotion not adopted: the CAS fails on the build's own promotion, which is then taken for a
    // stray ref and "repaired" — a repair an untampered build never records.
    expect(byPoint['after-effect:promote:1'].divergences.map((d: any) => d.what)).toContain('ref repairs');
    expect(byPoint['after-effect:promote:1'].reproduce).toBe(`LONGBUILD_FUZZ_PLANT_BUG=skip-adoption longbuild fuzz --blueprint ${HELIOS} --only after-effect:promote:1`);
    // Worker commit not adopted: the worker is called again although its commit sat on the branch.
    expect(byPoint['before-append:AttemptFinished:1'].duplicates).toEqual([
      expect.objectContaining({ kind: 'worker', rule: 'R-18', problem: expect.stringContaining('observable') }),
    ]);
    expect(report.duplicateCalls).toBe(1);
  }, 300_000);

  it('usage: --points must be all or a positive integer, --only POINT:K, --blueprint required', () => {
    expect(runCli(['fuzz', '--blueprint', HELIOS, '--points', 'some'], { cwd: tempDir() }).code).toBe(2);
    expect(runCli(['fuzz', '--blueprint', HELIOS, '--only', 'after-effect:worker'], { cwd: tempDir() }).code).toBe(2);
    expect(runCli(['fuzz'], { cwd: tempDir() }).code).toBe(2);
  });
});

describe('fuzz comparison core (pure)', () => {
  it('enumerates occurrences per point and samples deterministically by seed, in run order', () => {
    const all = enumeratePoints(['a', 'b', 'a', '', 'c', 'a']);
    expect(all).toEqual([
      { point: 'a', occurrence: 1 }, { point: 'b', occurrence: 1 }, { point: 'a', occurrence: 2 }, { point: 'c', occurrence: 1 }, { point: 'a', occurrence: 3 },
    ]);
    expect(choosePoints(all, 3, 5)).toEqual(choosePoints(all, 3, 5));
    expect(choosePoints(all, 'all', 5)).toEqual(all);
    const pick = choosePoints(all, 3, 5);
    expect(pick).toHaveLength(3);
    expect(pick.map((p) => all.indexOf(p))).toEqual([...pick.map((p) => all.indexOf(p))].sort((x, y) => x - y));
  });

  it('R-19 a call made again after its result was recorded is a duplicate; an in-doubt one is counted once', () => {
    const clean = [{ kind: 'planner' as const, key: 'plan.seal.0' }, { kind: 'worker' as const, key: 'b:x.1' }];
    const crash = { recorded: new Set(['plan.seal.0']), observable: new Set<string>() };
    const dup = auditCalls(clean, [clean[0]!], [clean[0]!, clean[1]!], crash);
    expect(dup.duplicates).toEqual([expect.objectContaining({ key: 'plan.seal.0', rule: 'R-19' })]);
    const inDoubt = auditCalls(clean, [clean[0]!, clean[1]!], [clean[1]!], { recorded: new Set(['plan.seal.0']), observable: new Set() });
    expect(inDoubt.duplicates).toEqual([]);
    expect(inDoubt.inDoubtReinvocations).toEqual([{ kind: 'worker', key: 'b:x.1' }]);
    const observable = auditCalls(clean, [clean[0]!, clean[1]!], [clean[1]!], { recorded: new Set(['plan.seal.0']), observable: new Set(['b:x.1']) });
    expect(observable.duplicates).toEqual([expect.objectContaining({ key: 'b:x.1', rule: 'R-18' })]);
    expect(auditCalls(clean, [clean[0]!], [], crash).missing).toEqual(['b:x.1']);
  });
});
