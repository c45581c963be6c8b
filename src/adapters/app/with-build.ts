import { InterruptedError, StorageError } from '../../events/errors.js';
import { openBuild, type BuildSession, type OpenOptions } from '../session.js';
import { asStorageError } from '../../projections/storage-errors.js';
import { sessionOptions, type AppContext } from './context.js';

/**
 * Open the build, run `fn`, always close. An interrupt or a storage failure is reported with the
 * position the log stands at; a failure of the close after a failure does not hide the first.
 */
export async function withBuild<T>(ctx: AppContext, fn: (s: BuildSession) => Promise<T>, extra: Partial<OpenOptions> = {}): Promise<T> {
  const session = await openBuild({ ...sessionOptions(ctx), ...extra });
  const positioned = (e: unknown): unknown => {
    const err = asStorageError(e);
    return (err instanceof InterruptedError || err instanceof StorageError) && err.position === undefined ? err.at(session.controller.current.position) : err;
  };
  let failure: { readonly err: unknown } | null = null;
  try {
    return await fn(session);
  } catch (err) {
    failure = { err };
    throw positioned(err);
  } finally {
    try {
      await session.close(failure?.err instanceof StorageError ? { sign: false } : {});
    } catch (err) {
      if (failure === null) throw positioned(err);
    }
  }
}
