import type { BuildPaths } from '../build-dir.js';
import { ValidationError } from '../../events/errors.js';
import { VerificationCache } from './verification-cache.js';

/**
 * The build's verification cache, or null when turned off with `LONGBUILD_VERIFY_CACHE=off`.
 * A runtime setting, not a logged one: the cache is never authority, so whether it is on
 * changes only how long verification takes, never what the log says was verified.
 */
export function verificationCacheFor(paths: Pick<BuildPaths, 'cache'>, env: NodeJS.ProcessEnv): VerificationCache | null {
  const v = env.LONGBUILD_VERIFY_CACHE;
  if (v === undefined || v === '' || v === 'on') return new VerificationCache(paths.cache);
  if (v === 'off') return null;
  throw new ValidationError(`LONGBUILD_VERIFY_CACHE must be 'on' or 'off', got '${v}'`, 'R-28');
}
