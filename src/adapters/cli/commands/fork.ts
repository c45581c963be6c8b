import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../../../events/errors.js';
import { forkBuild, type ForkResult } from '../../fork/fork-build.js';
import { blueprintDriver, requestDriver } from '../../driver-file.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = {
  at: { type: 'int' }, to: { type: 'string' }, blueprint: { type: 'string' }, request: { type: 'string' }, config: { type: 'string' }, 'signing-key': { type: 'string' },
};

/**
 * A new build from a past point of this one (R-41): the parent's first --at events verbatim, a
 * ForkedFrom event, the parent's repository state as of that point, under the same driver or a
 * new blueprint or request and config. `longbuild run --repo DIR` goes on from there, adopting the
 * parent's results for calls whose inputs are the same.
 */
export async function run(ctx: CommandContext): Promise<ForkResult> {
  const { at, to, blueprint, request, config } = ctx.flags;
  if (typeof at !== 'number') throw new UsageError('fork: --at POSITION is required (a position of this build\'s log; see `longbuild log` or `longbuild ui`)');
  if (typeof to !== 'string' || to === '') throw new UsageError('fork: --to DIR is required (a new directory for the fork\'s repository)');
  if (typeof blueprint === 'string' && (request !== undefined || config !== undefined)) throw new UsageError('fork: give either --blueprint FILE or --request FILE --config FILE, not both');
  if (config !== undefined && request === undefined) throw new UsageError('fork: --config goes with --request FILE');
  let driver;
  if (typeof blueprint === 'string') driver = blueprintDriver(resolve(ctx.cwd, blueprint));
  else if (typeof request === 'string') {
    const configPath = typeof config === 'string' ? resolve(ctx.cwd, config) : join(ctx.repo, 'longbuild.config.json');
    if (!existsSync(configPath)) throw new UsageError(`fork: --request needs a config: pass --config FILE or create ${configPath}`);
    driver = requestDriver(resolve(ctx.cwd, request), configPath);
  }
  return forkBuild({
    parent: { repo: ctx.repo, ...(ctx.flags.dir !== undefined ? { dir: ctx.dir } : {}), cwd: ctx.cwd },
    at, to, env: ctx.env as NodeJS.ProcessEnv, cwd: ctx.cwd,
    ...(driver !== undefined ? { driver } : {}),
    ...(typeof ctx.flags['signing-key'] === 'string' ? { signingKey: ctx.flags['signing-key'] } : {}),
  });
}

export function render(d: ForkResult): string {
  const reuse = d.reusable.planner + d.reusable.worker === 0
    ? 'the parent recorded no result after that point that a fork can reuse'
    : `the parent recorded ${d.reusable.worker} worker and ${d.reusable.planner} planner results after that point; calls with the same inputs reuse them`;
  return `forked build ${d.buildId} at position ${d.parent.position} of ${d.parent.dir} (${d.parent.events} events) into ${d.repo}\n` +
    `ForkedFrom at ${d.position}, parent head ${d.parent.headHash.slice(0, 16)}${d.checkpoint !== undefined ? `, the parent's signed checkpoint at size ${d.checkpoint.size}` : ''}; ${d.driverChanged ? 'new driver' : 'same driver'}\n` +
    `${reuse}\nnext: longbuild run --repo ${d.repo}\n`;
}
