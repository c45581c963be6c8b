import { awaitingApproval, decideApprove } from '../../../commands/operator.js';
import { describeGate } from '../../../commands/gates.js';
import type { DomainEvent } from '../../../events/catalogue.js';
import type { BuildState } from '../../../projections/build-state.js';
import { git } from '../../git/exec.js';
import { UsageError, ValidationError } from '../../../events/errors.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { operate } from '../../app/operate.js';
import { withReading } from '../../app/reading.js';

export const flags: Record<string, FlagSpec> = { reason: { type: 'string' }, as: { type: 'string' }, show: { type: 'boolean' }, 'signing-key': { type: 'string' } };

export interface ApproveOutput {
  /** What awaits (or awaited) approval: a proposal (`plan`), a milestone's checkpoint, the final head (`land`). */
  readonly gate: 'plan' | 'checkpoint' | 'land';
  readonly callId?: string;
  readonly purpose?: 'seal' | 'renew' | 'repair';
  readonly milestoneId?: string;
  readonly head?: string;
  /** A gated head is shown against this one (the checkpoint before it, or where the build started). */
  readonly base?: string;
  /** With --show: the proposal awaiting approval (nothing recorded). */
  readonly proposal?: unknown;
  /** With --show on a head gate: what changed, as git says it (`git diff --stat BASE HEAD`). */
  readonly diffStat?: string;
  /** Without --show: where the approval was recorded. */
  readonly position?: number;
  readonly shown?: true;
}

/** `longbuild approve [--reason TEXT] [--as NAME]`, or `--show`: what awaits approval. */
export async function run(ctx: CommandContext): Promise<ApproveOutput> {
  if (ctx.flags.show === true) {
    return withReading(ctx, async (s) => {
      const a = awaitingApproval(s.state);
      if (!a.ok) throw new ValidationError(`approve: ${a.reason}`);
      const w = a.what;
      if (w.gate === 'plan') return { gate: 'plan', callId: w.callId, purpose: w.purpose, proposal: w.proposal, shown: true };
      const stat = await git(ctx.repo, ['diff', '--stat', w.base, w.head], { allowFail: true });
      return { gate: w.gate, ...(w.milestoneId !== undefined ? { milestoneId: w.milestoneId } : {}), head: w.head, base: w.base, diffStat: stat.code === 0 ? stat.stdout.trimEnd() : '(git cannot diff these commits here)', shown: true };
    });
  }
  const reason = operatorText(ctx, 'approve', 'reason', false);
  return operate(ctx, 'approve', (state, user) => decideApprove(state, reason, user), (_before, after, event) => outputOf(after, event));
}

/** What an approve or reject recorded. */
export function outputOf(after: BuildState, event: DomainEvent): ApproveOutput {
  if (event.type === 'HeadReviewed') {
    const d = event.data;
    return { gate: d.gate, ...(d.milestoneId !== undefined ? { milestoneId: d.milestoneId } : {}), head: d.head, position: after.position };
  }
  const callId = (event.data as { callId: string }).callId;
  return { gate: 'plan', callId, purpose: after.plannerCalls[callId]?.purpose ?? 'seal', position: after.position };
}

/** A text flag of an operator command (`--reason`, `--as`): 1 to 2000 characters when given. */
export function operatorText(ctx: CommandContext, command: string, flag: string, required: boolean): string | undefined {
  const v = ctx.flags[flag];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string' || v.trim() === '' || v.length > 2000) throw new UsageError(`${command}: --${flag} must be a text of 1 to 2000 characters`);
  return v;
}

const WHAT = { seal: 'the first plan', renew: 'the renewal', repair: 'the repair window' } as const;

/** The thing approved or shown, in words. */
export function approvedWhat(d: ApproveOutput): string {
  if (d.gate === 'plan') return `${WHAT[d.purpose ?? 'seal']} (${d.callId})`;
  return describeGate({ gate: d.gate, ...(d.milestoneId !== undefined ? { milestoneId: d.milestoneId } : {}), head: d.head! });
}

export function render(d: ApproveOutput): string {
  if (d.shown === true && d.gate === 'plan') return `${approvedWhat(d)} awaiting approval:\n${JSON.stringify(d.proposal, null, 2)}\n`;
  if (d.shown === true) return `${approvedWhat(d)} awaiting approval; what changed since ${d.base!.slice(0, 12)}:\n${d.diffStat === '' ? '(no change)' : d.diffStat}\nsee: git diff ${d.base} ${d.head}\n`;
  const then = d.gate === 'plan' ? 'the next run seals it' : d.gate === 'checkpoint' ? 'the next run goes on' : 'the next run completes the build; `longbuild land` may publish it';
  return `${approvedWhat(d)} approved, recorded at position ${d.position}; ${then}\nnext: longbuild run\n`;
}
