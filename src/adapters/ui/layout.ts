/** The viewer's DAG layout: dagre, left to right, in SVG units. */
import dagre from '@dagrejs/dagre';
import type { CriticalPath } from '../../projections/critical-path.js';
import type { GraphView } from '../../projections/view.js';

export interface LaidOut extends GraphView {
  /** The longest chain of unfinished work at that point, with its estimate (what `status` shows). */
  readonly criticalPath?: CriticalPath;
  readonly layout: { readonly width: number; readonly height: number; readonly nodes: Record<string, { x: number; y: number; w: number; h: number }>; readonly edges: { from: string; to: string; points: { x: number; y: number }[] }[] };
}

/** A left-to-right DAG layout of the view's graph (dagre), in SVG units. */
export function layoutOf(v: GraphView): LaidOut {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 56, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  // Room for the id, and for the attempt count or what a summary stands for at the right.
  for (const n of v.nodes) g.setNode(n.id, { width: Math.round(Math.max(96, 18 + 7.4 * n.id.length + (n.attempts > 1 || n.summary !== undefined ? 34 : 0))), height: 34 });
  const ids = new Set(v.nodes.map((n) => n.id));
  for (const n of v.nodes) for (const d of n.deps) if (ids.has(d)) g.setEdge(d, n.id);
  dagre.layout(g);
  const nodes: LaidOut['layout']['nodes'] = {};
  for (const id of g.nodes()) {
    const p = g.node(id);
    nodes[id] = { x: Math.round(p.x - p.width / 2), y: Math.round(p.y - p.height / 2), w: p.width, h: p.height };
  }
  const edges = g.edges().map((e: { v: string; w: string }) => ({ from: e.v, to: e.w, points: (g.edge(e).points ?? []).map((p: { x: number; y: number }) => ({ x: Math.round(p.x), y: Math.round(p.y) })) }));
  const graph = g.graph();
  return { ...v, layout: { width: Math.ceil(graph.width ?? 0), height: Math.ceil(graph.height ?? 0), nodes, edges } };
}
