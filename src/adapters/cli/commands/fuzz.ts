import { resolve } from 'node:path';
import { UsageError } from '../../../events/errors.js';
import { parsePointOccurrence, type PointOccurrence } from '../../../commands/fuzz-compare.js';
import { fuzz, type FuzzReport } from '../../fuzz/runner.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = {
  blueprint: { type: 'string' },
  points: { type: 'string' },
  seed: { type: 'int' },
  jobs: { type: 'int' },
  only: { type: 'string', repeatable: true },
  'keep-failed': { type: 'boolean' },
};

/** Crash a controller at interruption points of a build of the blueprint, resume, compare (issue 7). */
export async function run(ctx: CommandContext): Promise<FuzzReport> {
  const bp = ctx.flags.blueprint;
  if (typeof bp !== 'string' || bp === '') throw new UsageError('fuzz: --blueprint FILE is required');
  const rawPoints = ctx.flags.points ?? 'all';
  let points: number | 'all';
  if (rawPoints === 'all') points = 'all';
  else if (typeof rawPoints === 'string' && /^[1-9]\d{0,6}$/.test(rawPoints)) points = Number(rawPoints);
  else throw new UsageError(`fuzz: --points must be 'all' or a positive integer, got '${String(rawPoints)}'`);
  const jobs = typeof ctx.flags.jobs === 'number' ? ctx.flags.jobs : 1;
  if (jobs < 1 || jobs > 64) throw new UsageError('fuzz: --jobs must be between 1 and 64');
  const only: PointOccurrence[] = [];
  for (const spec of (ctx.flags.only as string[] | undefined) ?? []) {
    const po = parsePointOccurrence(spec);
    if (po === null) throw new UsageError(`fuzz: --only takes POINT:K with K ≥ 1 (e.g. after-effect:worker:1), got '${spec}'`);
    only.push(po);
  }
  const progress = !ctx.json && process.stderr.isTTY === true;
  const report = await fuzz({
    blueprint: resolve(ctx.cwd, bp),
    points,
    seed: typeof ctx.flags.seed === 'number' ? ctx.flags.seed : 1,
    jobs,
    only,
    env: ctx.env,
    keepFailed: ctx.flags['keep-failed'] === true,
    ...(progress ? { onProgress: (p) => ctx.stderr(`\r\x1b[2K[${p.done}/${p.total}] ${p.failed} failed  ${p.last}`) } : {}),
  });
  if (progress) ctx.stderr('\n');
  // The reproduce command names the blueprint as the user gave it.
  return { ...report, blueprint: bp, failed: report.failed.map((f) => ({ ...f, reproduce: f.reproduce.replace(resolve(ctx.cwd, bp), bp) })) };
}

export function render(d: FuzzReport): string {
  const lines = [
    `${d.failed.length === 0 ? 'ok' : 'FAILED'}: ${d.passed}/${d.points} interruption points passed (${d.enumerated} enumerated by the clean run, seed ${d.seed}, ${d.jobs} job${d.jobs === 1 ? '' : 's'}, ${(d.durationMs / 1000).toFixed(1)} s)`,
    `clean run: ${d.clean.outcome}, ${d.clean.events} events, ${d.clean.plannerCalls} planner and ${d.clean.workerCalls} worker calls`,
    `duplicate calls: ${d.duplicateCalls}; in-doubt re-invocations: ${d.inDoubtReinvocations}${d.inDoubtReinvocations ? ` (${Object.keys(d.inDoubtByPoint).join(', ')})` : ''}`,
  ];
  for (const f of d.failed) {
    lines.push(`FAIL ${f.point}:${f.occurrence}: ${f.divergence}`);
    for (const x of f.divergences.slice(1)) lines.push(`     also ${x.what} (${x.rule})`);
    for (const x of f.duplicates) lines.push(`     duplicate ${x.kind} call ${x.key} (${x.rule}): ${x.problem}`);
    lines.push(`     reproduce: ${f.reproduce}${f.keptAt ? `   (kept: ${f.keptAt})` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}

export function failure(d: FuzzReport): string | undefined {
  return d.failed.length > 0 ? `${d.failed.length} of ${d.points} interruption points diverged from the uninterrupted run` : undefined;
}
