import { existsSync } from 'node:fs';
import { NotFoundError } from '../../events/errors.js';
import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import { allProjections } from '../../projections/registry.js';
import { ProjectionStore, type ProjectionStoreOptions } from '../../projections/engine.js';
import { buildPaths, type BuildPaths } from '../build-dir.js';
import { SqliteEventLog } from '../log/sqlite-log.js';
import type { CommandContext } from './types.js';

/** The build paths a command works on (`--repo`, `--dir`). */
export function pathsOf(ctx: CommandContext): BuildPaths {
  return buildPaths({ repo: ctx.repo, dir: ctx.dir, cwd: ctx.cwd });
}

/** Open the log of an existing build; a missing log is NotFound (run init first). */
export function openBuildLog(paths: BuildPaths, catalogue: EventCatalogue = domainCatalogue): SqliteEventLog {
  if (!existsSync(paths.events)) throw new NotFoundError(`no build in ${paths.dir} (no events.db); create one with \`longbuild init\` or pass --dir`);
  return new SqliteEventLog({ path: paths.events, catalogue });
}

/** Open the build's projections database over every registered projection. */
export function openBuildProjections(paths: BuildPaths, options?: ProjectionStoreOptions): ProjectionStore {
  return ProjectionStore.open(paths.projections, allProjections(), options);
}
