import { canonicalJson, compareCodePoints } from '../events/canonical.js';
import { sha256Hex } from '../events/hash.js';
import type { BuildState, NodeRecord } from './build-state.js';
import { canonicalSlice, graphIndexOf, knownGraphIndexOf, type GraphIndex } from './graph-index.js';

export { isSatisfied } from './graph-index.js';

/** Canonical form of the work graph: nodes sorted by id, deps sorted. */
export function canonicalGraph(nodes: Readonly<Record<string, NodeRecord>>): string {
  const ids = Object.keys(nodes).sort(compareCodePoints);
  return canonicalJson(ids.map((id) => {
    const n = nodes[id]!;
    return { id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...n.deps].sort(compareCodePoints) };
  }));
}

/**
 * SHA-256 of the canonical graph: the bytes of `canonicalGraph`. From the graph index when
 * the state was folded from one that has it (the controller's steps: only the changed nodes are
 * serialised again, decision 0021); else from each node's canonical JSON cached by node object
 * and checked against its fields, and the sorted ids of the last call when the id set is the same.
 */
export function graphSha256(nodes: Readonly<Record<string, NodeRecord>>): string {
  const index = knownGraphIndexOf(nodes);
  if (index !== null) return index.graphSha256();
  const ids = sortedIds(nodes);
  return sha256Hex(`[${canonicalSlice(ids, 0, ids.length, (id) => nodes[id]!)}]`);
}

let lastIds: string[] = [];

function sortedIds(nodes: Readonly<Record<string, NodeRecord>>): string[] {
  const keys = Object.keys(nodes);
  if (keys.length === lastIds.length && lastIds.every((id) => id in nodes)) return lastIds;
  lastIds = keys.sort(compareCodePoints);
  return lastIds;
}

/** The first detailed milestone of the horizon without a checkpoint, or null. */
export function activeMilestone(state: BuildState): string | null {
  if (!state.horizon) return null;
  for (const m of state.horizon.detailed) if (!state.checkpoints[m.id]) return m.id;
  return null;
}

/**
 * Downstream unlock depth of every unfinished node: the length of the longest chain of
 * unfinished dependents below it (a node with none has depth 0).
 */
export function unlockDepths(nodes: Readonly<Record<string, NodeRecord>>): Map<string, number> {
  return graphIndexOf(nodes).allDepths();
}

/** Stable topological order (Kahn's algorithm, ties by node id) of the given node ids. */
export function stableTopologicalOrder(nodes: Readonly<Record<string, NodeRecord>>, ids: readonly string[]): string[] {
  const inSet = new Set(ids);
  const indegree = new Map<string, number>();
  const children = new Map<string, string[]>();
  for (const id of ids) indegree.set(id, 0);
  for (const id of ids) {
    for (const dep of nodes[id]!.deps) {
      if (!inSet.has(dep)) continue;
      indegree.set(id, indegree.get(id)! + 1);
      let list = children.get(dep);
      if (!list) children.set(dep, (list = []));
      list.push(id);
    }
  }
  const ready = new IdHeap();
  for (const id of ids) if (indegree.get(id) === 0) ready.push(id);
  const order: string[] = [];
  while (ready.size > 0) {
    const id = ready.pop();
    order.push(id);
    for (const child of children.get(id) ?? []) {
      const d = indegree.get(child)! - 1;
      indegree.set(child, d);
      if (d === 0) ready.push(child);
    }
  }
  return order;
}

/**
 * Position of each of a plan's nodes in the plan's stable topological order: Kahn's
 * algorithm over these nodes, ties by id, a dependency outside the plan counting as placed.
 */
export function planOrder(nodes: Readonly<Record<string, NodeRecord>>, planned: readonly string[]): Record<string, number> {
  const index: Record<string, number> = {};
  stableTopologicalOrder(nodes, planned).forEach((id, i) => (index[id] = i));
  return index;
}

/** A binary min-heap of ids in code-point order (Kahn's ready queue). */
class IdHeap {
  private readonly a: string[] = [];
  get size(): number {
    return this.a.length;
  }
  push(id: string): void {
    const a = this.a;
    a.push(id);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (compareCodePoints(a[p]!, a[i]!) <= 0) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): string {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && compareCodePoints(a[l]!, a[m]!) < 0) m = l;
        if (r < a.length && compareCodePoints(a[r]!, a[m]!) < 0) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

/**
 * The ranked ready wave: queued nodes of the active milestone whose dependencies are all
 * accepted, by unlock depth (larger first), then their plan's stable topological order, then id.
 */
export function rankReadyWave(state: BuildState): string[] {
  const milestone = activeMilestone(state);
  if (milestone === null) return [];
  const index = graphIndexOf(state.nodes);
  const ready: string[] = [];
  for (const id of index.ready()) if (state.nodes[id]!.milestone === milestone) ready.push(id);
  return ready.sort(rankOrder(state, index));
}

/** The top of the ranked ready wave, or undefined: `rankReadyWave(state)[0]` without sorting the wave. */
export function firstReady(state: BuildState): string | undefined {
  const milestone = activeMilestone(state);
  if (milestone === null) return undefined;
  const index = graphIndexOf(state.nodes);
  const order = rankOrder(state, index);
  let best: string | undefined;
  for (const id of index.ready()) if (state.nodes[id]!.milestone === milestone && (best === undefined || order(id, best) < 0)) best = id;
  return best;
}

/** R-10's order: unlock depth (larger first), then the plan's stable topological order, then id. */
function rankOrder(state: BuildState, index: GraphIndex): (a: string, b: string) => number {
  // The fold keeps each node's position in its plan's order; a wave's nodes share one plan.
  const topo = state.topoIndex ?? {};
  return (a, b) => index.depth(b) - index.depth(a) || (topo[a] ?? 0) - (topo[b] ?? 0) || compareCodePoints(a, b);
}

/** The one canonical byte form of a ranked ready list. */
export function readyListBytes(ready: readonly string[]): string {
  return canonicalJson(ready);
}

/** Nodes with an attempt started and not finished, or committed and not yet integrated. */
export function inFlightNodes(state: BuildState): string[] {
  const ids: string[] = [];
  for (const id in state.nodes) {
    const s = state.nodes[id]!.state;
    if (s === 'running' || s === 'validating') ids.push(id);
  }
  return ids.sort(compareCodePoints);
}
