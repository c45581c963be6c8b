import { decideReject } from '../../../commands/operator.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../operate.js';
import { operatorText } from './approve.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, as: { type: 'string' }, 'signing-key': { type: 'string' } };

export interface RejectOutput {
  readonly callId: string;
  readonly position: number;
}

/** `longbuild reject --reason TEXT [--as NAME]`: the proposal awaiting approval goes back to the planner with the reason. */
export async function run(ctx: CommandContext): Promise<RejectOutput> {
  const reason = operatorText(ctx, 'reject', 'reason', true)!;
  return operate(ctx, 'reject', (state, user) => decideReject(state, reason, user), (_before, after, event) => ({ callId: (event.data as { callId: string }).callId, position: after.position }));
}

export function render(d: RejectOutput): string {
  return `${d.callId} rejected, recorded at position ${d.position}; the next run asks the planner again with your reason\nnext: longbuild run\n`;
}
