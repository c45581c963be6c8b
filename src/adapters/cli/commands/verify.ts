import { UsageError } from '../../../events/errors.js';
import { verifyBuild, type VerifyOutput } from '../../app/verify-build.js';
import type { CommandContext, FlagSpec } from '../types.js';

export type { VerifyOutput };

export const flags: Record<string, FlagSpec> = { since: { type: 'string' }, 'expect-head': { type: 'string' }, key: { type: 'string' }, sample: { type: 'int' }, seed: { type: 'int' } };

/** `longbuild verify`: the chain, schemas, signed checkpoints, projections, refs and evidence (src/adapters/app/verify-build.ts). */
export async function run(ctx: CommandContext): Promise<VerifyOutput> {
  const f = ctx.flags;
  if (f.sample !== undefined && (typeof f.sample !== 'number' || f.sample < 1)) throw new UsageError('verify: --sample must be a positive number of snapshots');
  return verifyBuild(ctx, {
    ...(typeof f.since === 'string' ? { since: f.since } : {}),
    ...(typeof f['expect-head'] === 'string' ? { expectHead: f['expect-head'] } : {}),
    ...(typeof f.key === 'string' ? { key: f.key } : {}),
    ...(typeof f.sample === 'number' ? { sample: f.sample } : {}),
    ...(typeof f.seed === 'number' ? { seed: f.seed } : {}),
  });
}

export function render(data: VerifyOutput): string {
  const lines = [
    `${data.ok ? 'ok' : 'FAILED'}: ${data.events} events, head ${data.headHash}`,
    `merkle root ${data.treeRoot ?? '(not computed: the chain is broken)'} at size ${data.events}; ${data.checkpoints} signed checkpoint${data.checkpoints === 1 ? '' : 's'} checked`,
    `projections sha256 ${data.projectionsSha256 ?? '(not computed: the chain is broken)'}; ${data.snapshots.checked} time-travel snapshots refolded${data.snapshots.seed !== null ? ` (sample, --seed ${data.snapshots.seed})` : ''}`,
    ...(data.forks ?? []).map((f) => `fork of ${f.parent.buildId} at ${f.parent.position} (ForkedFrom at ${f.position}): ${f.reachable
      ? `parent reachable at ${f.parent.dir}, link checked; ${f.reusedChecked} of ${f.reused} reused results checked against it`
      : `parent not reachable at ${f.parent.dir}: the link is checked from this log alone; ${f.reused} reused results not compared`}`),
    ...(data.live ? [`note: the build advanced while verifying (a run is live): the log is verified up to position ${data.events}; the stored projections and refs were not compared`] : []),
    ...data.problems.map((p) => `problem at position ${p.position}: ${p.problem}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function failure(data: VerifyOutput): string | undefined {
  const first = data.problems[0];
  return first ? `verify failed at position ${first.position}: ${first.problem}` : undefined;
}
