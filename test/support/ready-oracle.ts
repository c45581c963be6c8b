/**
 * An independent oracle for R-10, written separately from src/projections/graph.ts and meant to be
 * read in a minute: the ranked ready wave of a graph, computed the plain way (quadratic where the
 * product is linear, recursion where it iterates). Ready: queued nodes of the active milestone
 * whose dependencies are all accepted. Ranked by unlock depth (the longest chain of unfinished
 * dependents below the node; larger first), then by Kahn's topological order with ties broken by
 * id, then by id.
 */
export interface OracleNode {
  readonly deps: readonly string[];
  readonly milestone: string;
  readonly state: string;
}

export function oracleReadyWave(nodes: Readonly<Record<string, OracleNode>>, detailed: readonly string[], checkpointed: ReadonlySet<string>): string[] {
  const active = detailed.find((m) => !checkpointed.has(m));
  if (active === undefined) return [];
  const ids = Object.keys(nodes);
  const accepted = (id: string) => nodes[id]?.state === 'accepted';
  const finished = (id: string) => nodes[id]!.state === 'accepted' || nodes[id]!.state === 'canceled';
  const ready = ids.filter((id) => nodes[id]!.milestone === active && nodes[id]!.state === 'queued' && nodes[id]!.deps.every(accepted));

  const memo = new Map<string, number>();
  const depth = (id: string): number => {
    if (!memo.has(id)) {
      const below = ids.filter((x) => !finished(x) && nodes[x]!.deps.includes(id));
      memo.set(id, Math.max(0, ...below.map((x) => 1 + depth(x))));
    }
    return memo.get(id)!;
  };

  // Kahn's algorithm over the whole graph: repeatedly take the smallest id whose known deps are all placed.
  const position = new Map<string, number>();
  const left = new Set(ids);
  while (left.size > 0) {
    const next = [...left].filter((id) => nodes[id]!.deps.every((d) => position.has(d) || !(d in nodes))).sort()[0];
    if (next === undefined) break; // a cycle: the rest keeps no position (the product refuses cyclic plans anyway)
    position.set(next, position.size);
    left.delete(next);
  }
  const topo = (id: string) => position.get(id) ?? Number.MAX_SAFE_INTEGER;
  return ready.sort((a, b) => depth(b) - depth(a) || topo(a) - topo(b) || (a < b ? -1 : a > b ? 1 : 0));
}
