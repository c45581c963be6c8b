/**
 * Spend: what calls used (R-58) and the budget they are held to (R-59). Pure: the
 * ledger is folded from the events that record each call's usage; a report is read, and priced,
 * here; whether the next call may start is decided here from state alone.
 */
import type { Budget, SpendLimit, Usage } from '../events/catalogue.js';
import { tokensOf, usdOf, type SpendTotals } from '../projections/spend-ledger.js';

export { EMPTY_LEDGER, NO_SPEND, ledgerJson, milestoneSpent, spendJson, tokensOf, usdOf, withCall, type LedgerJson, type SpendJson, type SpendLedger, type SpendTotals } from '../projections/spend-ledger.js';

/** USD, readably: two decimals from a cent up, four below. */
export function formatUsd(usd: number): string {
  return usd >= 0.01 || usd === 0 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`;
}

/**
 * An integer with thousands separators, `45,600`: what `toLocaleString('en-US')` gives, without
 * loading ICU's number formatting (about 10 ms of a reading command's start, decision 0033).
 */
export function formatCount(n: number): string {
  const digits = String(Math.abs(Math.trunc(n)));
  return `${n < 0 ? '-' : ''}${digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;
}

/** One line of what a set of calls used: `$1.23, 45,600 tokens (12 calls; 2 did not report)`. */
export function describeSpend(t: SpendTotals): string {
  if (t.calls === 0) return 'no calls';
  const unreported = t.calls - t.reported;
  const unpriced = t.reported - t.costed;
  const notes = [
    ...(unreported > 0 ? [`${unreported} did not report usage`] : []),
    ...(unpriced > 0 ? [`${unpriced} with unknown cost (no price for its model)`] : []),
  ];
  const cost = t.costed > 0 ? `${formatUsd(usdOf(t))}, ` : t.reported > 0 ? 'cost unknown, ' : '';
  const tokens = t.reported > 0 ? `${formatCount(tokensOf(t))} tokens ` : '';
  return `${cost}${tokens}(${t.calls} call${t.calls === 1 ? '' : 's'}${notes.length > 0 ? `; ${notes.join('; ')}` : ''})`;
}

/** Prices per model, USD per million tokens (config `prices`). */
export type Prices = Readonly<Record<string, { readonly input: number; readonly output: number; readonly cached?: number }>>;

/**
 * A report made a recorded usage: the agent's own cost when it gives one; else priced from
 * `prices` for its model (cached input at `cached`, else at `input`); else the cost is unknown.
 */
export function pricedUsage(report: Usage, prices: Prices | undefined): Usage {
  const { costFrom: _from, ...rest } = report;
  if (report.costUsd !== undefined) return { ...rest, costFrom: 'agent' };
  const price = report.model !== undefined ? prices?.[report.model] : undefined;
  if (price === undefined) return rest;
  const cached = Math.min(report.cachedTokens ?? 0, report.inputTokens);
  const usd = ((report.inputTokens - cached) * price.input + cached * (price.cached ?? price.input) + report.outputTokens * price.output) / 1e6;
  return { ...rest, costUsd: Math.round(usd * 1e9) / 1e9, costFrom: 'prices' };
}

/** A limit `spent` has reached (USD first), or null. */
export function reachedLimit(spent: SpendTotals, limit: SpendLimit | undefined): { unit: 'usd' | 'tokens'; limit: number; spent: number } | null {
  if (limit === undefined) return null;
  if (limit.usd !== undefined && usdOf(spent) >= limit.usd) return { unit: 'usd', limit: limit.usd, spent: usdOf(spent) };
  if (limit.tokens !== undefined && tokensOf(spent) >= limit.tokens) return { unit: 'tokens', limit: limit.tokens, spent: tokensOf(spent) };
  return null;
}

/** `limit` and what was spent, readably: `$2.00 spent of the build's $2.00 budget`. */
export function describeReached(r: { unit: 'usd' | 'tokens'; limit: number; spent: number }, whose: string): string {
  return r.unit === 'usd'
    ? `${formatUsd(r.spent)} spent of ${whose} ${formatUsd(r.limit)} budget`
    : `${formatCount(r.spent)} tokens spent of ${whose} budget of ${formatCount(r.limit)}`;
}

/** A budget with the limits of `change` replacing those it names (`budget --usd N` keeps the token limit). */
export function changedBudget(current: Budget | undefined, change: Budget): Budget {
  const merge = (a: SpendLimit | undefined, b: SpendLimit | undefined): SpendLimit | undefined => (a === undefined ? b : b === undefined ? a : { ...a, ...b });
  const perNode = merge(current?.perNode, change.perNode);
  const perMilestone = merge(current?.perMilestone, change.perMilestone);
  return {
    ...(current?.usd !== undefined ? { usd: current.usd } : {}), ...(current?.tokens !== undefined ? { tokens: current.tokens } : {}),
    ...(change.usd !== undefined ? { usd: change.usd } : {}), ...(change.tokens !== undefined ? { tokens: change.tokens } : {}),
    ...(perNode !== undefined ? { perNode } : {}), ...(perMilestone !== undefined ? { perMilestone } : {}),
  };
}

/** A budget in one line: `$5.00, 2,000,000 tokens; per node $1.00`. */
export function describeBudget(b: Budget | undefined): string {
  if (b === undefined) return 'none';
  const limit = (l: SpendLimit) => [l.usd !== undefined ? formatUsd(l.usd) : null, l.tokens !== undefined ? `${formatCount(l.tokens)} tokens` : null].filter((x) => x !== null).join(', ');
  const parts = [limit(b), b.perNode ? `per node ${limit(b.perNode)}` : '', b.perMilestone ? `per milestone ${limit(b.perMilestone)}` : ''].filter((x) => x !== '');
  return parts.length > 0 ? parts.join('; ') : 'none';
}
