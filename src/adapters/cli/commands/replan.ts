import { decideReplan } from '../../../commands/operator.js';
import { UsageError } from '../../../events/errors.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';
import { operatorText } from './approve.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, asks: { type: 'int' }, as: { type: 'string' }, 'signing-key': { type: 'string' } };

export interface ReplanOutput {
  readonly purpose: 'seal' | 'renew' | 'repair';
  readonly horizonRevision: number;
  readonly asks: number;
  readonly position: number;
}

/** `longbuild replan [--reason TEXT] [--asks N]`: a build blocked in planning asks its planner again (PlanningReopened). */
export async function run(ctx: CommandContext): Promise<ReplanOutput> {
  const reason = operatorText(ctx, 'replan', 'reason', false);
  const asks = ctx.flags.asks;
  if (asks !== undefined && (typeof asks !== 'number' || asks < 1 || asks > 10)) throw new UsageError('replan: --asks must be a whole number from 1 to 10');
  return operate(ctx, 'replan', (state, user) => decideReplan(state, reason, asks as number | undefined, user), (_before, after, event) => {
    const d = event.data as { purpose: ReplanOutput['purpose']; horizonRevision: number; asks: number };
    return { purpose: d.purpose, horizonRevision: d.horizonRevision, asks: d.asks, position: after.position };
  });
}

const ROUND = { seal: 'the first plan', renew: 'the renewal', repair: 'the repair window' } as const;

export function render(d: ReplanOutput): string {
  return `${ROUND[d.purpose]} (horizon revision ${d.horizonRevision}) gets ${d.asks} more ask${d.asks === 1 ? '' : 's'} of the planner, recorded at position ${d.position}; the build is unblocked\nnext: longbuild run\n`;
}
