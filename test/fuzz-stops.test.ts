/**
 * Issue 19 (decision 0019): fuzz cases start where the clean run stood. A case at a point copies
 * the build as a staged run (`run --max-steps`) left it at the latest stop before that point where
 * the clean run stood with nothing half done, counts the point's occurrence from there, and must
 * pass the clean run's points in order up to its own (else it runs again from the start).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enumeratePoints, followsClean, startFor, stoppedLikeClean } from '../src/commands/fuzz-compare.js';
import { HELIOS, runCli, tempDir } from './support/cli.js';

/** A points file of a run: `before-append:E`/`after-append:E` pairs and `before-effect:K`/`after-effect:K` pairs. */
const pointName = fc.constantFrom('before-append:A', 'after-append:A', 'before-append:B', 'after-append:B', 'before-effect:worker', 'after-effect:worker', 'after-keep:worker');

describe('where a fuzz case starts (pure)', () => {
  it('for all point sequences, stops and targets: the case starts at the latest stop at or before the target, and the occurrence it asks for, counted from there, is the target itself', () => {
    fc.assert(fc.property(fc.array(pointName, { minLength: 1, maxLength: 60 }), fc.array(fc.nat(60), { maxLength: 8 }), fc.nat(59), (lines, stops, pick) => {
      const points = enumeratePoints(lines);
      const target = points[pick % points.length]!;
      const s = startFor(points, stops, target);
      // Oracle: the child started after `at` points counts the point's occurrences from zero,
      // and is killed at the `occurrence`-th — which must be the clean run's `index`-th point.
      let seen = 0;
      let killedAt = -1;
      for (let i = s.at; i < lines.length; i++) {
        if (lines[i] === target.point && ++seen === s.occurrence) {
          killedAt = i;
          break;
        }
      }
      expect(killedAt).toBe(pick % points.length);
      expect(s.index).toBe(pick % points.length);
      const usable = stops.filter((x) => x <= s.index);
      expect(s.at).toBe(usable.length === 0 ? 0 : Math.max(...usable));
    }));
  });

  it('a point the clean run never reached starts from the start, with its occurrence as given', () => {
    const points = enumeratePoints(['before-append:A', 'after-append:A']);
    expect(startFor(points, [1, 2], { point: 'before-effect:worker', occurrence: 3 })).toEqual({ at: 0, occurrence: 3, index: -1 });
  });

  it('for all runs: a run started after the clean run\'s first `at` points follows it up to `index` exactly when its first points are the clean ones, in order', () => {
    fc.assert(fc.property(fc.array(pointName, { minLength: 1, maxLength: 40 }), fc.nat(39), fc.nat(39), fc.array(pointName, { maxLength: 5 }), fc.boolean(), (clean, a, b, tail, swap) => {
      const at = Math.min(a % clean.length, b % clean.length);
      const index = Math.max(a % clean.length, b % clean.length);
      const expected = clean.slice(at, index + 1);
      const run = [...expected, ...tail];
      // The same points, two of them swapped (when they differ), are not the clean run's order.
      const i = 0;
      const j = expected.length - 1;
      const swapped = swap && expected[i] !== expected[j];
      if (swapped) [run[i], run[j]] = [run[j]!, run[i]!];
      expect(followsClean(clean, at, index, run)).toBe(!swapped);
      expect(followsClean(clean, at, index, expected.slice(0, -1))).toBe(false); // stopped short of the point
    }));
  });

  it('a stop stands where the clean run stood only with the same points and nothing half done there', () => {
    // The clean run's group commit reports PlannerReturned's commit after the next step's first append.
    const clean = ['before-append:P', 'before-append:S', 'after-append:P', 'after-append:S', 'before-append:A', 'after-append:A', 'before-effect:worker', 'after-effect:worker'];
    const staged = ['before-append:P', 'before-append:S', 'after-append:P', 'after-append:S'];
    expect(stoppedLikeClean(clean, staged)).toBe(true);
    expect(stoppedLikeClean(clean, [...staged, 'before-append:A', 'after-append:A'])).toBe(true);
    // Reordered across the stop: the clean run had begun A before committing S.
    const held = ['before-append:P', 'after-append:P', 'before-append:S', 'before-append:A', 'after-append:S', 'after-append:A'];
    expect(stoppedLikeClean(held, ['before-append:P', 'after-append:P', 'before-append:S', 'after-append:S'])).toBe(false);
    // The same points in another order, but an effect still running in the clean run there.
    expect(stoppedLikeClean(['before-effect:worker', 'before-append:A', 'after-append:A'], ['before-append:A', 'after-append:A', 'before-effect:worker'])).toBe(false);
    expect(stoppedLikeClean(clean, [])).toBe(false);
    expect(stoppedLikeClean(staged, clean)).toBe(false);
  });

  it('for all interleavings: a stop is usable exactly when the two prefixes hold the same points and every append and effect begun in the clean prefix has ended (oracle: a stack walk)', () => {
    fc.assert(fc.property(fc.array(pointName, { minLength: 1, maxLength: 30 }), fc.nat(29), fc.array(fc.nat(29), { maxLength: 6 }), (clean, cut, swaps) => {
      const m = 1 + (cut % clean.length);
      const staged = clean.slice(0, m);
      for (const s of swaps) {
        const i = s % m;
        [staged[0], staged[i]] = [staged[i]!, staged[0]!];
      }
      // Oracle: count each open thing as it begins and ends, by name, walking the prefix once.
      const open: Record<string, number> = {};
      for (const p of clean.slice(0, m)) {
        const [phase, ...rest] = p.split(':');
        const what = `${phase!.split('-')[1]}:${rest.join(':')}`;
        if (phase === 'before-append' || phase === 'before-effect') open[what] = (open[what] ?? 0) + 1;
        if (phase === 'after-append' || phase === 'after-effect') open[what] = (open[what] ?? 0) - 1;
      }
      const balanced = Object.values(open).every((n) => n === 0);
      expect(stoppedLikeClean(clean, staged)).toBe(balanced);
      // Another point in place of one of the prefix's: not the clean run's points.
      const other = [...staged];
      other[m - 1] = other[m - 1] === 'after-keep:worker' ? 'before-append:A' : 'after-keep:worker';
      expect(stoppedLikeClean(clean, other)).toBe(false);
    }));
  });
});

function fuzzJson(args: string[]): { code: number | null; report: any; stderr: string } {
  const r = runCli(['fuzz', ...args, '--json'], { cwd: tempDir(), timeoutMs: 300_000 });
  return { code: r.code, report: r.stdout ? JSON.parse(r.stdout) : null, stderr: r.stderr };
}

describe('longbuild fuzz --start-from (real processes)', () => {
  it('R-19 helios cases started from stops find what cases run from the start find: the same results, the same calls in doubt, none off the clean run\'s path', () => {
    // Points after the first stops: a worker and a planner call in doubt, a compaction's append.
    const only = ['after-effect:worker:2', 'after-effect:planner:2', 'before-append:MilestoneCompacted:3'].flatMap((p) => ['--only', p]);
    const stops = fuzzJson(['--blueprint', HELIOS, ...only, '--start-from', 'stops', '--jobs', '2']);
    expect(stops.report?.failed ?? stops.stderr, stops.stderr).toEqual([]);
    expect(stops.code).toBe(0);
    expect(stops.report.starts).toEqual(expect.objectContaining({ mode: 'stops', fromStop: 3, fellBack: 0 }));
    expect(stops.report.starts.stops).toBeGreaterThanOrEqual(3);
    expect(stops.report.cases.every((c: any) => c.startedAt > 0)).toBe(true);
    const start = fuzzJson(['--blueprint', HELIOS, ...only, '--start-from', 'start', '--jobs', '2']);
    expect(start.report.starts).toEqual(expect.objectContaining({ mode: 'start', stops: 0, fromStop: 0 }));
    const outcome = (r: any) => r.cases.map((c: any) => ({ point: c.point, occurrence: c.occurrence, result: c.result, repeats: c.repeats, inDoubt: c.inDoubt })).sort((x: any, y: any) => x.point.localeCompare(y.point));
    expect(outcome(stops.report)).toEqual(outcome(start.report));
    // Calls in doubt at the crash are made once more, counted — the calls made before the stop count as made.
    expect(stops.report.inDoubtByPoint).toEqual({ 'after-effect:worker:2': 1, 'after-effect:planner:2': 1 });
    expect(stops.report.inDoubtByPoint).toEqual(start.report.inDoubtByPoint);
    expect(stops.report.duplicateCalls).toBe(0);
  }, 300_000);

  it('usage: --start-from takes auto, stops or start; stops cannot copy a PostgreSQL-logged build', () => {
    expect(runCli(['fuzz', '--blueprint', HELIOS, '--start-from', 'middle'], { cwd: tempDir() }).stderr).toMatch(/^longbuild: fuzz: --start-from takes auto, stops, start \(where each case starts\), got 'middle'/);
    expect(runCli(['fuzz', '--blueprint', HELIOS, '--start-from', 'stops', '--log', 'postgres:postgres://u:p@127.0.0.1:1/db'], { cwd: tempDir() }).code).toBe(2);
  });
});
