import { compareCodePoints } from '../../../events/canonical.js';
import type { BuildState } from '../../../projections/build-state.js';
import { graphSha256, rankReadyWave } from '../../../projections/graph.js';
import { stateAsOf, timePointFromFlags } from '../time-travel.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withBuild } from '../with-build.js';

export const flags: Record<string, FlagSpec> = { at: { type: 'int' }, revision: { type: 'int' }, checkpoint: { type: 'string' } };

export interface ShowOutput {
  readonly position: number;
  readonly graphRevision: number;
  readonly graphSha256: string;
  readonly integrationHead: string | null;
  readonly nodes: { id: string; kind: string; state: string; milestone: string; deps: string[] }[];
  readonly ready: string[];
}

/** The graph, ready wave and integration head as of a point in the log. */
export function showOf(st: BuildState): ShowOutput {
  return {
    position: st.position,
    graphRevision: st.graphRevision,
    graphSha256: graphSha256(st.nodes),
    integrationHead: st.integrationHead,
    nodes: Object.keys(st.nodes).sort(compareCodePoints).map((id) => {
      const n = st.nodes[id]!;
      return { id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...n.deps] };
    }),
    ready: rankReadyWave(st),
  };
}

export async function run(ctx: CommandContext): Promise<ShowOutput> {
  const point = timePointFromFlags(ctx.flags);
  return withBuild(ctx, async (s) => showOf(await stateAsOf(s, point)));
}

export function render(d: ShowOutput): string {
  const width = Math.max(4, ...d.nodes.map((n) => n.id.length));
  const rows = d.nodes.map((n) => `  ${n.id.padEnd(width)}  ${n.state.padEnd(10)} ${n.kind.padEnd(9)} ${n.milestone}${n.deps.length ? `  <- ${n.deps.join(', ')}` : ''}`);
  return [
    `as of position ${d.position}: graph revision ${d.graphRevision} (sha256 ${d.graphSha256.slice(0, 16)}…), integration head ${d.integrationHead ?? '-'}`,
    `nodes (${d.nodes.length}):`,
    ...rows,
    `ready (ranked): ${d.ready.join(', ') || '-'}`,
    '',
  ].join('\n');
}
