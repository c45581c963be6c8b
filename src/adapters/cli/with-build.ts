import { InterruptedError } from '../../events/errors.js';
import { openBuild, type BuildSession, type OpenOptions } from '../session.js';
import type { CommandContext } from './types.js';

/** Session options from the CLI context: an explicit --dir wins, else the build lives in the repo. */
export function sessionOptions(ctx: CommandContext): OpenOptions {
  return {
    repo: ctx.repo,
    ...(ctx.flags.dir !== undefined ? { dir: ctx.dir } : {}),
    cwd: ctx.cwd,
    env: ctx.env as NodeJS.ProcessEnv,
    ...(typeof ctx.flags['signing-key'] === 'string' ? { signingKey: ctx.flags['signing-key'] } : {}),
  };
}

/** Open the build, run `fn`, always close. An interrupt is reported with the position the log stands at. */
export async function withBuild<T>(ctx: CommandContext, fn: (s: BuildSession) => Promise<T>, extra: Partial<OpenOptions> = {}): Promise<T> {
  const session = await openBuild({ ...sessionOptions(ctx), ...extra });
  try {
    return await fn(session);
  } catch (err) {
    throw err instanceof InterruptedError && err.position === undefined ? err.at(session.controller.current.position) : err;
  } finally {
    await session.close();
  }
}
