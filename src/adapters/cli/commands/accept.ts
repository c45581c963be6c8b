import { decideAcceptanceRun } from '../../../commands/operator.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, 'signing-key': { type: 'string' } };

export interface AcceptOutput {
  readonly position: number;
  readonly head: string | null;
  /** The run this replaces in what the build goes by: the newest finished one, if any. */
  readonly previous: { readonly runId: string; readonly passed: boolean; readonly reason?: string } | null;
}

/** `longbuild accept [--reason TEXT]`: the acceptance commands run again on the head as it is (recorded as AcceptanceRequested). */
export async function run(ctx: CommandContext): Promise<AcceptOutput> {
  const reason = typeof ctx.flags.reason === 'string' ? ctx.flags.reason : undefined;
  return operate(ctx, 'accept', (state, user) => decideAcceptanceRun(state, reason, user), (before, after) => {
    const prev = before.acceptance?.latest == null ? null : before.acceptance.runs[before.acceptance.latest]!;
    return {
      position: after.position, head: after.integrationHead,
      previous: prev === null ? null : { runId: prev.runId, passed: prev.status === 'passed', ...(prev.reason !== undefined ? { reason: prev.reason } : {}) },
    };
  });
}

export function render(d: AcceptOutput): string {
  const before = d.previous === null ? '' : ` (the last run, ${d.previous.runId}, ${d.previous.passed ? 'passed' : `failed: ${d.previous.reason ?? 'a command failed'}`})`;
  return `an acceptance run on ${d.head?.slice(0, 12) ?? '-'} is asked for, recorded at position ${d.position}${before}\nnext: longbuild run\n`;
}
