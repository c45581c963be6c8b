import { awaitingProposal, decideApprove } from '../../../commands/operator.js';
import { UsageError, ValidationError } from '../../../events/errors.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../operate.js';
import { withReading } from '../with-reading.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, as: { type: 'string' }, show: { type: 'boolean' }, 'signing-key': { type: 'string' } };

export interface ApproveOutput {
  readonly callId: string;
  readonly purpose: 'seal' | 'renew' | 'repair';
  /** With --show: the proposal awaiting approval (nothing recorded). */
  readonly proposal?: unknown;
  /** Without --show: where the approval was recorded. */
  readonly position?: number;
}

/** `longbuild approve [--reason TEXT] [--as NAME]`, or `--show`: the proposal awaiting approval. */
export async function run(ctx: CommandContext): Promise<ApproveOutput> {
  if (ctx.flags.show === true) {
    return withReading(ctx, async (s) => {
      const a = awaitingProposal(s.state);
      if (!a.ok) throw new ValidationError(`approve: ${a.reason}`);
      return { callId: a.callId, purpose: a.purpose, proposal: a.proposal };
    });
  }
  const reason = operatorText(ctx, 'approve', 'reason', false);
  return operate(ctx, 'approve', (state, user) => decideApprove(state, reason, user), (_before, after, event) => {
    const d = event.data as { callId: string };
    return { callId: d.callId, purpose: after.plannerCalls[d.callId]?.purpose ?? 'seal', position: after.position };
  });
}

/** A text flag of an operator command (`--reason`, `--as`): 1 to 2000 characters when given. */
export function operatorText(ctx: CommandContext, command: string, flag: string, required: boolean): string | undefined {
  const v = ctx.flags[flag];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v.trim() === '' || v.length > 2000) throw new UsageError(`${command}: --${flag} must be a text of 1 to 2000 characters`);
  return v;
}

const WHAT = { seal: 'the first plan', renew: 'the renewal', repair: 'the repair window' } as const;

export function render(d: ApproveOutput): string {
  if (d.proposal !== undefined) return `${WHAT[d.purpose]} (${d.callId}) awaiting approval:\n${JSON.stringify(d.proposal, null, 2)}\n`;
  return `${WHAT[d.purpose]} (${d.callId}) approved, recorded at position ${d.position}; the next run seals it\nnext: longbuild run\n`;
}
