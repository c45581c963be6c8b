import type { OpenOptions } from '../session.js';
import type { CommandContext } from './types.js';

/** Session options from the CLI context: an explicit --dir wins, else the build lives in the repo. */
export function sessionOptions(ctx: CommandContext): OpenOptions {
  return {
    repo: ctx.repo,
    ...(ctx.flags.dir !== undefined ? { dir: ctx.dir } : {}),
    cwd: ctx.cwd,
    env: ctx.env as NodeJS.ProcessEnv,
    warn: (line) => ctx.stderr(`longbuild: ${line}\n`),
    ...(typeof ctx.flags['signing-key'] === 'string' ? { signingKey: ctx.flags['signing-key'] } : {}),
  };
}
