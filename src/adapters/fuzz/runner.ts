/**
 * `longbuild fuzz` (issue 7; R-18, R-19, R-23): a clean run of a blueprint enumerates the
 * interruption points it passes; for each chosen (point, occurrence) a child controller in a fresh
 * repository is killed there with a real SIGKILL (LONGBUILD_CRASH_AT), a fresh child resumes the
 * build to the end, and the result is compared with the clean run. The scripted planner and worker
 * write every invocation to an effects ledger outside the build, so duplicate calls are found
 * independently of the log.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  auditCalls, choosePoints, compareBuilds, enumeratePoints, type CallProblem, type Divergence, type ObservedBuild, type PointOccurrence,
} from '../../commands/fuzz-compare.js';
import { observeBuild, observeCrash, readLedgerCalls } from './observe.js';

/** bin/longbuild.js, three levels above this module in both src/ and dist/. */
export const LONGBUILD_BIN = fileURLToPath(new URL('../../../bin/longbuild.js', import.meta.url));

export interface FuzzOptions {
  readonly blueprint: string;
  readonly points: number | 'all';
  readonly seed: number;
  readonly jobs: number;
  /** Run exactly these occurrences (reproduce a failure) instead of sampling. */
  readonly only?: readonly PointOccurrence[];
  /** Environment for every child (PATH etc.); fault variables are set by the runner. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Keep the temporary repositories of failed cases (their paths are in the report). */
  readonly keepFailed?: boolean;
  readonly onProgress?: (p: FuzzProgress) => void;
}

export interface FuzzProgress {
  readonly done: number;
  readonly total: number;
  readonly failed: number;
  readonly last: string;
}

export interface FuzzFailure {
  readonly point: string;
  readonly occurrence: number;
  /** The first problem, in one line. */
  readonly divergence: string;
  readonly divergences: readonly Divergence[];
  readonly duplicates: readonly CallProblem[];
  readonly reproduce: string;
  readonly keptAt?: string;
}

export interface FuzzReport {
  readonly blueprint: string;
  /** Occurrences enumerated by the clean run. */
  readonly enumerated: number;
  /** Occurrences crashed at (chosen). */
  readonly points: number;
  readonly passed: number;
  readonly failed: FuzzFailure[];
  readonly duplicateCalls: number;
  readonly inDoubtReinvocations: number;
  readonly inDoubtByPoint: Record<string, number>;
  readonly seed: number;
  readonly jobs: number;
  readonly durationMs: number;
  readonly clean: { readonly events: number; readonly outcome: string; readonly durationMs: number; readonly plannerCalls: number; readonly workerCalls: number };
}

interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const FAULT_VARS = ['LONGBUILD_CRASH_AT', 'LONGBUILD_POINTS_FILE', 'LONGBUILD_EFFECTS_LEDGER'];

function childEnv(base: Readonly<Record<string, string | undefined>>, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !FAULT_VARS.includes(k)) env[k] = v;
  return { ...env, NO_COLOR: '1', ...extra };
}

/** One `longbuild` child process; resolves with its exit code or the signal that ended it. */
function longbuild(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 10 * 60_000): Promise<ChildResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [LONGBUILD_BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      fail(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

function describeChild(r: ChildResult): string {
  const tail = r.stderr.trim().split('\n').slice(-1)[0] ?? '';
  return `${r.signal ? `signal ${r.signal}` : `exit ${r.code}`}${tail ? `: ${tail}` : ''}`;
}

/** The exact command that reproduces one case. */
export function reproduceCommand(blueprint: string, po: PointOccurrence, env: Readonly<Record<string, string | undefined>>): string {
  const bug = env.LONGBUILD_FUZZ_PLANT_BUG ? `LONGBUILD_FUZZ_PLANT_BUG=${env.LONGBUILD_FUZZ_PLANT_BUG} ` : '';
  return `${bug}longbuild fuzz --blueprint ${blueprint} --only ${po.point}:${po.occurrence}`;
}

interface CleanRun {
  readonly observed: ObservedBuild;
  readonly ledger: ReturnType<typeof readLedgerCalls>;
  readonly points: PointOccurrence[];
  readonly code: number | null;
  readonly events: number;
  readonly durationMs: number;
}

async function initRepo(root: string, blueprint: string, env: Readonly<Record<string, string | undefined>>): Promise<string> {
  const repo = join(root, 'repo');
  const init = await longbuild(['init', '--blueprint', blueprint, '--repo', repo], root, childEnv(env, {}));
  if (init.code !== 0) throw new Error(`longbuild init --blueprint ${blueprint} failed (${describeChild(init)})`);
  return repo;
}

async function cleanRun(blueprint: string, env: Readonly<Record<string, string | undefined>>): Promise<CleanRun> {
  const t0 = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-clean-'));
  try {
    const repo = await initRepo(root, blueprint, env);
    const pointsFile = join(root, 'points.txt');
    const ledgerFile = join(root, 'ledger.ndjson');
    const run = await longbuild(['run', '--json'], repo, childEnv(env, { LONGBUILD_POINTS_FILE: pointsFile, LONGBUILD_EFFECTS_LEDGER: ledgerFile }));
    if (run.signal !== null || (run.code !== 0 && run.code !== 1)) throw new Error(`the clean run of ${blueprint} failed (${describeChild(run)})`);
    const observed = await observeBuild(repo);
    if (!observed.verifyOk) throw new Error(`the clean run of ${blueprint} does not verify: ${observed.verifyProblem ?? ''}`);
    const points = enumeratePoints(readFileSync(pointsFile, 'utf8').split('\n'));
    const events = (JSON.parse(run.stdout) as { position: number }).position;
    return { observed, ledger: readLedgerCalls(ledgerFile), points, code: run.code, events, durationMs: performance.now() - t0 };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

interface CaseResult {
  readonly po: PointOccurrence;
  readonly divergences: Divergence[];
  readonly duplicates: CallProblem[];
  readonly inDoubt: number;
  readonly keptAt?: string;
}

async function runCase(opts: FuzzOptions, blueprint: string, clean: CleanRun, po: PointOccurrence): Promise<CaseResult> {
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-case-'));
  let r: Omit<CaseResult, 'po'>;
  try {
    r = await crashAndResume(opts, blueprint, clean, po, root);
  } catch (err) {
    r = { divergences: [{ what: 'fuzz case crashed', rule: '-', clean: '-', resumed: err instanceof Error ? err.message : String(err) }], duplicates: [], inDoubt: 0 };
  }
  const failed = r.divergences.length > 0 || r.duplicates.length > 0;
  if (failed && opts.keepFailed) return { po, ...r, keptAt: root };
  rmSync(root, { recursive: true, force: true });
  return { po, ...r };
}

async function crashAndResume(opts: FuzzOptions, blueprint: string, clean: CleanRun, po: PointOccurrence, root: string): Promise<Omit<CaseResult, 'po'>> {
  const divergences: Divergence[] = [];
  const repo = await initRepo(root, blueprint, opts.env);
  const crashLedger = join(root, 'ledger-crash.ndjson');
  const resumeLedger = join(root, 'ledger-resume.ndjson');
  const crashed = await longbuild(['run', '--json'], repo, childEnv(opts.env, { LONGBUILD_CRASH_AT: `${po.point}:${po.occurrence}`, LONGBUILD_EFFECTS_LEDGER: crashLedger }));
  if (crashed.signal !== 'SIGKILL') {
    divergences.push({ what: 'interruption point not reached', rule: 'R-19', clean: `reached ${po.point} ${po.occurrence} time(s)`, resumed: `the run ended without reaching it (${describeChild(crashed)})` });
    return { divergences, duplicates: [], inDoubt: 0 };
  }
  const crash = await observeCrash(repo);
  const resumed = await longbuild(['run', '--json'], repo, childEnv(opts.env, { LONGBUILD_EFFECTS_LEDGER: resumeLedger }));
  if (resumed.signal !== null || resumed.code !== clean.code) {
    divergences.push({ what: 'resumed run exit', rule: 'R-19', clean: `exit ${clean.code}`, resumed: describeChild(resumed) });
  }
  divergences.push(...compareBuilds(clean.observed, await observeBuild(repo)));
  const audit = auditCalls(clean.ledger, readLedgerCalls(crashLedger), readLedgerCalls(resumeLedger), crash);
  if (audit.missing.length > 0) divergences.push({ what: 'calls never made', rule: 'R-19', clean: audit.missing.join(', '), resumed: '(not called)' });
  if (audit.extra.length > 0) divergences.push({ what: 'calls the clean run did not make', rule: 'R-19', clean: '(not called)', resumed: audit.extra.join(', ') });
  return { divergences, duplicates: audit.duplicates, inDoubt: audit.inDoubtReinvocations.length };
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

/** The whole fuzz campaign: clean run, chosen crashes, resumptions, comparisons. */
export async function fuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const t0 = performance.now();
  const blueprint = resolve(opts.blueprint);
  const clean = await cleanRun(blueprint, opts.env);
  const chosen = opts.only && opts.only.length > 0 ? [...opts.only] : choosePoints(clean.points, opts.points, opts.seed);
  let done = 0;
  let failedSoFar = 0;
  const results = await pool(chosen, opts.jobs, (po) => runCase(opts, blueprint, clean, po), (r) => {
    done += 1;
    if (r.divergences.length > 0 || r.duplicates.length > 0) failedSoFar += 1;
    opts.onProgress?.({ done, total: chosen.length, failed: failedSoFar, last: `${r.po.point}:${r.po.occurrence}` });
  });
  const failed: FuzzFailure[] = [];
  const inDoubtByPoint: Record<string, number> = {};
  let duplicateCalls = 0;
  let inDoubt = 0;
  for (const r of results) {
    duplicateCalls += r.duplicates.length;
    inDoubt += r.inDoubt;
    if (r.inDoubt > 0) inDoubtByPoint[`${r.po.point}:${r.po.occurrence}`] = r.inDoubt;
    if (r.divergences.length === 0 && r.duplicates.length === 0) continue;
    const keptAt = r.keptAt;
    failed.push({
      point: r.po.point, occurrence: r.po.occurrence, divergence: summarize(r), divergences: r.divergences, duplicates: r.duplicates,
      reproduce: reproduceCommand(opts.blueprint, r.po, opts.env), ...(keptAt ? { keptAt } : {}),
    });
  }
  const cleanCalls = { planner: clean.ledger.filter((c) => c.kind === 'planner').length, worker: clean.ledger.filter((c) => c.kind === 'worker').length };
  return {
    blueprint: opts.blueprint,
    enumerated: clean.points.length,
    points: chosen.length,
    passed: results.length - failed.length,
    failed,
    duplicateCalls,
    inDoubtReinvocations: inDoubt,
    inDoubtByPoint,
    seed: opts.seed,
    jobs: opts.jobs,
    durationMs: Math.round(performance.now() - t0),
    clean: { events: clean.events, outcome: clean.observed.fingerprint.outcome, durationMs: Math.round(clean.durationMs), plannerCalls: cleanCalls.planner, workerCalls: cleanCalls.worker },
  };
}
