import { InterruptedError, StorageError } from '../../events/errors.js';
import { buildProjection } from '../../projections/build-projection.js';
import { ProjectionStore } from '../../projections/engine.js';
import { closeDatabase } from '../../projections/storage-guard.js';
import { buildPaths, openBuildLog } from '../build-dir.js';
import { sessionTimeSource, stateAtPosition, type TimeSource } from './time-travel.js';
import type { CommandContext } from './types.js';
import { sessionOptions, withBuild } from './with-build.js';

/**
 * Open a build for a reading command (status, show, diff), run `fn`, always close. The state at the
 * log's head comes from the newest view snapshot (buildView: the build without its closed history,
 * small however long the build ran) and the events after it, checked against the graph the log
 * recorded — not from the whole state's snapshot, which grows with every attempt ever made.
 * Nothing is written: the projections catch up at the next step. With `whole` (a graph revision
 * to look up), or when there is no view to start from (no projections yet, or ones made by
 * another version), the build is opened as for a step, read only.
 */
export async function withReading<T>(ctx: CommandContext, fn: (s: TimeSource) => Promise<T>, options: { readonly whole?: boolean } = {}): Promise<T> {
  const fast = options.whole === true ? null : await openView(ctx);
  if (fast === null) return wholeReading(ctx, fn);
  let position: number | undefined;
  try {
    const source = await fast.source();
    if (source === null) return await wholeReading(ctx, fn);
    position = source.state.position;
    return await fn(source);
  } catch (err) {
    throw (err instanceof InterruptedError || err instanceof StorageError) && err.position === undefined && position !== undefined ? err.at(position) : err;
  } finally {
    await fast.close();
  }
}

async function openView(ctx: CommandContext): Promise<{ source(): Promise<TimeSource | null>; close(): Promise<void> } | null> {
  const paths = buildPaths(sessionOptions(ctx));
  const log = await openBuildLog(paths);
  let local: ReturnType<typeof ProjectionStore.snapshotsOf> = null;
  try {
    local = ProjectionStore.snapshotsOf(paths.projections, buildProjection);
  } catch (err) {
    await log.close();
    throw err;
  }
  if (local === null) {
    await log.close();
    return null;
  }
  const { db, snapshots } = local;
  return {
    async source() {
      const head = await log.head();
      if (head === null) return null;
      const state = await stateAtPosition(log, head.position, snapshots);
      // A log that does not start with BuildInitialized is reported by the whole open.
      return state.build === null ? null : { state, whole: false, log, snapshots };
    },
    async close() {
      try {
        closeDatabase(db);
      } finally {
        await log.close();
      }
    },
  };
}

/** The whole build state, opened as for a step (catching the projections up), for reading. */
async function wholeReading<T>(ctx: CommandContext, fn: (s: TimeSource) => Promise<T>): Promise<T> {
  return withBuild(ctx, (s) => fn(sessionTimeSource(s)), { reading: true });
}
