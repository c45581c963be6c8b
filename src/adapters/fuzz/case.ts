/**
 * One fuzz case: the clean run every case is compared with, and a case's runs
 * in a fresh repository: the build interrupted the case's way (a SIGKILL, a failing write, a
 * hang, a racing controller, a database outage, or a kill at a random instant), resumed to the
 * end, and compared with the clean run, its calls audited against the effects ledger.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  billedAgain,
  auditNotifications, auditSegments, compareBuilds, effectStarts, enumeratePoints, followsClean,
  type CallProblem, type Divergence, type LedgerCall, type ObservedBuild, type PointOccurrence,
} from '../../commands/fuzz-compare.js';
import { childEnv, describeChild, longbuild, pointLines, readLines, removeBuilds, type ChildResult } from './child.js';
import { copyBuild } from './copy-build.js';
import { drive, driven } from './fuzz-operator.js';
import { foldBuild, observeBuild, observeCrash, readLedgerCalls, readLedgerDeliveries } from './observe.js';
import { driverArgs, type EffectCounts, type FuzzCase, type FuzzDriver, type FuzzOptions, type PgBackend } from './report.js';
import { caseStart, type CaseStart, type Starts } from './stops.js';

export interface CleanRun {
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
  /** Approvals the fuzzer's operator gave (a build gated for approval, R-60); 0: none asked. */
  readonly approvals: number;
}

export async function initRepo(root: string, driver: FuzzDriver, env: Readonly<Record<string, string | undefined>>, backend?: PgBackend): Promise<string> {
  mkdirSync(root, { recursive: true });
  const repo = join(root, 'repo');
  const init = await longbuild(['init', ...driverArgs(driver), '--repo', repo, ...(backend ? ['--log', backend.next()] : [])], root, childEnv(env, {}));
  if (init.code !== 0) throw new Error(`longbuild init ${driverArgs(driver).join(' ')} failed (${describeChild(init)})`);
  return repo;
}

export async function cleanRun(driver: FuzzDriver, env: Readonly<Record<string, string | undefined>>, backend?: PgBackend, template?: string | null): Promise<CleanRun> {
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-clean-'));
  try {
    const repo = template ? copyBuild(template, join(root, 'repo')) : await initRepo(root, driver, env, backend);
    const pointsFile = join(root, 'points.txt');
    const ledgerFile = join(root, 'ledger.ndjson');
    const t1 = performance.now();
    const { result: run, approvals } = await drive(repo, childEnv(env, { LONGBUILD_POINTS_FILE: pointsFile, LONGBUILD_EFFECTS_LEDGER: ledgerFile }));
    const runMs = performance.now() - t1;
    if (run.signal !== null || (run.code !== 0 && run.code !== 1)) throw new Error(`the clean run failed (${describeChild(run)})`);
    const observed = await observeBuild(repo);
    if (!observed.verifyOk) throw new Error(`the clean run does not verify: ${observed.verifyProblem ?? ''}`);
    const notified = auditNotifications(observed.fingerprint.notifications, readLedgerDeliveries(ledgerFile), 0)[0];
    if (notified !== undefined) throw new Error(`the clean run's notifications: ${notified.what}: ${notified.clean} / ${notified.resumed}`);
    const lines = pointLines(pointsFile);
    const { position: events, steps } = JSON.parse(run.stdout) as { position: number; steps: number };
    return { observed, ledger: readLedgerCalls(ledgerFile), points: enumeratePoints(lines), lines, steps, effects: effectStarts(lines), code: run.code, events, durationMs: performance.now() - t0, runMs, approvals };
  } finally {
    removeBuilds(root, env);
  }
}

export interface CaseResult {
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

export const noRepeats = (): EffectCounts => ({ planner: 0, worker: 0, verify: 0, promote: 0 });

const failedRun = (r: CaseRun): boolean => r.divergences.length > 0 || r.duplicates.length > 0;

export async function runCase(opts: FuzzOptions, clean: CleanRun, c: FuzzCase, starts: Starts): Promise<CaseResult> {
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-case-'));
  // Each run of the case has a directory of its own: this machine keeps the last checkpoint it
  // signed for a build directory, and a second build in the same place would be refused.
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
      const r = await driven(repo, childEnv(opts.env, { ...env, LONGBUILD_CRASH_AT: at }), { launch: opts.launch });
      return r.signal === 'SIGKILL' ? { problem: null, struck: true } : { problem: notReached(r), struck: false };
    }
    case 'enospc':
    case 'eio': {
      const r = await driven(repo, childEnv(opts.env, { ...env, LONGBUILD_FAULT: `${c.fault}@${at}` }), { launch: opts.launch });
      if (r.code === clean.code && r.signal === null && !FAILED_WRITE.test(r.stderr)) return { problem: notReached(r), struck: false };
      // Every failed write ends in one line naming what failed, exit 1 (never a crash or an internal error).
      if (r.code !== 1 || !FAILED_WRITE.test(r.stderr) || /internal error|\n\s+at /.test(r.stderr)) {
        return { problem: { what: `${c.fault} at ${name}: the run's end`, rule: 'R-18', clean: 'exit 1 with one line naming the failed write', resumed: describeChild(r) }, struck: true };
      }
      return { problem: null, struck: true };
    }
    case 'hang': {
      let killed = false;
      const r = await driven(repo, childEnv(opts.env, { ...env, LONGBUILD_FAULT: `hang@${at}` }), {
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
      const first = await driven(repo, childEnv(opts.env, { ...env, LONGBUILD_PAUSE_AT: `${at}:1500` }), {
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
      const r = await driven(repo, childEnv(opts.env, { ...env, LONGBUILD_PAUSE_AT: `${at}:300` }), {
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
      const r = await driven(repo, childEnv(opts.env, env), { killAfterMs: c.delayMs!, launch: opts.launch });
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
  // Started from a stop: what the log recorded before it is the clean run's, not this case's.
  const copiedTo = start.source !== null && start.at > 0 ? (await foldBuild(repo)).state.position : 0;
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
    const again = await driven(repo, childEnv(opts.env, { LONGBUILD_EFFECTS_LEDGER: secondLedger, LONGBUILD_POINTS_FILE: pointFiles[1]!, LONGBUILD_CRASH_AT: `${c.second.point}:${c.second.occurrence}` }), { launch: opts.launch });
    if (again.signal !== 'SIGKILL') divergences.push({ what: 'second interruption point not reached', rule: 'R-19', clean: `${c.second.point}:${c.second.occurrence}`, resumed: describeChild(again) });
    crashes.push(await observeCrash(repo));
    segments.push(readLedgerCalls(secondLedger));
  }
  if (!hit.completed) {
    const resumed = await driven(repo, childEnv(opts.env, { LONGBUILD_EFFECTS_LEDGER: resumeLedger, LONGBUILD_POINTS_FILE: pointFiles[2]! }), { launch: opts.launch });
    if (resumed.signal !== null || resumed.code !== clean.code) {
      divergences.push({ what: 'resumed run exit', rule: 'R-19', clean: `exit ${clean.code}`, resumed: describeChild(resumed) });
    }
  }
  const observed = await observeBuild(repo);
  divergences.push(...compareBuilds(clean.observed, observed, { exactCommits: 'blueprint' in opts.driver, concurrent: clean.observed.concurrency > 1 }));
  // what the notifiers received, against the log (at least once, at most once more per crash).
  const deliveries = [crashLedger, secondLedger, resumeLedger].flatMap(readLedgerDeliveries);
  divergences.push(...auditNotifications(observed.fingerprint.notifications, deliveries, crashes.length, copiedTo));
  segments.push(readLedgerCalls(resumeLedger));
  const audit = auditSegments(clean.ledger, segments, crashes);
  if (audit.missing.length > 0) divergences.push({ what: 'calls never made', rule: 'R-19', clean: audit.missing.join(', '), resumed: '(not called)' });
  if (audit.extra.length > 0) divergences.push({ what: 'calls the clean run did not make', rule: 'R-19', clean: '(not called)', resumed: audit.extra.join(', ') });
  // Every re-invocation the log records is one the effects ledger saw as in doubt (or, for a
  // command-driven build, one of its starts beyond the clean run's).
  const started = effectStarts([...clean.lines.slice(0, start.at), ...pointFiles.flatMap(readLines)]);
  const repeats = { planner: started.planner - clean.effects.planner, worker: started.worker - clean.effects.worker, verify: started.verify - clean.effects.verify, promote: started.promote - clean.effects.promote };
  const allowed = 'blueprint' in opts.driver ? audit.inDoubtReinvocations.length : repeats.planner + repeats.worker;
  // A budgeted build billed for its interrupted calls may pause earlier and start fewer calls than the
  // clean run: its starts beyond the clean run's say nothing of its re-invocations (billedAgain).
  if (observed.fingerprint.reinvocations > allowed && !billedAgain(observed.fingerprint)) {
    divergences.push({ what: 'recorded re-invocations', rule: 'R-18', clean: `${allowed} call(s) in doubt`, resumed: `${observed.fingerprint.reinvocations} EffectReinvoked` });
  }
  const resumePoints = enumeratePoints(readLines(pointFiles[2]!));
  const struck = enumeratePoints(readLines(pointFiles[0]!)).at(-1)?.inFlight ?? [];
  return { divergences, duplicates: audit.duplicates, inDoubt: audit.inDoubtReinvocations.length, repeats, notInterrupted: false, resumePoints, ...(struck.length > 0 ? { inFlight: struck } : {}) };
}
