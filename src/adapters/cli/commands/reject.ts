import { decideReject } from '../../../commands/operator.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';
import { approvedWhat, operatorText, outputOf, type ApproveOutput } from './approve.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, as: { type: 'string' }, 'signing-key': { type: 'string' } };

export type RejectOutput = ApproveOutput;

/**
 * `longbuild reject --reason TEXT [--as NAME]`: a proposal awaiting approval goes back to the
 * planner with the reason; a rejected checkpoint or final head is repaired (the reason is the
 * planner's feedback; once no coarse milestone is left, a repair window).
 */
export async function run(ctx: CommandContext): Promise<RejectOutput> {
  const reason = operatorText(ctx, 'reject', 'reason', true)!;
  return operate(ctx, 'reject', (state, user) => decideReject(state, reason, user), (_before, after, event) => outputOf(after, event));
}

export function render(d: RejectOutput): string {
  const then = d.gate === 'plan' ? 'the next run asks the planner again with your reason' : 'the planner gets your reason at its next call (a renewal, or a repair window when no coarse milestone is left)';
  return `${approvedWhat(d)} rejected, recorded at position ${d.position}; ${then}\nnext: longbuild run\n`;
}
