/**
 * The spend ledger: what the build's calls used, folded from the events that
 * record each call. Pricing, reports and budgets are src/commands/spend.ts.
 */
import type { Usage } from '../events/catalogue.js';
import { shardEntries, shardGet, type Sharded } from './sharded.js';

/** What a set of calls used. Costs are summed in nano-dollars (integers): the sum does not depend on the order. */
export interface SpendTotals {
  /** Calls made (a re-invoked call counts again: the provider billed it). */
  readonly calls: number;
  /** Of those, calls that reported what they used. */
  readonly reported: number;
  /** Of those, calls whose cost is known (reported or priced). */
  readonly costed: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly costNanoUsd: number;
}

export const NO_SPEND: SpendTotals = { calls: 0, reported: 0, costed: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, costNanoUsd: 0 };

/** The build's ledger: everything, the planner's calls, each milestone's worker calls; each node's sits on its node record. */
export interface SpendLedger {
  readonly total: SpendTotals;
  readonly planner: SpendTotals;
  /**
   * Each milestone's worker calls, by milestone id: sharded (state version 12, decision 0056), as a
   * record of every milestone the build charged made each call's fold copy it whole — O(milestones)
   * a node, 11 % of a 20,000-node `run`.
   */
  readonly milestones: Sharded<SpendTotals>;
  /** Calls made again after a crash whose first invocation left no report (what it used is unknown). */
  readonly unknownReinvocations: number;
}

export const EMPTY_LEDGER: SpendLedger = { total: NO_SPEND, planner: NO_SPEND, milestones: [], unknownReinvocations: 0 };

/** What milestone `milestoneId`'s worker calls used so far. */
export function milestoneSpent(ledger: SpendLedger | undefined, milestoneId: string): SpendTotals {
  return (ledger === undefined ? undefined : shardGet(ledger.milestones, milestoneId)) ?? NO_SPEND;
}

/** `t` with one more call, and what it used when it reported it. */
export function withCall(t: SpendTotals, usage: Usage | undefined): SpendTotals {
  if (usage === undefined) return { ...t, calls: t.calls + 1 };
  return {
    calls: t.calls + 1,
    reported: t.reported + 1,
    costed: t.costed + (usage.costUsd !== undefined ? 1 : 0),
    inputTokens: t.inputTokens + usage.inputTokens,
    outputTokens: t.outputTokens + usage.outputTokens,
    cachedTokens: t.cachedTokens + (usage.cachedTokens ?? 0),
    costNanoUsd: t.costNanoUsd + nanoUsd(usage.costUsd ?? 0),
  };
}

export const nanoUsd = (usd: number): number => Math.round(usd * 1e9);
export const usdOf = (t: SpendTotals): number => t.costNanoUsd / 1e9;
/** Tokens a limit counts: input and output (cached input is part of input). */
export const tokensOf = (t: SpendTotals): number => t.inputTokens + t.outputTokens;


/** A total as `--json` gives it: USD (null when no call's cost is known), tokens, and the calls behind them. */
export interface SpendJson {
  readonly usd: number | null;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly calls: number;
  /** Calls that reported what they used; the rest are unknown. */
  readonly reported: number;
  /** Calls whose cost is known (reported by the agent, or priced). */
  readonly costed: number;
}

export function spendJson(t: SpendTotals): SpendJson {
  return { usd: t.costed > 0 ? usdOf(t) : null, inputTokens: t.inputTokens, outputTokens: t.outputTokens, cachedTokens: t.cachedTokens, calls: t.calls, reported: t.reported, costed: t.costed };
}

/** The whole ledger as `status --json` and `show --json` give it. */
export interface LedgerJson extends SpendJson {
  readonly planner: SpendJson;
  readonly milestones: Readonly<Record<string, SpendJson>>;
  /** Calls made again after a crash whose first invocation's usage is unknown (counted as made). */
  readonly unknownReinvocations: number;
}

export function ledgerJson(l: SpendLedger | undefined): LedgerJson {
  const ledger = l ?? EMPTY_LEDGER;
  return {
    ...spendJson(ledger.total), planner: spendJson(ledger.planner),
    // By id: the ledger's own order is its buckets', and `--json` is the same whichever way it was read.
    milestones: Object.fromEntries([...shardEntries(ledger.milestones)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([id, t]) => [id, spendJson(t)])),
    unknownReinvocations: ledger.unknownReinvocations,
  };
}
