/**
 * Where fuzz cases start (decision 0019): a copy of the build `init` made once per campaign, or
 * of the build stopped where the clean run stood — found by running it once more in stages.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEndPoint, startFor, stoppedLikeClean, type LedgerCall, type PointOccurrence } from '../../commands/fuzz-compare.js';
import { childEnv, longbuild, pointLines } from './child.js';
import { readLedgerCalls } from './observe.js';
import { copyBuild } from './copy-build.js';

/** What the stops are judged against: the clean run's points (lines and occurrences), steps and calls. */
export interface CleanPath {
  readonly points: readonly PointOccurrence[];
  readonly lines: readonly string[];
  readonly steps: number;
  readonly ledger: readonly LedgerCall[];
}


/**
 * Whether a file of the build at `dir` names `path` (a worktree's gitdir, a path in a database):
 * a copy of such a build would reach back into the original. Git's FETCH_HEAD, which only records
 * where a fetch came from, is not counted.
 */
export function namesPath(dir: string, path: string): boolean {
  const needle = Buffer.from(path);
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || e.name === 'FETCH_HEAD') continue;
    if (readFileSync(join(e.path, e.name)).includes(needle)) return true;
  }
  return false;
}

/**
 * Where cases start (decision 0019): a copy of the initialised build (`init` runs once per
 * campaign, not once per case), or of the build stopped where the clean run stood.
 */
export interface Starts {
  /** The initialised build (null: every case runs `init`, e.g. each PostgreSQL log has its schema). */
  readonly template: string | null;
  /** Stopped builds, by how many of the clean run's points came before them, with the calls made by then. */
  readonly stops: readonly Stop[];
}

export interface Stop {
  readonly at: number;
  readonly repo: string;
  readonly calls: number;
}

export const NO_STARTS: Starts = { template: null, stops: [] };

/** Where one case starts: the build to copy (null: `init`), after how many clean points, the point's occurrence from there. */
export interface CaseStart {
  readonly source: string | null;
  readonly at: number;
  readonly occurrence: number;
  readonly index: number;
  readonly calls: number;
}

export function caseStart(clean: CleanPath, starts: Starts, c: { readonly fault: string; readonly point?: string; readonly occurrence?: number }, useStops = true): CaseStart {
  const fromStart: CaseStart = { source: starts.template, at: 0, occurrence: c.occurrence ?? 1, index: -1, calls: 0 };
  if (!useStops || c.point === undefined || c.fault === 'random-kill' || starts.stops.length === 0) return fromStart;
  const s = startFor(clean.points, starts.stops.map((x) => x.at), { point: c.point, occurrence: c.occurrence! });
  const stop = starts.stops.find((x) => x.at === s.at);
  return stop === undefined ? fromStart : { source: stop.repo, at: s.at, occurrence: s.occurrence, index: s.index, calls: stop.calls };
}

/** Most stages the staged run stops the build in (each is one more process start). */
const MAX_STAGES = 24;
/** 'auto' starts cases from stops when there are at least this many point cases per job. */
export const AUTO_STOPS_CASES = 12;

const sameCalls = (a: readonly LedgerCall[], b: readonly LedgerCall[]): boolean => a.length === b.length && a.every((x, i) => x.kind === b[i]!.kind && x.key === b[i]!.key);

/**
 * Run the build once more in stages (`run --max-steps`), and keep a copy of it at every stop
 * where it stands as the clean run stood after as many points (stoppedLikeClean) with the same
 * calls made: a case whose point comes later starts there instead of from the beginning. Each
 * stop is added to `stops` as soon as it is copied (the cases run meanwhile, earliest points
 * first, and take the latest stop there is when they start).
 */
export async function stagedStops(env: Readonly<Record<string, string | undefined>>, clean: CleanPath, template: string, base: string, stops: Stop[], launch?: readonly string[]): Promise<void> {
  const dir = join(base, 'staged');
  const repo = copyBuild(template, join(dir, 'repo'));
  const stride = Math.max(1, Math.ceil(clean.steps / MAX_STAGES));
  const passed: string[] = [];
  const calls: LedgerCall[] = [];
  for (let stage = 0; stage <= MAX_STAGES + 1 && passed.length < clean.lines.length; stage++) {
    const pointsFile = join(dir, `points-${stage}.txt`);
    const ledgerFile = join(dir, `ledger-${stage}.ndjson`);
    const r = await longbuild(['run', '--json', '--max-steps', String(stride)], repo, childEnv(env, { LONGBUILD_POINTS_FILE: pointsFile, LONGBUILD_EFFECTS_LEDGER: ledgerFile }), launch === undefined ? {} : { launch });
    // A stopped run records what it integrated as it ends; the clean run, once, at its end.
    const lines = pointLines(pointsFile).filter((l) => !runEndPoint(l));
    if (r.signal !== null || (r.code !== 0 && r.code !== 1) || lines.length === 0) break;
    passed.push(...lines);
    calls.push(...readLedgerCalls(ledgerFile));
    if (passed.length >= clean.lines.length || !stoppedLikeClean(clean.lines, passed) || !sameCalls(clean.ledger.slice(0, calls.length), calls)) continue;
    const stop = copyBuild(repo, join(base, 'stops', String(passed.length)));
    if (!namesPath(stop, repo)) stops.push({ at: passed.length, repo: stop, calls: calls.length });
  }
}
