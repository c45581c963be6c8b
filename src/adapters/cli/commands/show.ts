import { formatCount, formatUsd } from '../../../commands/spend.js';
import { viewOf, type GraphView } from '../../../projections/view.js';
import { shortList } from '../short-list.js';
import { stateAsOf } from '../../app/state-at.js';
import { timePointFromFlags } from '../time-point.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withReading } from '../../app/reading.js';

export const flags: Record<string, FlagSpec> = { at: { type: 'int' }, revision: { type: 'int' }, checkpoint: { type: 'string' } };

export type ShowOutput = GraphView;

/** The graph (summaries with what they compacted), ready wave, horizon and integration head as of a point in the log. */
export async function run(ctx: CommandContext): Promise<ShowOutput> {
  const point = timePointFromFlags(ctx.flags);
  return withReading(ctx, async (s) => viewOf(await stateAsOf(s, point)), { whole: 'revision' in point });
}

export function render(d: ShowOutput): string {
  const width = Math.max(4, ...d.nodes.map((n) => n.id.length));
  const rows = d.nodes.map((n) => {
    const deps = n.deps.length ? `  <- ${n.deps.join(', ')}` : '';
    const what = n.summary !== undefined ? `  (compacts ${n.summary.compacted.length} node${n.summary.compacted.length === 1 ? '' : 's'}${n.summary.absorbed.length > 0 ? ` and ${n.summary.absorbed.join(', ')}` : ''})` : n.attempts > 1 ? `  (${n.attempts} attempts)` : '';
    const declared = n.changes !== undefined ? `  changes ${n.changes.join('+')}` : '';
    const retires = n.retires !== undefined ? `  retires ${n.retires.length} test${n.retires.length === 1 ? '' : 's'} (${n.retires.slice(0, 3).map((t) => JSON.stringify(t)).join(', ')}${n.retires.length > 3 ? ', …' : ''})` : '';
    return `  ${n.id.padEnd(width)}  ${n.state.padEnd(10)} ${n.kind.padEnd(9)} ${n.milestone}${deps}${what}${declared}${retires}`;
  });
  const h = d.horizon;
  return [
    `as of position ${d.position}: graph revision ${d.graphRevision} (sha256 ${d.graphSha256.slice(0, 16)}…), integration head ${d.integrationHead ?? '-'}`,
    h === null ? 'horizon: none sealed yet'
      : `horizon ${h.horizonId} (revision ${h.revision}): ${h.detailed.map((m) => `${m.id} [${m.status}]`).join(', ')}${h.coarse.length > 0 ? `; then ${h.coarse.map((m) => m.id).join(', ')}` : ''}`,
    `nodes (${d.nodes.length}):`,
    ...rows,
    `ready (ranked): ${shortList(d.ready)}`,
    ...(d.checkpoints.length > 0 ? [`checkpoints: ${shortList(d.checkpoints)}`] : []),
    ...(d.spend.calls > 0 ? [`spend: ${d.spend.usd !== null ? formatUsd(d.spend.usd) : 'cost unknown'}, ${formatCount(d.spend.inputTokens + d.spend.outputTokens)} tokens in ${d.spend.calls} call${d.spend.calls === 1 ? '' : 's'} (${d.spend.reported} reported)`] : []),
    ...(d.completed ? ['completed'] : d.blocked !== null ? [`blocked: ${d.blocked}`] : []),
    '',
  ].join('\n');
}
