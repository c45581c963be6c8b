/**
 * An independent oracle for R-10, written separately from src/projections/graph.ts and meant to be
 * read in a minute: the ranked ready wave of a graph, computed the plain way (quadratic where the
 * product is linear, recursion where it iterates). Ready: queued nodes of the active milestone
 * whose dependencies are all accepted. Ranked by unlock depth (the longest chain of unfinished
 * dependents below the node; larger first), then by the order of the plan that introduced them
 * (Kahn's algorithm over that plan's nodes, ties broken by id), then by id.
 */
export interface OracleNode {
  readonly deps: readonly string[];
  readonly milestone: string;
  readonly state: string;
  /** Which plan (HorizonSealed / HorizonRenewed event) introduced the node. */
  readonly plan: number;
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

  // Kahn's algorithm over one plan's nodes: repeatedly take the smallest id whose deps in the plan are all placed.
  const position = new Map<string, number>();
  for (const plan of new Set(ready.map((id) => nodes[id]!.plan))) {
    const members = ids.filter((id) => nodes[id]!.plan === plan);
    const placed = new Set<string>();
    let k = 0;
    while (placed.size < members.length) {
      const next = members.filter((id) => !placed.has(id) && nodes[id]!.deps.every((d) => placed.has(d) || !members.includes(d))).sort()[0];
      if (next === undefined) break; // a cycle: the rest keeps no position (the product refuses cyclic plans anyway)
      placed.add(next);
      position.set(next, k++);
    }
  }
  const topo = (id: string) => position.get(id) ?? Number.MAX_SAFE_INTEGER;
  return ready.sort((a, b) => depth(b) - depth(a) || topo(a) - topo(b) || (a < b ? -1 : a > b ? 1 : 0));
}
