import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { NotFoundError } from '../events/errors.js';
import { SqliteEventLog } from './log/sqlite-log.js';
import { ProjectionStore } from '../projections/engine.js';
import { allProjections } from '../projections/registry.js';

/** Where a build keeps its files. Everything under `dir` is owned by longbuild. */
export interface BuildPaths {
  readonly repo: string;
  readonly dir: string;
  /** The event log (the only truth). */
  readonly events: string;
  /** Projection tables and snapshots (a cache, rebuildable from the log). */
  readonly projections: string;
  /** The blueprint or request/config copy the build was initialised from. */
  readonly driver: string;
  readonly evidence: string;
  readonly worktrees: string;
  readonly workspaces: string;
  readonly cache: string;
}

/** Resolve the build paths from `--repo` (default cwd) and `--dir` (default `<repo>/.longbuild`). */
export function buildPaths(optsOrDir: string | { repo?: string; dir?: string; cwd?: string }): BuildPaths {
  const opts = typeof optsOrDir === 'string' ? { dir: optsOrDir } : optsOrDir;
  const cwd = opts.cwd ?? process.cwd();
  const repo = resolve(cwd, opts.repo ?? '.');
  // An explicit --dir is relative to the working directory; the default lives in the repo.
  const dir = opts.dir === undefined ? join(repo, '.longbuild') : isAbsolute(opts.dir) ? opts.dir : resolve(cwd, opts.dir);
  return {
    repo,
    dir,
    events: join(dir, 'events.db'),
    projections: join(dir, 'projections.db'),
    driver: join(dir, 'driver.json'),
    evidence: join(dir, 'evidence'),
    worktrees: join(dir, 'worktrees'),
    workspaces: join(dir, 'workspaces'),
    cache: join(dir, 'cache'),
  };
}

/** Open the build's event log; a missing build is a clear NotFoundError. */
export function openBuildLog(paths: BuildPaths): SqliteEventLog {
  if (!existsSync(paths.events)) throw new NotFoundError(`no build in ${paths.dir} (run \`longbuild init --blueprint FILE\` first, or pass --dir)`);
  return new SqliteEventLog({ path: paths.events });
}

/** Open the build's projection store over every registered projection. */
export function openBuildProjections(paths: BuildPaths): ProjectionStore {
  return ProjectionStore.open(paths.projections, allProjections());
}
