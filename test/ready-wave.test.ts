import { positionOfRevision } from '../src/projections/build-state.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../src/events/canonical.js';
import type { BuildState, NodeRecord } from '../src/projections/build-state.js';
import { activeMilestone, canonicalGraph, graphSha256, rankReadyWave, readyListBytes, stableTopologicalOrder, unlockDepths } from '../src/projections/graph.js';
import { progressCaseArb } from './support/arbitraries.js';
import {
  acceptNode, attemptFinished, attemptStarted, buildInitialized, foldBuild, given, horizonSealed, integrationPromoted, integrationStarted, milestone, node, progressedBuild, storeEvents,
} from './support/given.js';

const RUNS = { numRuns: 150 };

// ---- an independent reference for R-10 (simple, obviously right) ------------------------

const unfinished = (n: NodeRecord | undefined) => n !== undefined && n.state !== 'accepted' && n.state !== 'canceled';

/** Longest chain of unfinished dependents below `id` (plain recursion; graphs here are small). */
function refDepth(nodes: Readonly<Record<string, NodeRecord>>, id: string): number {
  let best = 0;
  for (const other of Object.values(nodes)) {
    if (unfinished(other) && other.deps.includes(id)) best = Math.max(best, 1 + refDepth(nodes, other.id));
  }
  return best;
}

/** Kahn's algorithm over the whole graph, always emitting the smallest available id. */
function refTopo(nodes: Readonly<Record<string, NodeRecord>>): string[] {
  const order: string[] = [];
  const done = new Set<string>();
  const left = new Set(Object.keys(nodes));
  while (left.size > 0) {
    const available = [...left].filter((id) => nodes[id]!.deps.every((d) => done.has(d) || !(d in nodes))).sort();
    if (available.length === 0) break;
    order.push(available[0]!);
    done.add(available[0]!);
    left.delete(available[0]!);
  }
  return order;
}

function refRank(state: BuildState): string[] {
  const m = activeMilestone(state);
  const nodes = state.nodes;
  const ready = Object.values(nodes)
    .filter((n) => n.milestone === m && n.state === 'queued' && n.deps.every((d) => nodes[d]?.state === 'accepted'))
    .map((n) => n.id);
  const topo = refTopo(nodes);
  const key = (id: string) => [-refDepth(nodes, id), topo.indexOf(id)] as const;
  return ready.sort((a, b) => key(a)[0] - key(b)[0] || key(a)[1] - key(b)[1] || (a < b ? -1 : a > b ? 1 : 0));
}

describe('R-10 ready wave ranking', () => {
  it('R-10 ranks by downstream unlock depth (larger first)', () => {
    // deep: deep <- mid <- leaf (depth 2); one: one <- kid (depth 1); solo (depth 0)
    const s = given(
      buildInitialized(),
      horizonSealed({
        detailed: [milestone('m1', [node('solo'), node('one'), node('kid', ['one']), node('deep'), node('mid', ['deep']), node('leaf', ['mid'])])],
        coarse: [],
      }),
    ).state;
    expect(rankReadyWave(s)).toEqual(['deep', 'one', 'solo']);
    expect(Object.fromEntries(unlockDepths(s.nodes))).toEqual({ solo: 0, one: 1, kid: 0, deep: 2, mid: 1, leaf: 0 });
  });

  it('R-10 counts unfinished dependents in later milestones, not accepted ones', () => {
    const spec = given(
      buildInitialized(),
      horizonSealed({
        detailed: [milestone('m1', [node('a'), node('b'), node('x')]), milestone('m2', [node('c', ['b']), node('d', ['c'])])],
        coarse: [],
      }),
    );
    expect(rankReadyWave(spec.state)).toEqual(['b', 'a', 'x']);
    expect(unlockDepths(spec.state.nodes).get('b')).toBe(2);
  });

  it('R-10 at equal depth, stable topological order (Kahn, ties by id) comes before id', () => {
    // 'a' waits for the accepted 'zz', so Kahn emits 'b' (and 'zz') before 'a'.
    const spec = given(
      buildInitialized(),
      horizonSealed({ detailed: [milestone('m1', [node('zz', [], { kind: 'read-only', accepted: true }), node('a', ['zz']), node('b')])], coarse: [] }),
    );
    expect(stableTopologicalOrder(spec.state.nodes, Object.keys(spec.state.nodes))).toEqual(['b', 'zz', 'a']);
    expect(rankReadyWave(spec.state)).toEqual(['b', 'a']);
    // Without the dependency, the id decides.
    const flat = given(buildInitialized(), horizonSealed({ detailed: [milestone('m1', [node('b'), node('a')])], coarse: [] }));
    expect(rankReadyWave(flat.state)).toEqual(['a', 'b']);
  });

  it('R-10 only queued nodes of the active milestone with every dependency accepted are ready', () => {
    const spec = given(
      buildInitialized(),
      horizonSealed({ detailed: [milestone('m1', [node('api'), node('ui', ['api']), node('doc', [], { kind: 'read-only' })]), milestone('m2', [node('later')])], coarse: [] }),
    )
      .when(attemptStarted('doc'))
      .then((s) => {
        expect(s.nodes['doc']!.state).toBe('running');
        expect(rankReadyWave(s)).toEqual(['api']);
      })
      .when(...acceptNode('api', 'writable', 'job-1'))
      .then((s) => expect(rankReadyWave(s)).toEqual(['ui']));
    expect(readyListBytes(rankReadyWave(spec.state))).toBe('["ui"]');
  });

  it('R-10 the ranked list has one canonical byte form', () => {
    expect(readyListBytes(['b', 'a', 'é'])).toBe('["b","a","é"]');
    expect(readyListBytes([])).toBe('[]');
    expect(readyListBytes(['x'])).toBe(canonicalJson(['x']));
  });

  it('R-10 property: the ranking is the reference ranking — a permutation of the ready set, deps accepted, depth non-increasing', () => {
    fc.assert(
      fc.property(progressCaseArb({ maxNodes: 12, maxMilestones: 2 }), (c) => {
        const s = progressedBuild(c).state;
        const ranked = rankReadyWave(s);
        const depths = unlockDepths(s.nodes);
        const active = activeMilestone(s);
        const readySet = Object.values(s.nodes)
          .filter((n) => n.milestone === active && n.state === 'queued' && n.deps.every((d) => s.nodes[d]?.state === 'accepted'))
          .map((n) => n.id)
          .sort();
        expect([...ranked].sort()).toEqual(readySet);
        expect(new Set(ranked).size).toBe(ranked.length);
        for (const id of ranked) for (const d of s.nodes[id]!.deps) expect(s.nodes[d]!.state).toBe('accepted');
        for (let i = 1; i < ranked.length; i++) expect(depths.get(ranked[i - 1]!)!).toBeGreaterThanOrEqual(depths.get(ranked[i]!)!);
        for (const [id, d] of depths) expect(d, id).toBe(refDepth(s.nodes, id));
        expect(ranked).toEqual(refRank(s));
      }),
      RUNS,
    );
  });

  it('R-10 property: ranking (and its bytes) does not depend on the insertion order of nodes', () => {
    let nonEmpty = 0;
    let reordered = 0;
    fc.assert(
      fc.property(progressCaseArb({ maxNodes: 12, maxMilestones: 2 }), (c) => {
        const one = progressedBuild(c).state;
        const two = progressedBuild(c, c.otherListing).state;
        if (Object.keys(one.nodes).join() !== Object.keys(two.nodes).join()) reordered++;
        expect(readyListBytes(rankReadyWave(two))).toBe(readyListBytes(rankReadyWave(one)));
        if (rankReadyWave(one).length > 1) nonEmpty++;
      }),
      RUNS,
    );
    expect(nonEmpty).toBeGreaterThan(10);
    expect(reordered).toBeGreaterThan(10);
  });
});

describe('R-9 graph revision and SHA', () => {
  it('R-9 every graph change increments the revision once; events that do not change the graph do not', () => {
    fc.assert(
      fc.property(progressCaseArb({ maxNodes: 10, maxMilestones: 2 }), (c) => {
        const log = progressedBuild(c).log;
        let state = foldBuild([]);
        for (const e of log) {
          const before = canonicalGraph(state.nodes);
          const next = foldBuild([e], state);
          const changed = canonicalGraph(next.nodes) !== before;
          expect(next.graphRevision, `${e.type} at ${e.position}`).toBe(state.graphRevision + (changed ? 1 : 0));
          if (changed) expect(positionOfRevision(next, next.graphRevision)).toBe(e.position);
          state = next;
        }
        // Time travel by revision: folding up to the position a revision names gives that revision.
        for (let rev = 0; rev <= state.graphRevision; rev++) {
          const pos = positionOfRevision(state, rev);
          expect(pos, `position of revision ${rev}`).toBeDefined();
          expect(foldBuild(log.filter((e) => e.position <= pos!)).graphRevision).toBe(rev);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('R-9 a batch promotion of two nodes is one graph change (one revision)', () => {
    const spec = given(
      buildInitialized(),
      horizonSealed({ detailed: [milestone('m1', [node('a'), node('b')])], coarse: [] }),
      attemptStarted('a'), attemptFinished('a', 'committed'), attemptStarted('b'), attemptFinished('b', 'committed'),
      integrationStarted('job-1', ['a', 'b']),
    );
    const before = spec.state.graphRevision;
    spec.when(integrationPromoted('job-1', ['a', 'b'])).then((s) => {
      expect(s.nodes['a']!.state).toBe('accepted');
      expect(s.nodes['b']!.state).toBe('accepted');
      expect(s.graphRevision).toBe(before + 1);
      expect(positionOfRevision(s, before + 1)).toBe(s.position);
    });
  });

  it('R-9 graphSha256 does not depend on node insertion order, and changes with the graph', () => {
    fc.assert(
      fc.property(progressCaseArb({ maxNodes: 12, maxMilestones: 2 }), (c) => {
        const one = progressedBuild(c).state;
        const two = progressedBuild(c, c.otherListing).state;
        expect(graphSha256(two.nodes)).toBe(graphSha256(one.nodes));
        expect(two.graphRevision).toBe(one.graphRevision);
      }),
      RUNS,
    );
    const a = given(buildInitialized(), horizonSealed({ detailed: [milestone('m1', [node('a')])], coarse: [] }));
    const b = a.when(attemptStarted('a'));
    expect(graphSha256(b.state.nodes)).not.toBe(graphSha256(a.state.nodes));
    expect(graphSha256(a.state.nodes)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('R-9 the stored log helper chains hashes (sanity of the given/when/then fixture)', () => {
    const log = storeEvents([buildInitialized()]);
    expect(log[0]!.position).toBe(1);
    expect(log[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});
