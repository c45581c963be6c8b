import { UsageError } from '../../../events/errors.js';
import { diffViews, viewOf, type ViewDiff } from '../../../projections/view.js';
import { stateAsOf, type TimePoint } from '../../app/state-at.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withReading } from '../../app/reading.js';

export const positionals = { min: 2, max: 2 };
export const flags: Record<string, FlagSpec> = { revision: { type: 'boolean' }, checkpoint: { type: 'boolean' } };

export interface DiffOutput extends Omit<ViewDiff, 'from' | 'to'> {
  /** The two log positions compared (a revision or checkpoint is named by the position that made it). */
  readonly from: number;
  readonly to: number;
  readonly events: number;
  readonly graphRevision: { readonly from: number; readonly to: number };
  readonly integrationHead: { readonly from: string | null; readonly to: string | null };
}

function whole(arg: string, what: string): number {
  if (!/^\d+$/.test(arg)) throw new UsageError(`diff: ${what} must be whole numbers, got '${arg}'`);
  return Number(arg);
}

/** The two points to compare: positions (default), graph revisions (--revision) or checkpoints (--checkpoint). */
export function diffPoints(flags: Readonly<Record<string, unknown>>, a: string, b: string): [TimePoint, TimePoint] {
  if (flags.revision === true && flags.checkpoint === true) throw new UsageError('diff: give --revision or --checkpoint, not both');
  if (flags.revision === true) return [{ revision: whole(a, 'graph revisions') }, { revision: whole(b, 'graph revisions') }];
  if (flags.checkpoint === true) return [{ checkpoint: a }, { checkpoint: b }];
  return [{ at: whole(a, 'positions') }, { at: whole(b, 'positions') }];
}

/** Everything that changed in the build between two points of its log (nodes, compaction, dependencies, ready wave, horizon). */
export async function run(ctx: CommandContext): Promise<DiffOutput> {
  const [pa, pb] = diffPoints(ctx.flags, ctx.positionals[0]!, ctx.positionals[1]!);
  return withReading(ctx, async (s) => {
    const d = diffViews(viewOf(await stateAsOf(s, pa)), viewOf(await stateAsOf(s, pb)));
    const { from, to, ...rest } = d;
    return {
      ...rest,
      from: from.position, to: to.position, events: Math.abs(to.position - from.position),
      graphRevision: { from: from.graphRevision, to: to.graphRevision },
      integrationHead: { from: from.integrationHead, to: to.integrationHead },
    };
  }, { whole: ctx.flags.revision === true });
}

const list = (xs: readonly string[]): string => xs.join(', ') || '-';

export function render(d: DiffOutput): string {
  return [
    `positions ${d.from} → ${d.to} (${d.events} events), graph revision ${d.graphRevision.from} → ${d.graphRevision.to}`,
    `integration head ${d.integrationHead.from ?? '-'} → ${d.integrationHead.to ?? '-'}`,
    `added: ${list(d.added)}`,
    `removed: ${list(d.removed)}`,
    ...(d.compacted.length > 0 ? ['compacted:', ...d.compacted.map((c) => `  ${c.nodes.join(', ')} → ${c.summary} (milestone ${c.milestone})`)] : []),
    'changed:',
    ...(d.changed.length ? d.changed.map((c) => `  ${c.id}: ${c.from} → ${c.to}`) : ['  -']),
    ...(d.rewired.length > 0 ? ['dependencies:', ...d.rewired.map((r) => `  ${r.id}: ${[...r.added.map((x) => `+${x}`), ...r.removed.map((x) => `-${x}`)].join(' ')}`)] : []),
    ...(d.attempts.length > 0 ? [`attempts: ${d.attempts.map((a) => `${a.id} ${a.from} → ${a.to}`).join(', ')}`] : []),
    ...(d.ready !== null ? [`ready: ${list(d.ready.from)} → ${list(d.ready.to)}`] : []),
    ...(d.horizon !== null ? [
      `horizon: ${d.horizon.from ?? '-'} → ${d.horizon.to ?? '-'}${d.horizon.milestones.length > 0 ? `; ${d.horizon.milestones.map((m) => `${m.id} ${m.from ?? '-'} → ${m.to ?? '-'}`).join(', ')}` : ''}`,
    ] : []),
    ...(d.checkpointed.length > 0 ? [`checkpointed: ${d.checkpointed.join(', ')}`] : []),
    '',
  ].join('\n');
}
