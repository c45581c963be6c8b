import { resolve } from 'node:path';
import { UsageError } from '../../../events/errors.js';
import { parsePointOccurrence, type PointOccurrence } from '../../../commands/fuzz-compare.js';
import { fuzz } from '../../fuzz/runner.js';
import { caseName, FUZZ_FAULTS, START_FROM, writeReport, type FuzzDriver, type FuzzFault, type FuzzReport, type StartFrom } from '../../fuzz/report.js';
import { SNAPSHOT_MODES, type SnapshotMode } from '../../fuzz/cli-snapshot.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = {
  blueprint: { type: 'string' }, request: { type: 'string' }, config: { type: 'string' }, faults: { type: 'string' }, log: { type: 'string' },
  double: { type: 'boolean' }, 'double-points': { type: 'string' }, 'only-second': { type: 'string', repeatable: true },
  'random-kill': { type: 'int' }, 'kill-at-ms': { type: 'int' }, report: { type: 'string' }, 'minimise-trials': { type: 'int' },
  points: { type: 'string' }, seed: { type: 'int' }, jobs: { type: 'int' }, only: { type: 'string', repeatable: true },
  'keep-failed': { type: 'boolean' }, 'start-from': { type: 'string' }, snapshot: { type: 'string' },
};

/** Crash (or otherwise fault) a controller at interruption points of a build, resume, compare. */
export async function run(ctx: CommandContext): Promise<FuzzReport> {
  const str = (name: string): string | undefined => (typeof ctx.flags[name] === 'string' && ctx.flags[name] !== '' ? ctx.flags[name] as string : undefined);
  const bp = str('blueprint');
  const request = str('request');
  const config = str('config');
  if (bp !== undefined && (request !== undefined || config !== undefined)) throw new UsageError('fuzz: give --blueprint FILE, or --request FILE --config FILE, not both');
  if (bp === undefined && (request === undefined || config === undefined)) throw new UsageError('fuzz: --blueprint FILE is required (or --request FILE --config FILE for a command-driven build)');
  const driver: FuzzDriver = bp !== undefined ? { blueprint: resolve(ctx.cwd, bp) } : { request: resolve(ctx.cwd, request!), config: resolve(ctx.cwd, config!) };
  const count = (name: string, raw: unknown): number | 'all' => {
    if (raw === 'all') return 'all';
    if (typeof raw === 'string' && /^[1-9]\d{0,6}$/.test(raw)) return Number(raw);
    throw new UsageError(`fuzz: --${name} must be 'all' or a positive integer, got '${String(raw)}'`);
  };
  const points = count('points', ctx.flags.points ?? 'all');
  const jobs = typeof ctx.flags.jobs === 'number' ? ctx.flags.jobs : 1;
  if (jobs < 1 || jobs > 64) throw new UsageError('fuzz: --jobs must be between 1 and 64');
  const pointsOf = (name: string): PointOccurrence[] => ((ctx.flags[name] as string[] | undefined) ?? []).map((spec) => {
    const po = parsePointOccurrence(spec);
    if (po === null) throw new UsageError(`fuzz: --${name} takes POINT:K with K ≥ 1 (e.g. after-effect:worker:1), got '${spec}'`);
    return po;
  });
  const only = pointsOf('only');
  const onlySecond = pointsOf('only-second');
  const faults = (str('faults') ?? 'kill').split(',').map((f) => f.trim());
  for (const f of faults) if (!(FUZZ_FAULTS as readonly string[]).includes(f)) throw new UsageError(`fuzz: unknown fault '${f}' in --faults (kinds: ${FUZZ_FAULTS.join(', ')})`);
  const log = str('log');
  if (log !== undefined && !/^postgres(ql)?:postgres(ql)?:\/\//.test(log)) throw new UsageError(`fuzz: --log takes postgres:postgres://USER:PASS@HOST:PORT/DB (the builds' logs, one schema each), got '${log}'`);
  if (faults.includes('db-down') && log === undefined) throw new UsageError('fuzz: --faults db-down needs --log postgres:URL (the database the builds\' logs live in, reached through an outage proxy)');
  const double = ctx.flags.double === true || ctx.flags['double-points'] !== undefined || onlySecond.length > 0 ? count('double-points', ctx.flags['double-points'] ?? 'all') : undefined;
  const randomKills = typeof ctx.flags['random-kill'] === 'number' ? ctx.flags['random-kill'] : undefined;
  if (randomKills !== undefined && (randomKills < 1 || randomKills > 100_000)) throw new UsageError('fuzz: --random-kill must be a positive number of builds');
  const killAtMs = typeof ctx.flags['kill-at-ms'] === 'number' ? ctx.flags['kill-at-ms'] : undefined;
  if (killAtMs !== undefined && (randomKills === undefined || killAtMs < 0)) throw new UsageError('fuzz: --kill-at-ms MS goes with --random-kill N (MS ≥ 0)');
  const startFrom = str('start-from') ?? 'auto';
  if (!(START_FROM as readonly string[]).includes(startFrom)) throw new UsageError(`fuzz: --start-from takes ${START_FROM.join(', ')} (where each case starts), got '${startFrom}'`);
  if (startFrom === 'stops' && log !== undefined) throw new UsageError('fuzz: --start-from stops cannot be used with --log (a build whose log is in PostgreSQL is not copied; its cases start from the start)');
  const snapshot = str('snapshot') ?? 'auto';
  if (!(SNAPSHOT_MODES as readonly string[]).includes(snapshot)) throw new UsageError(`fuzz: --snapshot takes ${SNAPSHOT_MODES.join(', ')} (start the cases' runs from a start-up snapshot of the CLI), got '${snapshot}'`);
  const progress = !ctx.json && process.stderr.isTTY === true;
  const report = await fuzz({
    driver,
    points,
    seed: typeof ctx.flags.seed === 'number' ? ctx.flags.seed : 1,
    jobs,
    only,
    faults: faults as FuzzFault[],
    ...(double !== undefined ? { double } : {}),
    ...(onlySecond.length > 0 ? { onlySecond } : {}),
    ...(randomKills !== undefined ? { randomKills } : {}),
    ...(killAtMs !== undefined ? { killAtMs } : {}),
    ...(log !== undefined ? { log } : {}),
    env: ctx.env,
    keepFailed: ctx.flags['keep-failed'] === true,
    startFrom: startFrom as StartFrom,
    snapshot: snapshot as SnapshotMode,
    // Minimisation shrinks the blueprint (20 candidates by default; 0 turns it off).
    minimiseTrials: bp === undefined ? 0 : typeof ctx.flags['minimise-trials'] === 'number' ? ctx.flags['minimise-trials'] : 20,
    minimalDir: ctx.cwd,
    ...(progress ? { onProgress: (p) => ctx.stderr(`\r\x1b[2K[${p.done}/${p.total}] ${p.failed} failed  ${p.last}`) } : {}),
  });
  if (progress) ctx.stderr('\n');
  // The report and the reproduce commands name the files as the user gave them.
  const given = (s: string): string => [bp, request, config].reduce((t: string, name) => (name === undefined ? t : t.split(resolve(ctx.cwd, name)).join(name)), s);
  const out: FuzzReport = {
    ...report,
    ...(bp !== undefined ? { blueprint: bp } : { request: request!, config: config! }),
    failed: report.failed.map((f) => ({ ...f, reproduce: given(f.reproduce) })),
  };
  const reportPath = str('report');
  if (reportPath !== undefined) writeReport(resolve(ctx.cwd, reportPath), out);
  return out;
}

export function render(d: FuzzReport): string {
  const lines = [
    `${d.failed.length === 0 ? 'ok' : 'FAILED'}: ${d.passed}/${d.points - d.notInterrupted} cases passed (faults ${d.faults.join(', ')}; ${d.enumerated} points enumerated by the clean run, seed ${d.seed}, ${d.jobs} job${d.jobs === 1 ? '' : 's'}, ${(d.durationMs / 1000).toFixed(1)} s)${d.notInterrupted ? `; ${d.notInterrupted} random kill(s) came after the build ended` : ''}`,
    `clean run: ${d.clean.outcome}, ${d.clean.events} events, ${d.clean.plannerCalls} planner and ${d.clean.workerCalls} worker calls`,
    ...(d.starts.fromStop > 0 || d.starts.fellBack > 0 ? [`starts: ${d.starts.fromStop} case(s) started where the clean run stood (${d.starts.stops} stops found by a staged run in ${(d.starts.stagedMs / 1000).toFixed(1)} s; ${d.starts.pointsSkipped} points not run again)${d.starts.fellBack > 0 ? `; ${d.starts.fellBack} left its path and ran from the start` : ''}`] : []),
    ...(d.snapshot.used ? [`start-up snapshot: the cases' runs started from a snapshot of the CLI (built in ${((d.snapshot.buildMs ?? 0) / 1000).toFixed(1)} s)`] : d.snapshot.reason !== undefined ? [`start-up snapshot: not used, the cases' runs started bin/longbuild.js (${d.snapshot.reason})`] : []),
    ...(d.inFlight !== undefined ? [`calls in flight: the clean run passed through ${d.inFlight.combinations} distinct sets of calls in flight (${d.inFlight.kinds.join('; ') || 'one call at a time'}); the faults struck ${d.inFlight.covered} of them`] : []),
    `duplicate calls: ${d.duplicateCalls}; in-doubt re-invocations: ${d.inDoubtReinvocations}${d.inDoubtReinvocations ? ` (${Object.keys(d.inDoubtByPoint).join(', ')})` : ''}; effects started again: planner ${d.repeatedEffects.planner}, worker ${d.repeatedEffects.worker}, verify ${d.repeatedEffects.verify}, promote ${d.repeatedEffects.promote}`,
  ];
  for (const f of d.failed) {
    lines.push(`FAIL ${caseName(f)}: ${f.divergence}`);
    for (const x of f.divergences.slice(1)) lines.push(`     also ${x.what} (${x.rule})`);
    for (const x of f.duplicates) lines.push(`     duplicate ${x.kind} call ${x.key} (${x.rule}): ${x.problem}`);
    lines.push(`     reproduce: ${f.reproduce}${f.keptAt ? `   (kept: ${f.keptAt})` : ''}`);
    if (f.minimal) lines.push(`     smallest found (${f.minimal.milestones} milestone(s), ${f.minimal.nodes} node(s), ${f.minimal.trials} candidates tried): ${f.minimal.reproduce}`);
  }
  return `${lines.join('\n')}\n`;
}

export function failure(d: FuzzReport): string | undefined {
  return d.failed.length > 0 ? `${d.failed.length} of ${d.points} cases diverged from the uninterrupted run` : undefined;
}
