import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import { allProjections } from '../../projections/registry.js';
import { ProjectionStore, type ProjectionStoreOptions } from '../../projections/engine.js';
import { buildPaths, openBuildLog as openLogOfBuild, type BuildPaths } from '../build-dir.js';
import type { TransferableEventLog } from '../log/verbatim.js';
import type { CommandContext } from './types.js';

/** The build paths a command works on (`--repo`, `--dir`). */
export function pathsOf(ctx: CommandContext): BuildPaths {
  return buildPaths({ repo: ctx.repo, dir: ctx.dir, cwd: ctx.cwd });
}

/** Open the log of an existing build, whichever backend it records; a missing build is NotFound. */
export function openBuildLog(paths: BuildPaths, catalogue: EventCatalogue = domainCatalogue): Promise<TransferableEventLog> {
  return openLogOfBuild(paths, { catalogue });
}

/** Open the build's projections database over every registered projection. */
export function openBuildProjections(paths: BuildPaths, options?: ProjectionStoreOptions): ProjectionStore {
  return ProjectionStore.open(paths.projections, allProjections(), options);
}
