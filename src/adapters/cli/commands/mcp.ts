import { UsageError } from '../../../events/errors.js';
import { buildExists } from '../../build-dir.js';
import { serveMcp } from '../../mcp/server.js';
import { packageFile, packageVersion } from '../../package-files.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { 'allow-control': { type: 'boolean' } };

export interface McpOutput {
  readonly action: 'mcp';
}

/**
 * `longbuild mcp [--allow-control]` (decision 0046): a Model Context Protocol server on
 * stdin/stdout for the build in --repo/--dir, until the client closes it. Nothing else is printed
 * on stdout (it is the protocol's).
 */
export async function run(ctx: CommandContext): Promise<McpOutput> {
  const paths = pathsOf(ctx);
  if (!buildExists(paths)) throw new UsageError(`mcp: no build in ${paths.dir}; run \`longbuild init\` first, or give --repo/--dir`);
  await serveMcp({
    bin: packageFile('bin', 'longbuild.js'), repo: ctx.repo, dir: ctx.dir, allowControl: ctx.flags['allow-control'] === true, version: packageVersion(),
    env: { ...process.env, ...ctx.env }, openLog: () => openBuildLog(paths),
  });
  return { action: 'mcp' };
}

export function render(): string {
  return '';
}

export function renderJson(): string {
  return '';
}
