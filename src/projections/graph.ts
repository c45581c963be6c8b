import { canonicalJson, compareCodePoints } from '../events/canonical.js';
import { sha256Hex } from '../events/hash.js';
import type { BuildState, NodeRecord } from './build-state.js';

/** Canonical form of the work graph: nodes sorted by id, deps sorted. */
export function canonicalGraph(nodes: Readonly<Record<string, NodeRecord>>): string {
  const ids = Object.keys(nodes).sort(compareCodePoints);
  return canonicalJson(ids.map((id) => {
    const n = nodes[id]!;
    return { id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...n.deps].sort(compareCodePoints) };
  }));
}

/**
 * SHA-256 of the canonical graph: the bytes of `canonicalGraph`, built from each node's
 * canonical JSON cached by node object and checked against its fields (a fold shares unchanged
 * node records, so a step re-serialises only the nodes it changed) and the sorted ids of the last call when the id set
 * is the same.
 */
export function graphSha256(nodes: Readonly<Record<string, NodeRecord>>): string {
  const ids = sortedIds(nodes);
  let out = '[';
  for (let i = 0; i < ids.length; i++) out += (i === 0 ? '' : ',') + nodeCanonical(nodes[ids[i]!]!);
  return sha256Hex(`${out}]`);
}

interface CachedNode {
  readonly id: string;
  readonly kind: string;
  readonly state: string;
  readonly milestone: string;
  readonly deps: readonly string[];
  readonly json: string;
}

// By node object, checked against the fields it was made from: a record folded in place (the
// audit's one-pass fold) is re-serialised when it changed, a shared unchanged one is not.
const nodeJson = new WeakMap<object, CachedNode>();

function nodeCanonical(n: NodeRecord): string {
  const c = nodeJson.get(n);
  if (c !== undefined && c.id === n.id && c.kind === n.kind && c.state === n.state && c.milestone === n.milestone && sameList(c.deps, n.deps)) return c.json;
  const deps = [...n.deps];
  const json = canonicalJson({ id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...deps].sort(compareCodePoints) });
  nodeJson.set(n, { id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps, json });
  return json;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

let lastIds: string[] = [];

function sortedIds(nodes: Readonly<Record<string, NodeRecord>>): string[] {
  const keys = Object.keys(nodes);
  if (keys.length === lastIds.length && lastIds.every((id) => id in nodes)) return lastIds;
  lastIds = keys.sort(compareCodePoints);
  return lastIds;
}

/** A summary node, or an accepted one, satisfies its dependents. */
export function isSatisfied(node: NodeRecord | undefined): boolean {
  return node !== undefined && node.state === 'accepted';
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
  const dependents = new Map<string, string[]>();
  const unfinished: string[] = [];
  for (const id in nodes) {
    const n = nodes[id]!;
    if (n.state === 'accepted' || n.state === 'canceled') continue;
    unfinished.push(id);
    for (const dep of n.deps) {
      let list = dependents.get(dep);
      if (!list) dependents.set(dep, (list = []));
      list.push(id);
    }
  }
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (id: string): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0; // a cycle is refused at sealing; never loop here
    visiting.add(id);
    let best = 0;
    for (const child of dependents.get(id) ?? []) best = Math.max(best, 1 + visit(child));
    visiting.delete(id);
    depth.set(id, best);
    return best;
  };
  for (const id of unfinished) visit(id);
  return depth;
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
  const nodes = state.nodes;
  const ready: string[] = [];
  for (const id in nodes) {
    const n = nodes[id]!;
    if (n.milestone !== milestone || n.state !== 'queued') continue;
    if (n.deps.every((d) => isSatisfied(nodes[d]))) ready.push(id);
  }
  if (ready.length === 0) return [];
  const depths = unlockDepths(nodes);
  // The fold keeps each node's position in its plan's order; a wave's nodes share one plan.
  const topo = state.topoIndex ?? {};
  return ready.sort((a, b) => (depths.get(b) ?? 0) - (depths.get(a) ?? 0) || (topo[a] ?? 0) - (topo[b] ?? 0) || compareCodePoints(a, b));
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
