import { decideRetry } from '../../../commands/operator.js';
import { UsageError } from '../../../events/errors.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';

export const flags: Record<string, FlagSpec> = { attempts: { type: 'int' }, as: { type: 'string' }, 'signing-key': { type: 'string' } };
export const positionals = { min: 1, max: 1 };

export interface RetryOutput {
  readonly nodeId: string;
  readonly attempts: number;
  readonly attemptLimit: number;
  readonly position: number;
  readonly unblocked: boolean;
}

/** `longbuild retry NODE [--attempts N]`: a blocked node gets N more attempts (recorded as NodeRetried). */
export async function run(ctx: CommandContext): Promise<RetryOutput> {
  const nodeId = ctx.positionals[0]!;
  const attempts = ctx.flags.attempts;
  if (attempts !== undefined && (typeof attempts !== 'number' || attempts < 1 || attempts > 100)) throw new UsageError('retry: --attempts must be a whole number from 1 to 100');
  return operate(ctx, `retry.${nodeId}`, (state, user) => decideRetry(state, nodeId, attempts as number | undefined, user), (before, after) => {
    const node = after.nodes[nodeId]!;
    return { nodeId, attempts: node.attemptLimit! - node.attempts, attemptLimit: node.attemptLimit!, position: after.position, unblocked: before.blocked !== null && after.blocked === null };
  });
}

export function render(d: RetryOutput): string {
  return `${d.nodeId}: ${d.attempts} more attempt${d.attempts === 1 ? '' : 's'} (limit ${d.attemptLimit}), recorded at position ${d.position}${d.unblocked ? '; the build is unblocked' : ''}\nnext: longbuild run\n`;
}
