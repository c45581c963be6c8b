import { UsageError } from '../../../events/errors.js';
import { initFromBlueprint } from '../../session.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { sessionOptions } from '../with-build.js';

export const flags: Record<string, FlagSpec> = { blueprint: { type: 'string' } };

export interface InitOutput {
  readonly buildId: string;
  readonly requestSha256: string;
  readonly position: number;
  readonly dir: string;
}

/** Create a build from a blueprint: git repo if absent, build directory, first event. */
export async function run(ctx: CommandContext): Promise<InitOutput> {
  const blueprint = ctx.flags.blueprint;
  if (typeof blueprint !== 'string') throw new UsageError('init: --blueprint FILE is required (see `longbuild init --help`)');
  const r = await initFromBlueprint(blueprint, sessionOptions(ctx));
  return { buildId: r.buildId, requestSha256: r.requestSha256, position: r.position, dir: r.paths.dir };
}

export function render(d: InitOutput): string {
  return `initialised build ${d.buildId} in ${d.dir}\nrequest sha256 ${d.requestSha256}\nnext: longbuild run   (or longbuild step, one controller event at a time)\n`;
}
