import { isAbsolute, join, resolve } from 'node:path';

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
export function buildPaths(opts: { repo?: string; dir?: string; cwd?: string }): BuildPaths {
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
