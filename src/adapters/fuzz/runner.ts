/**
 * `longbuild fuzz` (issues 7 and 17; R-18, R-19, R-23): a clean run of a build enumerates the
 * interruption points it passes; for each chosen (fault, point, occurrence) a child controller in
 * a fresh repository meets that fault there — a real SIGKILL, a failing write (ENOSPC, EIO), a hang
 * ended by a SIGKILL of its process group, or a second controller racing for the lease — a fresh
 * child resumes the build to the end (with `--double`, that resume is killed too, at a point it
 * passes), and the result is compared with the clean run. `--random-kill N` kills at random
 * instants instead of named points. The scripted planner and worker write every invocation to an
 * effects ledger outside the build, and every child records the points it reaches, so duplicate
 * calls and repeated effects of every kind are counted independently of the log.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  auditSegments, choosePoints, compareBuilds, effectStarts, enumeratePoints, flightCombination, followsClean, seeded,
  type CallProblem, type Divergence, type LedgerCall, type ObservedBuild, type PointOccurrence,
} from '../../commands/fuzz-compare.js';
import { observeBuild, observeCrash, readLedgerCalls } from './observe.js';
import { childEnv, describeChild, longbuild, pointLines, readLines, removeBuilds, type ChildResult } from './child.js';
import { AUTO_STOPS_CASES, caseStart, namesPath, NO_STARTS, stagedStops, type CaseStart, type Starts, type Stop } from './stops.js';
import { copyBuild } from './copy-build.js';
import { AUTO_SNAPSHOT_CASES, buildCliSnapshot, type SnapshotMode } from './cli-snapshot.js';
import { OutageProxy } from './outage-proxy.js';
import { postgresTarget } from '../log/open-log.js';
import { redactedUrl } from '../log/pg-connection.js';

export { LONGBUILD_BIN } from './child.js';

/** What a fuzzed build is made from: a blueprint, or a request and a config (command-driven). */
export type FuzzDriver =
  | { readonly blueprint: string }
  | { readonly request: string; readonly config: string };

/** Fault kinds `--faults` takes (issue 17). */
export const FUZZ_FAULTS = ['kill', 'enospc', 'eio', 'hang', 'lease-race', 'db-down'] as const;
export type FuzzFault = (typeof FUZZ_FAULTS)[number];

export interface FuzzOptions {
  readonly driver: FuzzDriver;
  readonly points: number | 'all';
  readonly seed: number;
  readonly jobs: number;
  /** Fault kinds injected at every chosen point (default: kill). */
  readonly faults?: readonly FuzzFault[];
  /** Also kill the resume of each kill case at this many points it passes ('all': every one). */
  readonly double?: number | 'all';
  /** Kill this many builds at random instants (process group SIGKILL) instead of at named points. */
  readonly randomKills?: number;
  /** The instant of every random kill, instead of a random one (reproduces one). */
  readonly killAtMs?: number;
  /** With `double`: kill the resume exactly at these points (reproduces one). */
  readonly onlySecond?: readonly PointOccurrence[];
  /**
   * On a failure of a blueprint build, look for the smallest blueprint (fewest milestones, then
   * nodes) and the earliest occurrence that still fail the same way, trying at most this many
   * candidates (0: do not minimise). Written to `minimalDir`.
   */
  readonly minimiseTrials?: number;
  readonly minimalDir?: string;
  /** Keep every fuzzed build's log in PostgreSQL (`postgres:URL`), one schema per build, reached through an outage proxy (db-down). */
  readonly log?: string;
  /** Internal: the PostgreSQL backend of a `log` run. */
  readonly backend?: PgBackend;
  /** Run exactly these occurrences (reproduce a failure) instead of sampling. */
  readonly only?: readonly PointOccurrence[];
  /** Environment for every child (PATH etc.); fault variables are set by the runner. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Keep the temporary repositories of failed cases (their paths are in the report). */
  readonly keepFailed?: boolean;
  /**
   * Where a case at a point starts (decision 0019): 'stops' — from the latest place before its
   * point where the clean run, stopped by `run --max-steps`, stood with nothing half done (found by
   * running the build once more in stages); 'start' — from the initialised build; 'auto'
   * (default) — stops when there are enough cases to repay the staged run.
   */
  readonly startFrom?: StartFrom;
  /**
   * Start the cases' runs from a V8 start-up snapshot of the CLI built for this campaign
   * (decision 0028): 'auto' (default) when there are at least AUTO_SNAPSHOT_CASES cases.
   */
  readonly snapshot?: SnapshotMode;
  /** Internal: the bundle the snapshot is built from (tests give one that cannot be built). */
  readonly snapshotSource?: string;
  /** Internal: the Node.js arguments that start the cases' runs (the campaign sets them). */
  readonly launch?: readonly string[];
  readonly onProgress?: (p: FuzzProgress) => void;
}

export const START_FROM = ['auto', 'stops', 'start'] as const;
export type StartFrom = (typeof START_FROM)[number];

/** Builds on PostgreSQL: a schema each, through a proxy that can take the database away. */
interface PgBackend {
  readonly proxy: OutageProxy;
  readonly url: string;
  /** A fresh `postgres:` spec through the proxy (its schema is dropped at the end). */
  next(): string;
  readonly schemas: string[];
}

export interface FuzzProgress {
  readonly done: number;
  readonly total: number;
  readonly failed: number;
  readonly last: string;
}

/** One case: a fault at a point (and for --double, a kill of the resume at a second point), or a kill after a delay. */
export interface FuzzCase {
  readonly fault: FuzzFault | 'random-kill';
  readonly point?: string;
  readonly occurrence?: number;
  readonly second?: PointOccurrence;
  readonly delayMs?: number;
}

/** The smallest reproduction minimisation found for a failure. */
export interface MinimalFailure {
  readonly blueprint: string;
  readonly milestones: number;
  readonly nodes: number;
  readonly point?: string;
  readonly occurrence?: number;
  readonly trials: number;
  readonly reproduce: string;
}

export interface FuzzFailure extends FuzzCase {
  readonly minimal?: MinimalFailure;
  /** The first problem, in one line. */
  readonly divergence: string;
  readonly divergences: readonly Divergence[];
  readonly duplicates: readonly CallProblem[];
  readonly reproduce: string;
  readonly keptAt?: string;
}

export type EffectCounts = Record<'planner' | 'worker' | 'verify' | 'promote', number>;

/** One covered case, as `--report FILE` lists it. */
export interface CaseReport extends FuzzCase {
  readonly result: 'passed' | 'failed' | 'not-interrupted';
  readonly divergence?: string;
  /** Effects started by the interrupted and resumed runs together, beyond the clean run's (repeats), by kind. */
  readonly repeats: EffectCounts;
  readonly inDoubt: number;
  readonly durationMs: number;
  /** The calls in flight where the fault struck (several workers, issue 16); absent: none. */
  readonly inFlight?: readonly string[];
  /** The case started where the clean run stood after this many of its points (absent: from the start). */
  readonly startedAt?: number;
  /** Started from a stop, the run left the clean run's path before its point: run again from the start. */
  readonly fellBack?: true;
  /** A failure found by the case started from this stop, and confirmed by a run from the start (whose findings are reported). */
  readonly foundFromStop?: number;
}

export interface FuzzReport {
  readonly blueprint?: string;
  readonly request?: string;
  readonly config?: string;
  /** Occurrences enumerated by the clean run. */
  readonly enumerated: number;
  /** Cases run (fault × point, second points, random kills). */
  readonly points: number;
  readonly passed: number;
  readonly failed: FuzzFailure[];
  readonly duplicateCalls: number;
  readonly inDoubtReinvocations: number;
  readonly inDoubtByPoint: Record<string, number>;
  /**
   * With several calls in flight (issue 16): the distinct sets of calls in flight the clean run
   * passed through (two or more at once, and one), and how many the struck cases covered.
   */
  readonly inFlight?: { readonly combinations: number; readonly covered: number; readonly kinds: readonly string[] };
  /** Effects started again across all cases, by kind (in-doubt re-invocations and idempotent re-verification included). */
  readonly repeatedEffects: EffectCounts;
  readonly faults: readonly string[];
  /** Cases whose fault never struck (a random kill after the build ended): not counted as passed or failed. */
  readonly notInterrupted: number;
  readonly cases: readonly CaseReport[];
  readonly seed: number;
  readonly jobs: number;
  readonly durationMs: number;
  readonly clean: { readonly events: number; readonly outcome: string; readonly durationMs: number; readonly plannerCalls: number; readonly workerCalls: number; readonly effects: EffectCounts };
  /**
   * Where the cases started (decision 0019): the stops found by the staged run (and what it
   * cost), how many cases started from one, how many of those fell back to the start, and the
   * clean run's points the cases did not run again.
   */
  readonly starts: { readonly mode: StartFrom; readonly stops: number; readonly stagedMs: number; readonly fromStop: number; readonly fellBack: number; readonly pointsSkipped: number };
  /**
   * Whether the cases' runs (and the staged run) started from a start-up snapshot of the CLI
   * (decision 0028; the clean run never does), what building it took, or why it was not used.
   */
  readonly snapshot: { readonly mode: SnapshotMode; readonly used: boolean; readonly buildMs?: number; readonly reason?: string };
}

const driverArgs = (d: FuzzDriver): string[] => ('blueprint' in d ? ['--blueprint', d.blueprint] : ['--request', d.request, '--config', d.config]);

/** The exact command that reproduces one case (its runs started from a start-up snapshot too, when the case's did). */
export function reproduceCommand(driver: FuzzDriver, c: FuzzCase, log?: string, fromStop = false, fromSnapshot = false): string {
  // The password of a --log URL is not printed: the command shows *** in its place.
  const logArg = log === undefined ? '' : ` --log 'postgres:${redactedUrl(log.replace(/^postgres(ql)?:/, ''))}'`;
  const base = `longbuild fuzz ${driverArgs(driver).join(' ')}${logArg}`;
  const snapshot = fromSnapshot ? ' --snapshot on' : '';
  if (c.fault === 'random-kill') return `${base} --random-kill 1 --kill-at-ms ${c.delayMs}${snapshot}`;
  const faults = c.fault === 'kill' ? '' : ` --faults ${c.fault}`;
  const second = c.second ? ` --double --only-second ${c.second.point}:${c.second.occurrence}` : '';
  return `${base}${faults} --only ${c.point}:${c.occurrence}${second}${fromStop ? ' --start-from stops' : ''}${snapshot}`;
}

interface CleanRun {
  readonly observed: ObservedBuild;
  readonly ledger: ReturnType<typeof readLedgerCalls>;
  readonly points: (PointOccurrence & { readonly inFlight: readonly string[] })[];
  /** The points file's lines, in order (the points and the calls in flight at each). */
  readonly lines: readonly string[];
  readonly steps: number;
  readonly effects: EffectCounts;
  readonly code: number | null;
  readonly events: number;
  readonly durationMs: number;
  readonly runMs: number;
}

async function initRepo(root: string, driver: FuzzDriver, env: Readonly<Record<string, string | undefined>>, backend?: PgBackend): Promise<string> {
  mkdirSync(root, { recursive: true });
  const repo = join(root, 'repo');
  const init = await longbuild(['init', ...driverArgs(driver), '--repo', repo, ...(backend ? ['--log', backend.next()] : [])], root, childEnv(env, {}));
  if (init.code !== 0) throw new Error(`longbuild init ${driverArgs(driver).join(' ')} failed (${describeChild(init)})`);
  return repo;
}

async function cleanRun(driver: FuzzDriver, env: Readonly<Record<string, string | undefined>>, backend?: PgBackend, template?: string | null): Promise<CleanRun> {
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-clean-'));
  try {
    const repo = template ? copyBuild(template, join(root, 'repo')) : await initRepo(root, driver, env, backend);
    const pointsFile = join(root, 'points.txt');
    const ledgerFile = join(root, 'ledger.ndjson');
    const t1 = performance.now();
    const run = await longbuild(['run', '--json'], repo, childEnv(env, { LONGBUILD_POINTS_FILE: pointsFile, LONGBUILD_EFFECTS_LEDGER: ledgerFile }));
    const runMs = performance.now() - t1;
    if (run.signal !== null || (run.code !== 0 && run.code !== 1)) throw new Error(`the clean run failed (${describeChild(run)})`);
    const observed = await observeBuild(repo);
    if (!observed.verifyOk) throw new Error(`the clean run does not verify: ${observed.verifyProblem ?? ''}`);
    const lines = pointLines(pointsFile);
    const { position: events, steps } = JSON.parse(run.stdout) as { position: number; steps: number };
    return { observed, ledger: readLedgerCalls(ledgerFile), points: enumeratePoints(lines), lines, steps, effects: effectStarts(lines), code: run.code, events, durationMs: performance.now() - t0, runMs };
  } finally {
    removeBuilds(root, env);
  }
}

interface CaseResult {
  readonly c: FuzzCase;
  readonly divergences: Divergence[];
  readonly duplicates: CallProblem[];
  readonly inDoubt: number;
  readonly repeats: EffectCounts;
  readonly notInterrupted: boolean;
  /** The points the (first) resume passed: where --double kills it. */
  readonly resumePoints: PointOccurrence[];
  readonly durationMs: number;
  readonly keptAt?: string;
  /** The calls in flight where the fault struck (the last point the interrupted run reached). */
  readonly inFlight?: readonly string[];
  /** Started where the clean run stood after this many points (0: from the start). */
  readonly startedAt: number;
  /** Started from a stop, it left the clean run's path, and was run again from the start. */
  readonly fellBack: boolean;
  /** A failure first found from the stop after this many points, confirmed from the start. */
  readonly foundFromStop?: number;
}

/** What one run of a case found; `offTrack`: started from a stop, the interrupted run left the clean run's path before its point. */
type CaseRun = Omit<CaseResult, 'c' | 'durationMs' | 'startedAt' | 'fellBack' | 'foundFromStop'> & { readonly offTrack?: true };

const noRepeats = (): EffectCounts => ({ planner: 0, worker: 0, verify: 0, promote: 0 });

const failedRun = (r: CaseRun): boolean => r.divergences.length > 0 || r.duplicates.length > 0;

async function runCase(opts: FuzzOptions, clean: CleanRun, c: FuzzCase, starts: Starts): Promise<CaseResult> {
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-case-'));
  // Each run of the case has a directory of its own: this machine keeps the last checkpoint it
  // signed for a build directory (R-36), and a second build in the same place would be refused.
  let runs = 0;
  const attempt = async (start: CaseStart): Promise<CaseRun & { readonly dir: string }> => {
    const dir = join(root, `run-${++runs}`);
    try {
      return { ...await faultAndResume(opts, clean, c, dir, start), dir };
    } catch (err) {
      return { divergences: [{ what: 'fuzz case crashed', rule: '-', clean: '-', resumed: err instanceof Error ? err.message : String(err) }], duplicates: [], inDoubt: 0, repeats: noRepeats(), notInterrupted: false, resumePoints: [], dir };
    }
  };
  const start = caseStart(clean, starts, c, opts.startFrom !== 'start');
  let r = await attempt(start);
  let startedAt = start.at;
  let fellBack = false;
  let foundFromStop: number | undefined;
  // Off the clean run's path from a stop: the case is run from the start. A failure found from a
  // stop is confirmed from the start, so that the command reported reproduces it; a failure only
  // a start from a stop shows is reported as found (its command asks for stops).
  if (start.at > 0 && (r.offTrack === true || failedRun(r))) {
    const again = await attempt(caseStart(clean, starts, c, false));
    if (r.offTrack === true || failedRun(again)) {
      fellBack = r.offTrack === true;
      if (!fellBack) foundFromStop = start.at;
      r = again;
      startedAt = 0;
    }
  }
  const durationMs = Math.round(performance.now() - t0);
  const { offTrack: _, dir, ...found } = r;
  const result = { c, ...found, durationMs, startedAt, fellBack, ...(foundFromStop !== undefined ? { foundFromStop } : {}) };
  if (failedRun(r) && opts.keepFailed) {
    for (let i = 1; i <= runs; i++) if (join(root, `run-${i}`) !== dir) removeBuilds(join(root, `run-${i}`), opts.env);
    return { ...result, keptAt: dir };
  }
  removeBuilds(root, opts.env);
  return result;
}

/** How long a db-down outage lasts: longer than a lease renewal period, well inside the reconnect window. */
const DB_DOWN_MS = 4000;

const FAILED_WRITE = /^longbuild: (no space left for|I\/O error on) /m;

/** Interrupt the build the case's way; return what went wrong with the interruption itself (or null), and whether it struck. */
async function interrupt(opts: FuzzOptions, clean: CleanRun, c: FuzzCase, repo: string, env: Record<string, string>, occurrence: number): Promise<{ problem: Divergence | null; struck: boolean; completed?: boolean }> {
  // `at` is what the child counts (from where the case started), `name` the clean run's occurrence.
  const at = `${c.point}:${occurrence}`;
  const name = `${c.point}:${c.occurrence}`;
  const notReached = (r: ChildResult): Divergence => ({ what: 'interruption point not reached', rule: 'R-19', clean: `reached ${c.point} ${c.occurrence} time(s)`, resumed: `the run ended without reaching it (${describeChild(r)})` });
  switch (c.fault) {
    case 'kill': {
      const r = await longbuild(['run', '--json'], repo, childEnv(opts.env, { ...env, LONGBUILD_CRASH_AT: at }), { launch: opts.launch });
      return r.signal === 'SIGKILL' ? { problem: null, struck: true } : { problem: notReached(r), struck: false };
    }
    case 'enospc':
    case 'eio': {
      const r = await longbuild(['run', '--json'], repo, childEnv(opts.env, { ...env, LONGBUILD_FAULT: `${c.fault}@${at}` }), { launch: opts.launch });
      if (r.code === clean.code && r.signal === null && !FAILED_WRITE.test(r.stderr)) return { problem: notReached(r), struck: false };
      // Every failed write ends in one line naming what failed, exit 1 (never a crash or an internal error).
      if (r.code !== 1 || !FAILED_WRITE.test(r.stderr) || /internal error|\n\s+at /.test(r.stderr)) {
        return { problem: { what: `${c.fault} at ${name}: the run's end`, rule: 'R-18', clean: 'exit 1 with one line naming the failed write', resumed: describeChild(r) }, struck: true };
      }
      return { problem: null, struck: true };
    }
    case 'hang': {
      let killed = false;
      const r = await longbuild(['run', '--json'], repo, childEnv(opts.env, { ...env, LONGBUILD_FAULT: `hang@${at}` }), {
        launch: opts.launch,
        onStderr: (all, child) => {
          if (!killed && all.includes('hanging at')) {
            killed = true;
            // The operator (or a supervisor's timeout) kills the hung controller's whole group.
            setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 200);
          }
        },
      });
      return killed && r.signal === 'SIGKILL' ? { problem: null, struck: true } : { problem: notReached(r), struck: false };
    }
    case 'lease-race': {
      // Freeze the controller at the point, start a second one on the same build: it must be
      // refused (exit 3) with nothing changed; the first then finishes the build.
      let raced: Promise<ChildResult> | null = null;
      const first = await longbuild(['run', '--json'], repo, childEnv(opts.env, { ...env, LONGBUILD_PAUSE_AT: `${at}:1500` }), {
        launch: opts.launch,
        onStderr: (all) => {
          if (raced === null && all.includes('paused at')) raced = longbuild(['run', '--json'], repo, childEnv(opts.env, {}), { launch: opts.launch });
        },
      });
      if (raced === null) return { problem: notReached(first), struck: false };
      const second = await (raced as Promise<ChildResult>);
      if (second.code !== 3) return { problem: { what: `a second controller racing at ${name}`, rule: 'R-3', clean: 'exit 3, nothing changed', resumed: describeChild(second) }, struck: true };
      if (first.code !== clean.code) return { problem: { what: 'the first controller after the race', rule: 'R-3', clean: `exit ${clean.code}`, resumed: describeChild(first) }, struck: true };
      return { problem: null, struck: true, completed: true };
    }
    case 'db-down': {
      // The controller is caught at the point (a brief freeze), the database goes away for a
      // few seconds meanwhile, and comes back: the run waits it out and finishes (fault 3).
      const proxy = opts.backend!.proxy;
      let downed = false;
      const r = await longbuild(['run', '--json'], repo, childEnv(opts.env, { ...env, LONGBUILD_PAUSE_AT: `${at}:300` }), {
        launch: opts.launch,
        onStderr: (all) => {
          if (!downed && all.includes('paused at')) {
            downed = true;
            proxy.down();
            setTimeout(() => proxy.up(), DB_DOWN_MS);
          }
        },
      });
      proxy.up();
      if (!downed) return { problem: notReached(r), struck: false };
      // The outage must have been met (the run said it was retrying), and waited out.
      if (r.code !== clean.code || r.signal !== null || /internal error|\n\s+at |Unhandled/.test(r.stderr) || !/is unreachable \(.*\); retrying/.test(r.stderr)) {
        return { problem: { what: `a ${DB_DOWN_MS} ms database outage at ${name}`, rule: 'R-18', clean: `exit ${clean.code}, the outage waited out`, resumed: describeChild(r) }, struck: true, completed: true };
      }
      return { problem: null, struck: true, completed: true };
    }
    case 'random-kill': {
      const r = await longbuild(['run', '--json'], repo, childEnv(opts.env, env), { killAfterMs: c.delayMs!, launch: opts.launch });
      return { problem: null, struck: r.signal === 'SIGKILL' };
    }
  }
}

async function faultAndResume(opts: FuzzOptions, clean: CleanRun, c: FuzzCase, root: string, start: CaseStart): Promise<CaseRun> {
  const divergences: Divergence[] = [];
  mkdirSync(root, { recursive: true });
  const repo = start.source !== null ? copyBuild(start.source, join(root, 'repo')) : await initRepo(root, opts.driver, opts.env, opts.backend);
  const crashLedger = join(root, 'ledger-crash.ndjson');
  const secondLedger = join(root, 'ledger-second.ndjson');
  const resumeLedger = join(root, 'ledger-resume.ndjson');
  const pointFiles = [join(root, 'points-crash.txt'), join(root, 'points-second.txt'), join(root, 'points-resume.txt')];
  const hit = await interrupt(opts, clean, c, repo, { LONGBUILD_EFFECTS_LEDGER: crashLedger, LONGBUILD_POINTS_FILE: pointFiles[0]! }, start.occurrence);
  if (start.at > 0 && !(hit.struck && followsClean(clean.lines, start.at, start.index, pointLines(pointFiles[0]!)))) {
    return { divergences: [], duplicates: [], inDoubt: 0, repeats: noRepeats(), notInterrupted: false, resumePoints: [], offTrack: true };
  }
  if (hit.problem) divergences.push(hit.problem);
  if (!hit.struck) return { divergences, duplicates: [], inDoubt: 0, repeats: noRepeats(), notInterrupted: c.fault === 'random-kill', resumePoints: [] };
  const crashes = [await observeCrash(repo)];
  // Started from a stop: the calls the clean run made before it count as this run's.
  const segments: LedgerCall[][] = [[...clean.ledger.slice(0, start.calls), ...readLedgerCalls(crashLedger)]];
  if (c.second) {
    // --double: the resume is killed too, at a point it passes; its calls are judged against the first crash, the final resume's against the second.
    const again = await longbuild(['run', '--json'], repo, childEnv(opts.env, { LONGBUILD_EFFECTS_LEDGER: secondLedger, LONGBUILD_POINTS_FILE: pointFiles[1]!, LONGBUILD_CRASH_AT: `${c.second.point}:${c.second.occurrence}` }), { launch: opts.launch });
    if (again.signal !== 'SIGKILL') divergences.push({ what: 'second interruption point not reached', rule: 'R-19', clean: `${c.second.point}:${c.second.occurrence}`, resumed: describeChild(again) });
    crashes.push(await observeCrash(repo));
    segments.push(readLedgerCalls(secondLedger));
  }
  if (!hit.completed) {
    const resumed = await longbuild(['run', '--json'], repo, childEnv(opts.env, { LONGBUILD_EFFECTS_LEDGER: resumeLedger, LONGBUILD_POINTS_FILE: pointFiles[2]! }), { launch: opts.launch });
    if (resumed.signal !== null || resumed.code !== clean.code) {
      divergences.push({ what: 'resumed run exit', rule: 'R-19', clean: `exit ${clean.code}`, resumed: describeChild(resumed) });
    }
  }
  const observed = await observeBuild(repo);
  divergences.push(...compareBuilds(clean.observed, observed, { exactCommits: 'blueprint' in opts.driver, concurrent: clean.observed.concurrency > 1 }));
  segments.push(readLedgerCalls(resumeLedger));
  const audit = auditSegments(clean.ledger, segments, crashes);
  if (audit.missing.length > 0) divergences.push({ what: 'calls never made', rule: 'R-19', clean: audit.missing.join(', '), resumed: '(not called)' });
  if (audit.extra.length > 0) divergences.push({ what: 'calls the clean run did not make', rule: 'R-19', clean: '(not called)', resumed: audit.extra.join(', ') });
  // Every re-invocation the log records is one the effects ledger saw as in doubt (or, for a
  // command-driven build, one of its starts beyond the clean run's).
  const started = effectStarts([...clean.lines.slice(0, start.at), ...pointFiles.flatMap(readLines)]);
  const repeats = { planner: started.planner - clean.effects.planner, worker: started.worker - clean.effects.worker, verify: started.verify - clean.effects.verify, promote: started.promote - clean.effects.promote };
  const allowed = 'blueprint' in opts.driver ? audit.inDoubtReinvocations.length : repeats.planner + repeats.worker;
  if (observed.fingerprint.reinvocations > allowed) {
    divergences.push({ what: 'recorded re-invocations', rule: 'R-18', clean: `${allowed} call(s) in doubt`, resumed: `${observed.fingerprint.reinvocations} EffectReinvoked` });
  }
  const resumePoints = enumeratePoints(readLines(pointFiles[2]!));
  const struck = enumeratePoints(readLines(pointFiles[0]!)).at(-1)?.inFlight ?? [];
  return { divergences, duplicates: audit.duplicates, inDoubt: audit.inDoubtReinvocations.length, repeats, notInterrupted: false, resumePoints, ...(struck.length > 0 ? { inFlight: struck } : {}) };
}

/** Run `tasks` with at most `jobs` in flight, in order of submission. */
async function pool<T, R>(items: readonly T[], jobs: number, work: (item: T) => Promise<R>, each: (r: R) => void): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      results[i] = await work(items[i]!);
      each(results[i]!);
    }
  });
  await Promise.all(lanes);
  return results;
}

const summarize = (r: CaseResult): string => {
  const d = r.divergences[0];
  if (d) return `${d.what} (${d.rule}): clean ${d.clean.slice(0, 200)} / resumed ${d.resumed.slice(0, 200)}`;
  const c = r.duplicates[0]!;
  return `duplicate ${c.kind} call ${c.key} (${c.rule}): ${c.problem}`;
};

export const caseName = (c: FuzzCase): string =>
  c.fault === 'random-kill' ? `random-kill after ${c.delayMs} ms` : `${c.fault}@${c.point}:${c.occurrence}${c.second ? ` then kill@${c.second.point}:${c.second.occurrence}` : ''}`;

/** The whole fuzz campaign: clean run, chosen faults, resumptions, comparisons. */
export async function fuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const t0 = performance.now();
  const driver: FuzzDriver = 'blueprint' in opts.driver ? { blueprint: resolve(opts.driver.blueprint) } : { request: resolve(opts.driver.request), config: resolve(opts.driver.config) };
  const backend = opts.log === undefined ? undefined : await pgBackend(opts.log);
  try {
    return await campaign({ ...opts, driver, ...(backend ? { backend } : {}) }, t0);
  } finally {
    if (backend) {
      await backend.proxy.close();
      const { PostgresEventLog } = await import('../log/postgres-log.js');
      for (const s of backend.schemas) await PostgresEventLog.dropSchema(backend.url, s).catch(() => {});
    }
  }
}

async function pgBackend(spec: string): Promise<PgBackend> {
  const target = postgresTarget(spec);
  if (target === null) throw new Error(`fuzz --log takes postgres:URL, got '${spec}'`);
  const u = new URL(target.url);
  const proxy = await OutageProxy.start(u.hostname === 'localhost' ? '127.0.0.1' : u.hostname, Number(u.port || 5432));
  const schemas: string[] = [];
  const through = new URL(target.url);
  through.hostname = '127.0.0.1';
  through.port = String(proxy.port);
  return {
    proxy, url: target.url, schemas,
    next() {
      const schema = `fuzz_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      return `postgres:${through.toString()}${through.search ? '&' : '?'}schema=${schema}`;
    },
  };
}

async function campaign(o: FuzzOptions, t0: number): Promise<FuzzReport> {
  const base = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-'));
  try {
    return await campaignIn(base, o, t0);
  } finally {
    removeBuilds(base, o.env);
  }
}

/** The initialised build every case copies, unless it cannot be copied (a PostgreSQL log; a file naming its own path). */
async function templateBuild(base: string, o: FuzzOptions): Promise<string | null> {
  if (o.backend) return null;
  const repo = await initRepo(join(base, 'template'), o.driver, o.env);
  return namesPath(repo, repo) ? null : repo;
}

async function campaignIn(base: string, given: FuzzOptions, t0: number): Promise<FuzzReport> {
  const driver = given.driver;
  const snapshotMode = given.snapshot ?? 'auto';
  // Built beside the template and the clean run (which use bin/longbuild.js: the reference the
  // cases are compared with), on the core they leave idle.
  const building = wantsSnapshot(given) ? buildCliSnapshot(base, childEnv(given.env, {}), given.snapshotSource) : null;
  const template = await templateBuild(base, given);
  const clean = await cleanRun(driver, given.env, given.backend, template);
  const snapshot = building === null ? null : await building;
  const o: FuzzOptions = snapshot !== null && 'launch' in snapshot ? { ...given, launch: snapshot.launch } : given;
  const opts = o;
  const faults = opts.faults && opts.faults.length > 0 ? opts.faults : ['kill' as const];
  const chosen = opts.randomKills !== undefined ? [] : opts.only && opts.only.length > 0 ? [...opts.only] : choosePoints(clean.points, opts.points, opts.seed);
  const cases: FuzzCase[] = faults.flatMap((fault) => chosen.map((po) => ({ fault, point: po.point, occurrence: po.occurrence })));
  if (opts.randomKills !== undefined) {
    const rand = seeded(opts.seed);
    for (let i = 0; i < opts.randomKills; i++) cases.push({ fault: 'random-kill', delayMs: opts.killAtMs ?? 30 + Math.floor(rand() * Math.max(1, clean.runMs)) });
  }
  const mode = opts.startFrom ?? 'auto';
  const pointCases = cases.filter((c) => c.fault !== 'random-kill').length;
  const staging = template !== null && pointCases > 0 && (mode === 'stops' || (mode === 'auto' && pointCases >= AUTO_STOPS_CASES * opts.jobs));
  // The staged run goes on beside the cases (decision 0019): they start from the stops found so far.
  const stops: Stop[] = [];
  const starts: Starts = { template, stops };
  const t1 = performance.now();
  let stagedMs = 0;
  const staged = !staging ? Promise.resolve() : stagedStops(opts.env, clean, template, base, stops, opts.launch)
    .catch(() => undefined) // a staged run that fails leaves fewer stops: the cases start from the start
    .finally(() => { stagedMs = Math.round(performance.now() - t1); });
  // Asked for stops: every case starts from the latest one before its point (what a reproduction needs).
  if (mode === 'stops') await staged;
  let done = 0;
  let failedSoFar = 0;
  let total = cases.length;
  const progress = (r: CaseResult) => {
    done += 1;
    if (r.divergences.length > 0 || r.duplicates.length > 0) failedSoFar += 1;
    opts.onProgress?.({ done, total, failed: failedSoFar, last: caseName(r.c) });
  };
  const results = await pool(cases, opts.jobs, (c) => runCase(o, clean, c, starts), progress);
  if (opts.double !== undefined) {
    // The resume of every passing kill case, killed in turn at the points it passes.
    const seconds: FuzzCase[] = results.filter((r) => r.c.fault === 'kill' && r.divergences.length === 0).flatMap((r) =>
      (opts.onlySecond && opts.onlySecond.length > 0 ? opts.onlySecond : choosePoints(r.resumePoints, opts.double!, opts.seed)).map((second) => ({ ...r.c, second })));
    total += seconds.length;
    results.push(...await pool(seconds, opts.jobs, (c) => runCase(o, clean, c, starts), progress));
  }
  await staged;
  const failed: FuzzFailure[] = [];
  const inDoubtByPoint: Record<string, number> = {};
  const repeatedEffects = noRepeats();
  let duplicateCalls = 0;
  let inDoubt = 0;
  const reports: CaseReport[] = [];
  for (const r of results) {
    duplicateCalls += r.duplicates.length;
    inDoubt += r.inDoubt;
    for (const k of Object.keys(repeatedEffects) as (keyof EffectCounts)[]) repeatedEffects[k] += r.repeats[k];
    if (r.inDoubt > 0 && r.c.point !== undefined && r.c.fault === 'kill' && !r.c.second) inDoubtByPoint[`${r.c.point}:${r.c.occurrence}`] = r.inDoubt;
    const bad = r.divergences.length > 0 || r.duplicates.length > 0;
    reports.push({
      ...r.c, result: r.notInterrupted ? 'not-interrupted' : bad ? 'failed' : 'passed', ...(bad ? { divergence: summarize(r) } : {}), repeats: r.repeats, inDoubt: r.inDoubt, durationMs: r.durationMs,
      ...(r.inFlight !== undefined ? { inFlight: r.inFlight } : {}),
      ...(r.startedAt > 0 ? { startedAt: r.startedAt } : {}), ...(r.fellBack ? { fellBack: true as const } : {}),
      ...(r.foundFromStop !== undefined ? { foundFromStop: r.foundFromStop } : {}),
    });
    if (!bad) continue;
    const keptAt = r.keptAt;
    failed.push({
      ...r.c, divergence: summarize(r), divergences: r.divergences, duplicates: r.duplicates,
      reproduce: reproduceCommand(opts.driver, r.c, opts.log, r.startedAt > 0, o.launch !== undefined), ...(keptAt ? { keptAt } : {}),
    });
  }
  // Minimise the first failure of a blueprint build (the others usually share its cause).
  const first = failed[0];
  if (first !== undefined && 'blueprint' in driver && (opts.minimiseTrials ?? 0) > 0 && first.fault !== 'random-kill') {
    const minimal = await minimise(o, driver.blueprint, first, opts.minimiseTrials!, opts.minimalDir ?? tmpdir());
    if (minimal !== null) failed[0] = { ...first, minimal: { ...minimal, reproduce: reproduceCommand({ blueprint: minimal.blueprint }, { ...first, ...(minimal.point ? { point: minimal.point, occurrence: minimal.occurrence! } : {}) }, opts.log, false, o.launch !== undefined) } };
  }
  const notInterrupted = reports.filter((r) => r.result === 'not-interrupted').length;
  // A blueprint's scripted calls are counted by their ledger; a command-driven build's by the effects its run started.
  const cleanCalls = 'blueprint' in driver
    ? { planner: clean.ledger.filter((c) => c.kind === 'planner').length, worker: clean.ledger.filter((c) => c.kind === 'worker').length }
    : { planner: clean.effects.planner, worker: clean.effects.worker };
  return {
    ...('blueprint' in opts.driver ? { blueprint: opts.driver.blueprint } : { request: opts.driver.request, config: opts.driver.config }),
    enumerated: clean.points.length,
    points: results.length,
    passed: results.length - failed.length - notInterrupted,
    failed,
    duplicateCalls,
    inDoubtReinvocations: inDoubt,
    inDoubtByPoint,
    ...inFlightCoverage(clean, results),
    repeatedEffects,
    faults: [...faults, ...(opts.randomKills !== undefined ? ['random-kill'] : []), ...(opts.double !== undefined ? ['double'] : [])],
    notInterrupted,
    cases: reports,
    seed: opts.seed,
    jobs: opts.jobs,
    durationMs: Math.round(performance.now() - t0),
    clean: { events: clean.events, outcome: clean.observed.fingerprint.outcome, durationMs: Math.round(clean.durationMs), plannerCalls: cleanCalls.planner, workerCalls: cleanCalls.worker, effects: clean.effects },
    starts: {
      mode, stops: starts.stops.length, stagedMs, fromStop: results.filter((r) => r.startedAt > 0).length,
      fellBack: results.filter((r) => r.fellBack).length, pointsSkipped: results.reduce((n, r) => n + r.startedAt, 0),
    },
    snapshot: {
      mode: snapshotMode, used: o.launch !== undefined,
      ...(snapshot !== null && 'buildMs' in snapshot ? { buildMs: snapshot.buildMs } : {}),
      ...(snapshot !== null && 'reason' in snapshot ? { reason: snapshot.reason } : {}),
    },
  };
}

/** Whether a campaign builds a start-up snapshot: asked to, or ('auto') enough cases to repay it. */
function wantsSnapshot(o: FuzzOptions): boolean {
  const mode = o.snapshot ?? 'auto';
  if (mode !== 'auto') return mode === 'on';
  const perFault = o.only && o.only.length > 0 ? o.only.length : o.points === 'all' ? Infinity : o.points;
  const pointCases = o.randomKills !== undefined ? 0 : perFault * Math.max(1, o.faults?.length ?? 1);
  return pointCases + (o.randomKills ?? 0) >= AUTO_SNAPSHOT_CASES;
}

/** The sets of calls in flight the clean run passed through, and how many the struck cases covered (issue 16). */
function inFlightCoverage(clean: CleanRun, results: readonly CaseResult[]): Pick<FuzzReport, 'inFlight'> {
  const sets = new Set(clean.points.filter((p) => p.inFlight.length > 0).map((p) => [...p.inFlight].sort().join(' ')));
  if (sets.size === 0) return {};
  const covered = new Set(results.filter((r) => r.inFlight !== undefined).map((r) => [...r.inFlight!].sort().join(' ')));
  const kinds = [...new Set(clean.points.filter((p) => p.inFlight.length > 1).map((p) => flightCombination(p.inFlight)))].sort();
  return { inFlight: { combinations: sets.size, covered: [...covered].filter((k) => sets.has(k)).length, kinds } };
}

interface BlueprintShape {
  milestones: { id: string; nodes: { id: string; deps?: string[] }[] }[];
  [k: string]: unknown;
}

/** Smaller blueprints than `bp`: without its last milestone, then without each node nothing depends on. */
export function shrinkCandidates(bp: BlueprintShape): BlueprintShape[] {
  const out: BlueprintShape[] = [];
  if (bp.milestones.length > 1) out.push({ ...bp, milestones: bp.milestones.slice(0, -1) });
  const needed = new Set(bp.milestones.flatMap((m) => m.nodes.flatMap((n) => n.deps ?? [])));
  bp.milestones.forEach((m, mi) => {
    for (const n of m.nodes) {
      if (needed.has(n.id) || m.nodes.length === 1) continue;
      out.push({ ...bp, milestones: bp.milestones.map((x, i) => (i === mi ? { ...x, nodes: x.nodes.filter((y) => y.id !== n.id) } : x)) });
    }
  });
  return out;
}

const sizeOf = (bp: BlueprintShape) => ({ milestones: bp.milestones.length, nodes: bp.milestones.reduce((n, m) => n + m.nodes.length, 0) });

/**
 * Greedy minimisation of a failing case (delta debugging by hand): take the first smaller
 * blueprint that still fails the same case, and repeat; then the earliest occurrence of the point
 * that fails. Each candidate costs a clean run and a case.
 */
async function minimise(opts: FuzzOptions, blueprintPath: string, failure: FuzzCase, maxTrials: number, dir: string): Promise<Omit<MinimalFailure, 'reproduce'> | null> {
  let best = JSON.parse(readFileSync(blueprintPath, 'utf8')) as BlueprintShape;
  let bestCase: FuzzCase = failure;
  let trials = 0;
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-min-'));
  const fails = async (bp: BlueprintShape, c: FuzzCase): Promise<FuzzCase | null> => {
    trials += 1;
    const path = join(root, `candidate-${trials}.json`);
    writeFileSync(path, JSON.stringify(bp, null, 2));
    const o = { ...opts, driver: { blueprint: path } };
    let clean: CleanRun;
    try {
      clean = await cleanRun(o.driver, opts.env, opts.backend);
    } catch {
      return null; // not a valid build any more
    }
    // The earliest occurrence of the same point that still fails (the point must be reached at all).
    const occurrences = clean.points.filter((p) => p.point === c.point).map((p) => p.occurrence).filter((k) => k <= (c.occurrence ?? 1));
    for (const k of occurrences) {
      const candidate = { ...c, occurrence: k };
      const r = await runCase(o, clean, candidate, NO_STARTS);
      if (r.divergences.length > 0 || r.duplicates.length > 0) return candidate;
      if (trials >= maxTrials) break;
    }
    return null;
  };
  try {
    for (let shrunk = true; shrunk && trials < maxTrials;) {
      shrunk = false;
      for (const candidate of shrinkCandidates(best)) {
        if (trials >= maxTrials) break;
        const c = await fails(candidate, bestCase);
        if (c !== null) {
          best = candidate;
          bestCase = c;
          shrunk = true;
          break;
        }
      }
    }
    const out = join(dir, `longbuild-fuzz-minimal-${process.pid}.json`);
    writeFileSync(out, `${JSON.stringify(best, null, 2)}\n`);
    return { blueprint: out, ...sizeOf(best), ...(bestCase.point ? { point: bestCase.point, occurrence: bestCase.occurrence! } : {}), trials };
  } finally {
    removeBuilds(root, opts.env);
  }
}

/** Write the report of every covered case (`--report FILE`). */
export function writeReport(path: string, report: FuzzReport): void {
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
