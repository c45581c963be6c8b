import { decideCancel } from '../../../commands/operator.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, as: { type: 'string' }, 'signing-key': { type: 'string' } };
export const positionals = { min: 1, max: 1 };

export interface CancelOutput {
  readonly nodeId: string;
  /** Every node canceled: the one named first, then its dependents that were not accepted. */
  readonly canceled: string[];
  readonly position: number;
  readonly unblocked: boolean;
}

/** `longbuild cancel NODE [--reason TEXT]`: the node and its unaccepted dependents are never worked on (NodeCanceled). */
export async function run(ctx: CommandContext): Promise<CancelOutput> {
  const nodeId = ctx.positionals[0]!;
  const reason = typeof ctx.flags.reason === 'string' ? ctx.flags.reason : undefined;
  return operate(ctx, `cancel.${nodeId}`, (state, user) => decideCancel(state, nodeId, reason, user), (before, after, event) => ({
    nodeId, canceled: event.type === 'NodeCanceled' ? [...event.data.nodeIds] : [], position: after.position, unblocked: before.blocked !== null && after.blocked === null,
  }));
}

export function render(d: CancelOutput): string {
  const n = d.canceled.length - 1;
  const more = n > 0 ? ` with ${n} node${n === 1 ? ' that depends' : 's that depend'} on it (${d.canceled.slice(1).join(', ')})` : '';
  return `${d.nodeId} canceled${more}, recorded at position ${d.position}${d.unblocked ? '; the build is unblocked' : ''}\nnext: longbuild run\n`;
}
