import type { StepOutcome, StepResult } from '../../controller/controller.js';
import { rankReadyWave, activeMilestone } from '../../../projections/graph.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withBuild } from '../with-build.js';
import { withControl } from '../with-control.js';
import { UsageError } from '../../../events/errors.js';
import { throwIfInterrupted } from '../../interrupt.js';

export const flags: Record<string, FlagSpec> = { 'max-steps': { type: 'int' }, standby: { type: 'boolean' }, 'signing-key': { type: 'string' } };

export interface RunOutput {
  readonly outcome: StepOutcome;
  readonly steps: number;
  readonly position: number;
  readonly graphRevision: number;
  readonly integrationHead: string | null;
  readonly integrationRef: string | null;
  readonly reason?: string;
  readonly outcomes: Partial<Record<StepOutcome, number>>;
}

/** Advance until horizon_complete, blocked, or --max-steps. Progress goes to stderr on a terminal. */
export async function run(ctx: CommandContext): Promise<RunOutput> {
  const max = ctx.flags['max-steps'];
  if (max !== undefined && (typeof max !== 'number' || max < 1)) throw new UsageError('run: --max-steps must be a positive integer');
  const limit = typeof max === 'number' ? max : Number.POSITIVE_INFINITY;
  const progress = !ctx.json && process.stderr.isTTY === true;
  return withControl(ctx, (lease) => withBuild(ctx, async (s) => {
    const outcomes: Partial<Record<StepOutcome, number>> = {};
    let steps = 0;
    let last: StepResult | null = null;
    while (steps < limit) {
      throwIfInterrupted();
      last = await s.advance();
      steps += 1;
      outcomes[last.outcome] = (outcomes[last.outcome] ?? 0) + 1;
      if (progress) {
        const st = s.controller.current;
        const ready = rankReadyWave(st);
        ctx.stderr(`\r\x1b[2K[${String(steps).padStart(4)}] ${last.outcome.padEnd(16)} ${truncate(last.detail, 60)}  milestone ${activeMilestone(st) ?? '-'}  ready ${ready.length}`);
      }
      if (last.outcome === 'horizon_complete' || last.outcome === 'blocked') break;
    }
    if (progress) ctx.stderr('\n');
    const st = s.controller.current;
    return {
      outcome: last?.outcome ?? 'horizon_complete',
      steps,
      position: st.position,
      graphRevision: st.graphRevision,
      integrationHead: st.integrationHead,
      integrationRef: st.build?.integrationRef ?? null,
      ...(last?.reason !== undefined ? { reason: last.reason } : {}),
      outcomes,
    };
  }, { appendFence: lease.appendFence, ...(lease.assertHeld ? { beforeAppend: lease.assertHeld } : {}) }));
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

export function render(d: RunOutput): string {
  const counts = Object.entries(d.outcomes).map(([k, v]) => `${k} ${v}`).join(', ');
  const result = d.outcome === 'horizon_complete' && d.integrationHead ? `  the result is on ${d.integrationRef ?? 'the integration ref'}; \`longbuild land\` brings it into your branch\n` : '';
  return `${d.outcome} after ${d.steps} steps (${counts})\n  position ${d.position}, graph revision ${d.graphRevision}, integration head ${d.integrationHead ?? '-'}\n${result}`;
}

export function failure(d: RunOutput): string | undefined {
  return d.outcome === 'blocked' ? `build blocked: ${d.reason ?? 'see longbuild status'}` : undefined;
}
