import { compareCodePoints } from '../../../events/canonical.js';
import { UsageError } from '../../../events/errors.js';
import { stateAsOf } from '../time-travel.js';
import type { CommandContext } from '../types.js';
import { withBuild } from '../with-build.js';

export const positionals = { min: 2, max: 2 };

export interface DiffOutput {
  readonly from: number;
  readonly to: number;
  readonly added: string[];
  readonly removed: string[];
  readonly changed: { id: string; from: string; to: string }[];
  readonly events: number;
  readonly graphRevision: { from: number; to: number };
  readonly integrationHead: { from: string | null; to: string | null };
}

function position(arg: string): number {
  if (!/^\d+$/.test(arg)) throw new UsageError(`diff: positions must be whole numbers, got '${arg}'`);
  return Number(arg);
}

/** What changed in the graph between two log positions. */
export async function run(ctx: CommandContext): Promise<DiffOutput> {
  const a = position(ctx.positionals[0]!);
  const b = position(ctx.positionals[1]!);
  return withBuild(ctx, async (s) => {
    const from = await stateAsOf(s, { at: a });
    const to = await stateAsOf(s, { at: b });
    const ids = new Set([...Object.keys(from.nodes), ...Object.keys(to.nodes)]);
    const added: string[] = [];
    const removed: string[] = [];
    const changed: DiffOutput['changed'] = [];
    for (const id of [...ids].sort(compareCodePoints)) {
      const x = from.nodes[id];
      const y = to.nodes[id];
      if (!x) added.push(id);
      else if (!y) removed.push(id);
      else if (x.state !== y.state) changed.push({ id, from: x.state, to: y.state });
    }
    return {
      from: a, to: b, added, removed, changed, events: Math.abs(b - a),
      graphRevision: { from: from.graphRevision, to: to.graphRevision },
      integrationHead: { from: from.integrationHead, to: to.integrationHead },
    };
  });
}

export function render(d: DiffOutput): string {
  return [
    `positions ${d.from} → ${d.to} (${d.events} events), graph revision ${d.graphRevision.from} → ${d.graphRevision.to}`,
    `integration head ${d.integrationHead.from ?? '-'} → ${d.integrationHead.to ?? '-'}`,
    `added: ${d.added.join(', ') || '-'}`,
    `removed: ${d.removed.join(', ') || '-'}`,
    'changed:',
    ...(d.changed.length ? d.changed.map((c) => `  ${c.id}: ${c.from} → ${c.to}`) : ['  -']),
    '',
  ].join('\n');
}
