import { InterruptedError, StorageError } from '../../events/errors.js';
import { buildProjection } from '../../projections/build-projection.js';
import { ProjectionStore } from '../../projections/engine.js';
import { closeDatabase } from '../../projections/storage-guard.js';
import { buildPaths, openBuildLog } from '../build-dir.js';
import type { OpenOptions } from '../session.js';
import { sessionTimeSource, stateAtPosition, type TimeSource } from './state-at.js';
import { sessionOptions, type AppContext } from './context.js';

/** A build open for reading: the state at the log's head and what time travel reads. Close it when done. */
export interface OpenTimeSource {
  readonly source: TimeSource;
  close(): Promise<void>;
}

/**
 * Open a build for reading (status, show, diff, the viewer). The state at the log's head comes from
 * the newest view snapshot (buildView: the build without its closed history, small however long
 * the build ran) and the events after it, checked against the graph the log recorded — not
 * from the whole state's snapshot, which grows with every attempt ever made. Nothing is written:
 * the projections catch up at the next step. With `whole` (a past graph revision to look up), or
 * when there is no view to start from (no projections yet, or ones made by another version), the
 * build is opened as for a step, read only (decision 0020).
 */
export async function openTimeSource(opts: OpenOptions, options: { readonly whole?: boolean } = {}): Promise<OpenTimeSource> {
  const fast = options.whole === true ? null : await openView(opts);
  if (fast !== null) return fast;
  // Loaded only here: a reading command that folds from the view needs none of a step's modules.
  const { openBuild } = await import('../session.js');
  const s = await openBuild({ ...opts, reading: true });
  return { source: sessionTimeSource(s), close: () => s.close({ sign: false }) };
}

/** The build's state from its newest view, or null when it cannot be had that way. */
async function openView(opts: OpenOptions): Promise<OpenTimeSource | null> {
  const paths = buildPaths(opts);
  const log = await openBuildLog(paths, { reading: true });
  let local: ReturnType<typeof ProjectionStore.snapshotsOf> = null;
  const close = async (): Promise<void> => {
    try {
      if (local !== null) closeDatabase(local.db);
    } finally {
      await log.close();
    }
  };
  let source: TimeSource | null = null;
  try {
    local = ProjectionStore.snapshotsOf(paths.projections, buildProjection);
    const head = local === null ? null : await log.head();
    if (local !== null && head !== null) {
      const state = await stateAtPosition(log, head.position, local.snapshots);
      // A log that does not start with BuildInitialized is reported by the whole open.
      if (state.build !== null) source = { state, whole: false, log, snapshots: local.snapshots };
    }
  } finally {
    if (source === null) await close();
  }
  return source === null ? null : { source, close };
}

/** Open the build for reading (openTimeSource), run `fn`, always close. */
export async function withReading<T>(ctx: AppContext, fn: (s: TimeSource) => Promise<T>, options: { readonly whole?: boolean } = {}): Promise<T> {
  const open = await openTimeSource(sessionOptions(ctx), options);
  try {
    return await fn(open.source);
  } catch (err) {
    throw (err instanceof InterruptedError || err instanceof StorageError) && err.position === undefined ? err.at(open.source.state.position) : err;
  } finally {
    await open.close();
  }
}
