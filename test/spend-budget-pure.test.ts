/**
 * Budgets in the pure decider (issue 46, R-59): for every sequence of call costs and every limit,
 * no call starts once the spend has reached it (oracle: the costs summed here, independently of
 * the fold), and every call starts while it has not; a planner ask is held the same way, a call in
 * doubt is settled whatever the budget. Given/when/then over the real catalogue and fold.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nextAction } from '../src/commands/next-action.js';
import type { DomainEvent, Usage } from '../src/events/catalogue.js';
import { attemptFinished, attemptStarted, buildInitialized, given, horizonSealed, milestone, node } from './support/given.js';
import { fingerprintOf, foldLog } from '../src/commands/fuzz-compare.js';

const withUsage = (e: DomainEvent, usage: Usage): DomainEvent => ({ ...e, data: { ...e.data, usage } } as DomainEvent);

describe('R-59 no call starts past the budget (pure decider)', () => {
  it('property: for random costs and a random USD limit, the n-th call starts exactly when the calls before it spent less than the limit', () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 500 }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 1, max: 2000 }),
      (cents, limitCents) => {
        const ids = cents.map((_, i) => `n${i}`);
        let spec = given(buildInitialized({ budget: { usd: limitCents / 100 } }), horizonSealed({ detailed: [milestone('m1', ids.map((id) => node(id, [], { kind: 'read-only' })))], coarse: [] }));
        let spent = 0; // the oracle: what the calls before this one cost, summed here
        for (const [i, id] of ids.entries()) {
          const next = nextAction(spec.state);
          if (spent >= limitCents) {
            expect(next).toMatchObject({ kind: 'paused', reached: { scope: 'build', unit: 'usd', limit: limitCents / 100 } });
            // Recorded once: after its BudgetReached the same pause records nothing more.
            const reached = (next as { reached: DomainEvent['data'] }).reached;
            expect(nextAction(spec.when({ type: 'BudgetReached', data: reached } as DomainEvent).state)).toEqual({ kind: 'paused', reason: (next as { reason: string }).reason });
            return;
          }
          expect(next).toMatchObject({ kind: 'dispatch', nodeId: expect.any(String) });
          spec = spec.when(attemptStarted(id), withUsage(attemptFinished(id, 'recorded'), { inputTokens: 1, outputTokens: 1, costUsd: cents[i]! / 100 }));
          spent += cents[i]!;
        }
        // Every node ran: a checkpoint is no call, whatever was spent.
        expect(nextAction(spec.state).kind).toBe('checkpoint');
      },
    ), { numRuns: 200, seed: Number(process.env.FC_SEED ?? 59) });
  });

  it('a planner ask is held by the budget; an ask in doubt is settled whatever the budget; BudgetChanged lets it go on', () => {
    const refused = given(
      buildInitialized({ budget: { tokens: 1000 }, plannerAsks: 3 }),
      { type: 'PlannerInvoked', data: { callId: 'plan.seal.0', purpose: 'seal', horizonRevision: 0, graphRevision: 0 } },
      withUsage({ type: 'PlannerReturned', data: { callId: 'plan.seal.0', proposal: null, proposalSha256: '0'.repeat(64), graphRevision: 0 } }, { inputTokens: 900, outputTokens: 100 }),
      { type: 'ProposalRejected', data: { callId: 'plan.seal.0', rule: 'R-28', reason: 'no', graphRevision: 0 } },
    );
    expect(nextAction(refused.state)).toMatchObject({ kind: 'paused', reached: { scope: 'build', unit: 'tokens', limit: 1000, spent: 1000 } });
    const inDoubt = refused.when({ type: 'PlannerInvoked', data: { callId: 'plan.seal.0.ask2', purpose: 'seal', horizonRevision: 0, graphRevision: 0 } });
    expect(nextAction(inDoubt.state)).toEqual({ kind: 'plan', purpose: 'seal', callId: 'plan.seal.0.ask2', inDoubt: true });
    const raised = refused.when({ type: 'BudgetChanged', data: { budget: { tokens: 5000 }, operator: { action: 'budget' }, graphRevision: 0 } });
    expect(nextAction(raised.state)).toEqual({ kind: 'plan', purpose: 'seal', callId: 'plan.seal.0.ask2', inDoubt: false });
  });

  it('the fuzzer\'s own check (independent of the decider): a call started once the spend reached the limit is a breach', () => {
    const ok = given(buildInitialized({ budget: { usd: 0.5 } }), horizonSealed({ detailed: [milestone('m1', [node('a', [], { kind: 'read-only' }), node('b', [], { kind: 'read-only' })])], coarse: [] }),
      attemptStarted('a'), withUsage(attemptFinished('a', 'recorded'), { inputTokens: 1, outputTokens: 1, costUsd: 0.5 }));
    expect(fingerprintOf(foldLog(ok.log)).budgetBreaches).toEqual([]);
    const breached = ok.when(attemptStarted('b'));
    expect(fingerprintOf(foldLog(breached.log)).budgetBreaches).toEqual([`${breached.log.at(-1)!.position} AttemptStarted: $0.50 spent of the build's $0.50 budget`]);
  });
});

describe('formatCount: counts as a person reads them, without ICU', () => {
  it('(property) for all safe integers, the same text as toLocaleString("en-US") (the oracle)', async () => {
    const { formatCount } = await import('../src/commands/spend.js');
    fc.assert(fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.integer({ min: -1_000_000, max: 1_000_000 })), (n) => {
      expect(formatCount(n)).toBe(n.toLocaleString('en-US'));
    }), { verbose: true });
  });
});
