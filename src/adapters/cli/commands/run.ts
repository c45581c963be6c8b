import type { CommandContext, FlagSpec } from '../types.js';
import { defaultProgressMode, Progress, PROGRESS_MODES, useColor, type CallInFlight, type ProgressMode } from '../progress.js';
import { runBuild, type RunOutput } from '../../app/drive-build.js';
import { UsageError } from '../../../events/errors.js';
import { tracesUrl } from './otel.js';
import { boundHeapGrowth } from '../heap-growth.js';

export const flags: Record<string, FlagSpec> = { 'max-steps': { type: 'int' }, standby: { type: 'boolean' }, 'signing-key': { type: 'string' }, progress: { type: 'string' }, otel: { type: 'string' } };

export type { RunOutput };

/** Advance until horizon_complete, blocked, paused (the budget, R-59) or --max-steps. Progress goes to stderr on a terminal. */
export async function run(ctx: CommandContext): Promise<RunOutput> {
  const max = ctx.flags['max-steps'];
  if (max !== undefined && (typeof max !== 'number' || max < 1)) throw new UsageError('run: --max-steps must be a positive integer');
  const isTty = process.stderr.isTTY === true;
  const mode = progressMode(ctx, isTty);
  if (mode === 'ndjson' && !ctx.json) throw new UsageError('run: --progress ndjson streams JSON on stdout; give --json as well');
  const otelUrl = typeof ctx.flags.otel === 'string' ? tracesUrl(ctx.flags.otel, 'run: --otel') : null;
  boundHeapGrowth(); // a run may go on for days: its heap stays near what it holds
  let calls: () => readonly CallInFlight[] = () => [];
  const progress = new Progress({ write: ctx.stderr, writeJson: ctx.stdout, mode, color: useColor(ctx.env, isTty), columns: process.stderr.columns ?? 100, calls: () => calls() });
  return runBuild(ctx, {
    ...(typeof max === 'number' ? { maxSteps: max } : {}),
    otelUrl,
    reporter: { watch: (c) => { calls = c; }, begin: (st) => progress.begin(st), step: (r, st) => progress.step(r, st), finish: () => progress.finish() },
  });
}

/** `--progress tty|lines|ndjson|off`; default: tty on a terminal, lines in a pipe, off with --json. */
function progressMode(ctx: CommandContext, isTty: boolean): ProgressMode {
  const asked = ctx.flags.progress;
  if (asked === undefined) return defaultProgressMode(ctx.json, isTty);
  if (typeof asked !== 'string' || !(PROGRESS_MODES as readonly string[]).includes(asked)) {
    throw new UsageError(`run: --progress must be one of ${PROGRESS_MODES.join(', ')}, got '${String(asked)}'`);
  }
  return asked as ProgressMode;
}

export function render(d: RunOutput): string {
  const counts = Object.entries(d.outcomes).map(([k, v]) => `${k} ${v}`).join(', ');
  const result = d.outcome === 'horizon_complete' && d.integrationHead ? `  the result is on ${d.integrationRef ?? 'the integration ref'}; \`longbuild land\` brings it into your branch\n`
    : d.outcome === 'paused' || d.outcome === 'awaiting_approval' ? `  ${d.reason ?? d.outcome}\n` : '';
  return `${d.outcome} after ${d.steps} steps (${counts})\n  position ${d.position}, graph revision ${d.graphRevision}, integration head ${d.integrationHead ?? '-'}\n${result}`;
}

export function failure(d: RunOutput): string | undefined {
  return d.outcome === 'blocked' ? `build blocked: ${d.reason ?? 'see longbuild status'}` : undefined;
}
