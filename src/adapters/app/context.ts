import { buildPaths, type BuildPaths } from '../build-dir.js';
import type { OpenOptions } from '../session.js';

/**
 * What a use case needs to find and drive a build, as plain options: the CLI fills it from its
 * flags (its CommandContext is one), the viewer, the MCP server and the fuzzer make their own.
 */
export interface AppContext {
  /** Absolute repository path. */
  readonly repo: string;
  /** The build directory when one was named (`--dir`); otherwise `<repo>/.longbuild`. */
  readonly explicitDir?: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Say more on stderr (stale locks removed, stack traces). */
  readonly verbose: boolean;
  /** Wait for the controller lease instead of failing when another controller holds it. */
  readonly standby?: boolean;
  /** The signing key file named for this call (`--signing-key`), else the default is looked up. */
  readonly signingKey?: string;
  /** Who records an operator's decision (`--as`), when not the OS user. */
  readonly operator?: string;
  /** Lines for a person (warnings, progress); results are returned, not printed. */
  readonly stderr: (text: string) => void;
}

/** Session options of a use case: an explicit directory wins, else the build lives in the repo. */
export function sessionOptions(app: AppContext): OpenOptions {
  return {
    repo: app.repo,
    ...(app.explicitDir !== undefined ? { dir: app.explicitDir } : {}),
    cwd: app.cwd,
    env: app.env as NodeJS.ProcessEnv,
    warn: (line) => app.stderr(`longbuild: ${line}\n`),
    ...(app.signingKey !== undefined ? { signingKey: app.signingKey } : {}),
  };
}

/** The build paths a use case works on, resolved as every other one does. */
export function pathsOf(app: AppContext): BuildPaths {
  return buildPaths(sessionOptions(app));
}
