import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import { buildPaths, openBuildLog as openLogOfBuild, openBuildProjections, type BuildPaths } from '../build-dir.js';
import { sessionOptions } from './session-options.js';
import type { TransferableEventLog } from '../log/verbatim.js';
import type { CommandContext } from './types.js';

/** The build paths a command works on (`--repo`, `--dir`), resolved as every other command does. */
export function pathsOf(ctx: CommandContext): BuildPaths {
  return buildPaths(sessionOptions(ctx));
}

/** Open the log of an existing build, whichever backend it records; a missing build is NotFound. */
export function openBuildLog(paths: BuildPaths, catalogue: EventCatalogue = domainCatalogue): Promise<TransferableEventLog> {
  return openLogOfBuild(paths, { catalogue });
}

export { openBuildProjections };
