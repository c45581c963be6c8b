/**
 * `longbuild fuzz`: a clean run of a build enumerates the
 * interruption points it passes; for each chosen (fault, point, occurrence) a child controller in
 * a fresh repository meets that fault there — a real SIGKILL, a failing write (ENOSPC, EIO), a hang
 * ended by a SIGKILL of its process group, or a second controller racing for the lease — a fresh
 * child resumes the build to the end (with `--double`, that resume is killed too, at a point it
 * passes), and the result is compared with the clean run. `--random-kill N` kills at random
 * instants instead of named points. The scripted planner and worker write every invocation to an
 * effects ledger outside the build, and every child records the points it reaches, so duplicate
 * calls and repeated effects of every kind are counted independently of the log.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { choosePoints, flightCombination, seeded } from '../../commands/fuzz-compare.js';
import { cleanRun, initRepo, noRepeats, runCase, type CaseResult, type CleanRun } from './case.js';
import { childEnv, removeBuilds } from './child.js';
import { AUTO_SNAPSHOT_CASES, buildCliSnapshot } from './cli-snapshot.js';
import { minimise } from './minimise.js';
import { OutageProxy } from './outage-proxy.js';
import { caseName, reproduceCommand, type CaseReport, type EffectCounts, type FuzzCase, type FuzzDriver, type FuzzFailure, type FuzzOptions, type FuzzReport, type PgBackend } from './report.js';
import { AUTO_STOPS_CASES, namesPath, stagedStops, type Starts, type Stop } from './stops.js';
import { postgresTarget } from '../log/open-log.js';

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
  // A build gated for approval is driven by the fuzzer's operator from the start (operator.ts): no stops.
  const staging = template !== null && clean.approvals === 0 && pointCases > 0 && (mode === 'stops' || (mode === 'auto' && pointCases >= AUTO_STOPS_CASES * opts.jobs));
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
    clean: { events: clean.events, outcome: clean.observed.fingerprint.outcome, durationMs: Math.round(clean.durationMs), plannerCalls: cleanCalls.planner, workerCalls: cleanCalls.worker, effects: clean.effects,
      approvals: clean.approvals, notifications: clean.observed.fingerprint.notifications.length },
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

/** The sets of calls in flight the clean run passed through, and how many the struck cases covered. */
function inFlightCoverage(clean: CleanRun, results: readonly CaseResult[]): Pick<FuzzReport, 'inFlight'> {
  const sets = new Set(clean.points.filter((p) => p.inFlight.length > 0).map((p) => [...p.inFlight].sort().join(' ')));
  if (sets.size === 0) return {};
  const covered = new Set(results.filter((r) => r.inFlight !== undefined).map((r) => [...r.inFlight!].sort().join(' ')));
  const kinds = [...new Set(clean.points.filter((p) => p.inFlight.length > 1).map((p) => flightCombination(p.inFlight)))].sort();
  return { inFlight: { combinations: sets.size, covered: [...covered].filter((k) => sets.has(k)).length, kinds } };
}
