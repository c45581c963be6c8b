import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import { openBuildLog as openLogOfBuild, openBuildProjections, type BuildPaths } from '../build-dir.js';
import type { TransferableEventLog } from '../log/verbatim.js';

/** Open the log of an existing build, whichever backend it records; a missing build is NotFound. */
export function openBuildLog(paths: BuildPaths, catalogue: EventCatalogue = domainCatalogue): Promise<TransferableEventLog> {
  return openLogOfBuild(paths, { catalogue });
}

export { openBuildProjections };
