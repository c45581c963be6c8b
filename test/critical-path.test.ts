/**
 * The critical path (issue 16) against an independent oracle: for random DAGs with random node
 * states and recorded durations, `criticalPath` returns a chain of unfinished nodes, each one
 * depending on the one before, whose weight (a worker call unless validating, a verification if
 * writable; 1 a node without recorded durations) is the largest of ALL chains — enumerated here
 * by brute force — and the estimate is that weight.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { criticalPath } from '../src/projections/critical-path.js';
import { initialBuildState, type BuildState, type NodeRecord } from '../src/projections/build-state.js';
import { planOrder } from '../src/projections/graph.js';
import { dagArb, type RandomDag } from './support/arbitraries.js';

const STATES = ['queued', 'running', 'validating', 'revising', 'blocked', 'canceled', 'accepted'] as const;

interface Case {
  readonly dag: RandomDag;
  readonly states: readonly NodeRecord['state'][];
  readonly durations: { readonly workerMs: number; readonly verifyMs: number } | undefined;
}

const caseArb: fc.Arbitrary<Case> = dagArb({ minNodes: 1, maxNodes: 9, maxMilestones: 1 }).chain((dag) => fc.record({
  dag: fc.constant(dag),
  states: fc.array(fc.constantFrom(...STATES), { minLength: dag.nodes.length, maxLength: dag.nodes.length }),
  durations: fc.option(fc.record({ workerMs: fc.integer({ min: 1, max: 10_000 }), verifyMs: fc.integer({ min: 0, max: 10_000 }) }), { nil: undefined }),
}));

function stateOf(c: Case): BuildState {
  const nodes: Record<string, NodeRecord> = {};
  c.dag.nodes.forEach((n, i) => {
    nodes[n.id] = { id: n.id, kind: n.kind, deps: n.deps.filter((d) => c.dag.nodes.some((x) => x.id === d)), milestone: 'm1', state: c.states[i]!, attempts: 0, commit: null, receiptJobId: null };
  });
  return {
    ...initialBuildState, nodes, topoIndex: planOrder(nodes, Object.keys(nodes)),
    ...(c.durations ? { durations: { worker: { calls: 2, ms: 2 * c.durations.workerMs }, verify: { jobs: 1, ms: c.durations.verifyMs } } } : {}),
  };
}

/** Every chain of unfinished nodes (each depending on the one before), by brute force. */
function allChains(s: BuildState): string[][] {
  const open = Object.values(s.nodes).filter((n) => n.state !== 'accepted' && n.state !== 'canceled');
  const chains: string[][] = [];
  const extend = (chain: string[]) => {
    chains.push(chain);
    for (const n of open) if (n.deps.includes(chain.at(-1)!) && !chain.includes(n.id)) extend([...chain, n.id]);
  };
  for (const n of open) extend([n.id]);
  return chains;
}

describe('the critical path (issue 16)', () => {
  it('for all graphs, states and recorded durations: a chain of unfinished dependents whose weight is the largest of all chains, and the estimate is that weight', () => {
    fc.assert(fc.property(caseArb, (c) => {
      const s = stateOf(c);
      const got = criticalPath(s);
      const w = (id: string) => {
        if (!c.durations) return 1;
        const n = s.nodes[id]!;
        return (n.state === 'validating' ? 0 : c.durations.workerMs) + (n.kind === 'writable' ? c.durations.verifyMs : 0);
      };
      const weight = (chain: readonly string[]) => chain.reduce((t, id) => t + w(id), 0);
      const chains = allChains(s);
      if (chains.length === 0) {
        expect(got.nodes).toEqual([]);
        return;
      }
      for (let i = 1; i < got.nodes.length; i++) expect(s.nodes[got.nodes[i]!]!.deps).toContain(got.nodes[i - 1]);
      for (const id of got.nodes) expect(['accepted', 'canceled']).not.toContain(s.nodes[id]!.state);
      const longest = Math.max(...chains.map(weight));
      expect(weight(got.nodes)).toBe(longest);
      expect(got.remainingMs).toBe(c.durations ? longest : null);
    }), { numRuns: 500 });
  });
});
