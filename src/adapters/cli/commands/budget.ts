import { decideBudget } from '../../../commands/operator.js';
import { describeBudget, formatCount, formatUsd, NO_SPEND, tokensOf, usdOf } from '../../../commands/spend.js';
import type { Budget, SpendLimit } from '../../../events/catalogue.js';
import { UsageError } from '../../../events/errors.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';
import { operatorText } from './approve.js';

const LIMIT_FLAGS = {
  usd: ['usd', 'usd'], tokens: ['tokens', 'tokens'],
  'per-node-usd': ['perNode', 'usd'], 'per-node-tokens': ['perNode', 'tokens'],
  'per-milestone-usd': ['perMilestone', 'usd'], 'per-milestone-tokens': ['perMilestone', 'tokens'],
} as const;

export const flags: Record<string, FlagSpec> = {
  ...Object.fromEntries(Object.keys(LIMIT_FLAGS).map((k) => [k, { type: 'string' } as FlagSpec])),
  reason: { type: 'string' }, 'signing-key': { type: 'string' },
};

export interface BudgetOutput {
  readonly budget: Budget;
  readonly spent: { readonly usd: number; readonly tokens: number; readonly calls: number };
  readonly position: number;
}

/** `longbuild budget --usd N …`: the build's budget from now on (BudgetChanged, R-59); a paused build goes on at the next run. */
export async function run(ctx: CommandContext): Promise<BudgetOutput> {
  const change: { usd?: number; tokens?: number; perNode?: SpendLimit; perMilestone?: SpendLimit } = {};
  for (const [flag, [scope, unit]] of Object.entries(LIMIT_FLAGS)) {
    const raw = ctx.flags[flag];
    if (raw === undefined) continue;
    const value = Number(raw);
    const whole = unit === 'tokens';
    if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(value) || value <= 0 || (whole && !Number.isSafeInteger(value))) {
      throw new UsageError(`budget: --${flag} must be a positive ${whole ? 'whole number' : 'number'} (${whole ? 'tokens' : 'USD'}), got '${String(raw)}'`);
    }
    if (scope === 'usd' || scope === 'tokens') change[scope] = value;
    else change[scope] = { ...change[scope], [unit]: value };
  }
  if (Object.keys(change).length === 0) throw new UsageError(`budget: give at least one limit: ${Object.keys(LIMIT_FLAGS).map((f) => `--${f}`).join(', ')}`);
  const reason = operatorText(ctx, 'budget', 'reason', false);
  return operate(ctx, 'budget', (state, user) => decideBudget(state, change, reason, user), (_before, after, event) => {
    const t = after.spend?.total ?? NO_SPEND;
    return { budget: (event.data as { budget: Budget }).budget, spent: { usd: usdOf(t), tokens: tokensOf(t), calls: t.calls }, position: after.position };
  });
}

export function render(d: BudgetOutput): string {
  return `budget from now on: ${describeBudget(d.budget)} (recorded at position ${d.position}); spent so far ${formatUsd(d.spent.usd)}, ${formatCount(d.spent.tokens)} tokens in ${d.spent.calls} call${d.spent.calls === 1 ? '' : 's'}\nnext: longbuild run\n`;
}
