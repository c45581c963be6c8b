import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Immer } from 'immer';
import { describe, expect, it } from 'vitest';
import type { NodeRecord } from '../src/projections/build-state.js';
import { graphIndexOf, knownGraphIndexOf, noteNodesFolded, type GraphIndex } from '../src/projections/graph-index.js';
import { TableDraft } from '../src/projections/record-table.js';

const immer = new Immer({ autoFreeze: false });


type Nodes = Record<string, NodeRecord>;
const STATES = ['queued', 'running', 'validating', 'revising', 'blocked', 'canceled', 'accepted'] as const;
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

// ---- an independent reference, spelled out from R-9 and R-10 (plain recursion; graphs here are small) ----

const unfinished = (n: NodeRecord | undefined): boolean => n !== undefined && n.state !== 'accepted' && n.state !== 'canceled';

function refSha(nodes: Nodes): string {
  const body = Object.keys(nodes).sort(byCodePoint).map((id) => {
    const n = nodes[id]!;
    return { deps: [...n.deps].sort(byCodePoint), id: n.id, kind: n.kind, milestone: n.milestone, state: n.state };
  });
  return createHash('sha256').update(JSON.stringify(body)).digest('hex');
}

/** Every unfinished node's depth: the longest chain of unfinished dependents below it (recursion over a list of who depends on whom). */
function refDepths(nodes: Nodes): Map<string, number> {
  const below = new Map<string, string[]>();
  for (const n of Object.values(nodes)) if (unfinished(n)) for (const d of n.deps) below.set(d, [...(below.get(d) ?? []), n.id]);
  const memo = new Map<string, number>();
  const depth = (id: string): number => {
    if (!memo.has(id)) memo.set(id, Math.max(0, ...(below.get(id) ?? []).map((c) => 1 + depth(c))));
    return memo.get(id)!;
  };
  return new Map(Object.values(nodes).filter(unfinished).map((n) => [n.id, depth(n.id)]));
}

const refReady = (nodes: Nodes): string[] =>
  Object.values(nodes).filter((n) => n.state === 'queued' && n.deps.every((d) => nodes[d]?.state === 'accepted')).map((n) => n.id).sort(byCodePoint);

function expectLikeReference(index: GraphIndex, nodes: Nodes): void {
  expect(index.graphSha256()).toBe(refSha(nodes));
  expect([...index.ready()].sort(byCodePoint)).toEqual(refReady(nodes));
  for (const [id, depth] of refDepths(nodes)) expect(index.depth(id), `depth of ${id}`).toBe(depth);
  for (const s of STATES) expect([...index.withState(s)].sort(byCodePoint)).toEqual(Object.keys(nodes).filter((id) => nodes[id]!.state === s).sort(byCodePoint));
  for (const m of ['m1', 'm2', 'm3']) {
    const all = Object.values(nodes).filter((n) => n.milestone === m);
    expect(index.milestoneCounts(m)).toEqual({ total: all.length, open: all.filter(unfinished).length });
  }
}

// ---- graph changes as the fold makes them: its nodes draft, unchanged records shared, the ids the draft saw touched ----

/** Ids are added in order: a node depends only on nodes added before it (the graph stays acyclic) or on ids never added. */
const op = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), deps: fc.array(fc.nat(), { maxLength: 3 }), dangling: fc.boolean(), milestone: fc.constantFrom('m1', 'm2', 'm3') }),
  fc.record({ kind: fc.constant('state' as const), pick: fc.nat(), state: fc.constantFrom(...STATES) }),
  fc.record({ kind: fc.constant('state' as const), pick: fc.nat(), state: fc.constant('accepted' as const) }),
  fc.record({ kind: fc.constant('deps' as const), pick: fc.nat(), deps: fc.array(fc.nat(), { maxLength: 3 }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('rewrite' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('plan' as const), count: fc.integer({ min: 10, max: 70 }), seed: fc.nat(), milestone: fc.constantFrom('m1', 'm2', 'm3') }),
  fc.record({ kind: fc.constant('many' as const), picks: fc.array(fc.nat(), { minLength: 2, maxLength: 80 }), state: fc.constantFrom(...STATES) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** Node ids in the order they were added (37k mod a prime: code-point order is not the order of adding). */
const nameOf = (k: number): string => `n${((k * 37) % 10007).toString().padStart(5, '0')}`;

function applyOp(nodes: Nodes, o: Op, added: string[]): Nodes {
  const ids = Object.keys(nodes);
  if (o.kind === 'rewrite') {
    if (ids.length === 0) return nodes;
    // `nodes` replaced whole (the index cannot follow: the next question rebuilds it).
    const id = ids[o.pick % ids.length]!;
    const next = { ...nodes, [id]: { ...nodes[id]!, state: 'accepted' } } as Nodes;
    noteNodesFolded(nodes, next, null);
    return next;
  }
  // The fold's own draft of the nodes (record-table.ts): it notes every id read, written or deleted.
  const touched = new Set<string>();
  const draft = new TableDraft(nodes, immer, touched);
  const d = { nodes: draft.proxy };
  if (o.kind === 'add') {
    const id = nameOf(added.length);
    const deps = added.length === 0 ? [] : o.deps.map((k) => added[k % added.length]!);
    if (o.dangling) deps.push('zz-never');
    added.push(id);
    d.nodes[id] = { id, kind: 'read-only', state: 'queued', milestone: o.milestone, deps: [...new Set(deps)], attempts: 0 } as never;
  } else if (o.kind === 'plan') {
    // Many nodes at once (a plan: the graph grows past one slice of the canonical bytes).
    for (let i = 0; i < o.count; i++) {
      const id = nameOf(added.length);
      const deps = added.length === 0 ? [] : [added[(o.seed * (i + 7)) % added.length]!];
      added.push(id);
      d.nodes[id] = { id, kind: 'read-only', state: 'queued', milestone: o.milestone, deps, attempts: 0 } as never;
    }
  } else if (ids.length === 0) {
    return nodes;
  } else if (o.kind === 'state') {
    (d.nodes[ids[o.pick % ids.length]!] as { state: string }).state = o.state;
  } else if (o.kind === 'deps') {
    const id = ids[o.pick % ids.length]!;
    const earlier = added.slice(0, added.indexOf(id));
    (d.nodes[id] as { deps: string[] }).deps = earlier.length === 0 ? [] : [...new Set(o.deps.map((k) => earlier[k % earlier.length]!))];
  } else if (o.kind === 'remove') {
    delete d.nodes[ids[o.pick % ids.length]!];
  } else {
    for (const p of o.picks) (d.nodes[ids[p % ids.length]!] as { state: string }).state = o.state;
  }
  const next = draft.commit() ?? nodes;
  noteNodesFolded(nodes, next, touched);
  return next;
}

describe('decision 0021: the graph index follows the fold', () => {
  it('R-9 R-10 for all sequences of graph changes folded through the nodes draft the fold uses, the index carried from state to state answers as the reference does at every step (SHA-256, ready set, unlock depths, nodes by state, milestone counts)', () => {
    let incremental = 0;
    fc.assert(fc.property(fc.array(op, { minLength: 20, maxLength: 80, size: 'max' }), (ops) => {
      let nodes: Nodes = {};
      const added: string[] = [];
      graphIndexOf(nodes);
      for (const o of ops) {
        const next = applyOp(nodes, o, added);
        const carried = knownGraphIndexOf(next);
        if (carried !== null && next !== nodes) incremental++;
        nodes = next;
        expectLikeReference(carried ?? graphIndexOf(nodes), nodes);
      }
    }), { numRuns: 100 });
    expect(incremental).toBeGreaterThan(3000); // the carried index was checked, not one rebuilt each time
  });

  it('R-9 R-10 two states folded from one: each answers as the reference does, and so does the one they came from (asked again, it rebuilds)', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 40 }), op, op, (ops, a, b) => {
      let nodes: Nodes = {};
      const added: string[] = [];
      graphIndexOf(nodes);
      for (const o of ops) nodes = applyOp(nodes, o, added);
      graphIndexOf(nodes);
      const one = applyOp(nodes, a, [...added]);
      const two = applyOp(nodes, b, [...added]);
      expectLikeReference(graphIndexOf(one), one);
      expectLikeReference(graphIndexOf(two), two);
      expectLikeReference(graphIndexOf(nodes), nodes);
    }), { numRuns: 200 });
  });

  it('R-10 a node accepted unlocks its dependents through a long chain, and its depth drops along the chain (depth walk)', () => {
    let nodes: Nodes = {};
    const added: string[] = [];
    graphIndexOf(nodes);
    for (let i = 0; i < 200; i++) nodes = applyOp(nodes, { kind: 'add', deps: i === 0 ? [] : [i - 1], dangling: false, milestone: 'm1' }, added);
    expect(graphIndexOf(nodes).depth(added[0]!)).toBe(199);
    nodes = applyOp(nodes, { kind: 'state', pick: Object.keys(nodes).indexOf(added[199]!), state: 'canceled' }, added);
    const index = knownGraphIndexOf(nodes);
    expect(index).not.toBeNull();
    expect(index!.depth(added[0]!)).toBe(198);
    expectLikeReference(index!, nodes);
  });
});
