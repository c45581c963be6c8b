/**
 * Each milestone's spend in the ledger, kept sharded (decision 0056): a worker call's fold
 * writes the one leaf its milestone is in, and shares every other with the state before it — the
 * record it replaced was copied whole at each call, O(milestones) a node (11 % of a 20,000-node
 * `run`). For all sequences of calls over up to 300 milestones, with or without usage: each
 * milestone's totals are the oracle's (the calls and their usage summed here, not by the fold),
 * the build's total is their sum plus the planner's, `ledgerJson` lists the milestones by id, and
 * every earlier ledger still reads as it did.
 */
import fc from 'fast-check';
import { Immer } from 'immer';
import { describe, expect, it } from 'vitest';
import type { Usage } from '../src/events/catalogue.js';
import type { NodeRecord } from '../src/projections/build-records.js';
import { initialBuildState, type BuildState } from '../src/projections/build-state.js';
import { spent } from '../src/projections/fold-helpers.js';
import { changedLeaves } from '../src/projections/sharded.js';
import { ledgerJson, milestoneSpent, NO_SPEND } from '../src/projections/spend-ledger.js';

const immer = new Immer({ autoFreeze: false });
const MILESTONES = 300;

/** A state whose nodes n<i> sit in milestone m<i % MILESTONES> (what `spent` reads of a node). */
function stateWithNodes(count: number): BuildState {
  const nodes: Record<string, NodeRecord> = {};
  for (let i = 0; i < count; i++) nodes[`n${i}`] = { id: `n${i}`, kind: 'read-only', deps: [], milestone: `m${i % MILESTONES}`, state: 'ready', attempts: 0 } as unknown as NodeRecord;
  return { ...initialBuildState, nodes };
}

const usage = fc.option(fc.record({ inputTokens: fc.nat({ max: 10_000 }), outputTokens: fc.nat({ max: 10_000 }), costUsd: fc.option(fc.integer({ min: 0, max: 5000 }).map((c) => c / 1000), { nil: undefined }) }), { nil: undefined });
const call = fc.record({ node: fc.option(fc.nat({ max: 2 * MILESTONES - 1 }), { nil: null }), usage });

interface Oracle {
  calls: number;
  reported: number;
  inputTokens: number;
  outputTokens: number;
}

describe('the spend ledger by milestone (R-58, decision 0056)', () => {
  it('for all sequences of calls: each milestone\'s totals are the oracle\'s, a call writes one leaf and shares the rest, earlier ledgers unchanged', () => {
    const base = stateWithNodes(2 * MILESTONES);
    fc.assert(fc.property(fc.array(call, { minLength: 1, maxLength: 120 }), (calls) => {
      let s = base;
      const oracle = new Map<string, Oracle>();
      const history: { s: BuildState; json: string }[] = [];
      for (const c of calls) {
        const nodeId = c.node === null ? null : `n${c.node}`;
        const before = s;
        s = immer.produce(s, (d) => spent(d, nodeId, c.usage as Usage | undefined, false));
        if (nodeId !== null) {
          const m = `m${c.node! % MILESTONES}`;
          const o = oracle.get(m) ?? { calls: 0, reported: 0, inputTokens: 0, outputTokens: 0 };
          oracle.set(m, { calls: o.calls + 1, reported: o.reported + (c.usage ? 1 : 0), inputTokens: o.inputTokens + (c.usage?.inputTokens ?? 0), outputTokens: o.outputTokens + (c.usage?.outputTokens ?? 0) });
          // One leaf written (the call's milestone's), every other shared with the ledger before.
          const changed = [...changedLeaves(before.spend?.milestones ?? [], s.spend!.milestones)];
          expect(changed).toHaveLength(1);
          expect(Object.keys(changed[0]![1])).toContain(m);
        } else {
          expect(s.spend!.milestones).toBe(before.spend?.milestones ?? s.spend!.milestones);
        }
        history.push({ s, json: JSON.stringify(ledgerJson(s.spend)) });
      }
      const json = ledgerJson(s.spend);
      expect(Object.keys(json.milestones)).toEqual([...oracle.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      for (const [m, o] of oracle) {
        expect(json.milestones[m], m).toMatchObject(o);
        expect(milestoneSpent(s.spend, m), m).toMatchObject(o);
      }
      expect(milestoneSpent(s.spend, 'm-never')).toEqual(NO_SPEND);
      const plannerCalls = calls.filter((c) => c.node === null).length;
      expect(json.calls).toBe(plannerCalls + [...oracle.values()].reduce((a, o) => a + o.calls, 0));
      expect(json.planner.calls).toBe(plannerCalls);
      for (const h of history) expect(JSON.stringify(ledgerJson(h.s.spend))).toBe(h.json);
    }), { endOnFailure: true });
  });
});
