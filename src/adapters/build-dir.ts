import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { NotFoundError, ValidationError } from '../events/errors.js';
import type { EventCatalogue } from '../events/catalogue.js';
import { openEventLog, type OpenLogOptions } from './log/open-log.js';
import type { TransferableEventLog } from './log/verbatim.js';
import { ProjectionStore, type ProjectionStoreOptions } from '../projections/engine.js';
import { allProjections } from '../projections/all-projections.js';

/** Where a build keeps its files. Everything under `dir` is owned by longbuild. */
export interface BuildPaths {
  readonly repo: string;
  readonly dir: string;
  /** The event log (the only truth) when it lives in the build directory's SQLite file. */
  readonly events: string;
  /** Which log backend the build uses (`{ "log": SPEC }`); absent means `sqlite` (events.db). */
  readonly logSpec: string;
  /** Projection tables and snapshots (a cache, rebuildable from the log). */
  readonly projections: string;
  /** The blueprint or request/config copy the build was initialised from. */
  readonly driver: string;
  readonly evidence: string;
  readonly worktrees: string;
  readonly workspaces: string;
  readonly cache: string;
  /** The integrator's own repository, private to the host. */
  readonly integrator: string;
  /** The sandbox's init binary lives here. */
  readonly sandbox: string;
  /** Private index files of the host's attempt commits. */
  readonly index: string;
  /** The Merkle tree of the log, a cache like the projections. */
  readonly tree: string;
  /** Signed checkpoints of the log, one file per tree size. */
  readonly checkpoints: string;
  /** Planner answers as received, by call, kept until recorded: a crash in between re-asks no model. */
  readonly answers: string;
  /** Marks of planner and worker calls about to start (a crash before one records no re-invocation). */
  readonly calls: string;
  /** Where command planners and workers report what each call used, a directory per invocation. */
  readonly usage: string;
  /** The build's package cache: read-write for setup, read-only for verification, never shared with another build. */
  readonly packages: string;
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
    logSpec: join(dir, 'log.json'),
    projections: join(dir, 'projections.db'),
    driver: join(dir, 'driver.json'),
    evidence: join(dir, 'evidence'),
    worktrees: join(dir, 'worktrees'),
    workspaces: join(dir, 'workspaces'),
    cache: join(dir, 'cache'),
    integrator: join(dir, 'integrator.git'),
    sandbox: join(dir, 'sandbox'),
    index: join(dir, 'index'),
    tree: join(dir, 'tree.db'),
    checkpoints: join(dir, 'checkpoints'),
    answers: join(dir, 'answers'),
    calls: join(dir, 'calls'),
    usage: join(dir, 'usage'),
    packages: join(dir, 'packages'),
  };
}

/** The log spec a build records in `<dir>/log.json`, or null when it has none (SQLite). */
export function recordedLogSpec(paths: BuildPaths): string | null {
  if (!existsSync(paths.logSpec)) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(paths.logSpec, 'utf8'));
  } catch (err) {
    throw new ValidationError(`${paths.logSpec} is not valid JSON: ${(err as Error).message}`);
  }
  const log = (raw as { log?: unknown } | null)?.log;
  if (typeof log !== 'string' || log === '') throw new ValidationError(`${paths.logSpec} must hold { "log": SPEC }`);
  return log;
}

/** Record which log the build uses, so every later command opens the same backend. */
export function recordLogSpec(paths: BuildPaths, spec: string): void {
  writeFileSync(paths.logSpec, `${JSON.stringify({ log: spec })}\n`, { mode: 0o600 });
}

/** Whether the build directory holds a build (a recorded remote log, or the SQLite file). */
export function buildExists(paths: BuildPaths): boolean {
  return existsSync(paths.logSpec) || existsSync(paths.events);
}

/**
 * Open the build's event log, whichever backend `<dir>/log.json` names (default: SQLite
 * `<dir>/events.db`); a missing build is a clear NotFoundError.
 */
export async function openBuildLog(paths: BuildPaths, opts: Omit<OpenLogOptions, 'defaultSqlitePath'> & { catalogue?: EventCatalogue } = {}): Promise<TransferableEventLog> {
  if (!buildExists(paths)) throw new NotFoundError(`no build in ${paths.dir} (run \`longbuild init --blueprint FILE\` first, or pass --dir)`);
  return openEventLog(recordedLogSpec(paths) ?? 'sqlite', { ...opts, defaultSqlitePath: paths.events });
}

/** Open the build's projection store over every registered projection. */
export function openBuildProjections(paths: BuildPaths, options?: ProjectionStoreOptions): ProjectionStore {
  return ProjectionStore.open(paths.projections, allProjections(), { eventIndex: true, ...options });
}
