import { isAbsolute, resolve } from 'node:path';
import type { BuildPaths } from '../build-dir.js';
import { ValidationError } from '../../events/errors.js';
import { CACHE_POLICY_VERSION } from '../../commands/cache-key.js';
import { VerificationCache } from './verification-cache.js';

/** A build's cache configuration (config `cache`; blueprint builds: defaults). */
export interface CacheSetting {
  readonly enabled?: boolean;
  /** A cache directory several builds share (absolute); absent: the build directory's own. */
  readonly path?: string;
  /** The config's epoch: another value than '1' makes every entry of an older epoch a miss. */
  readonly policyVersion?: string;
}

/**
 * Where a build's verification cache lives: `LONGBUILD_CACHE_DIR`, else the config's
 * `cache.path`, else `<build dir>/cache`. A shared directory lets several builds of one
 * repository (a rebuilt build directory, a fork, a second build of the same work) replay every
 * verification one of them passed; entries stay authenticated by the key kept in that directory,
 * which no sandboxed process can see.
 */
export function cacheDirOf(paths: Pick<BuildPaths, 'cache' | 'repo'>, setting: CacheSetting | undefined, env: NodeJS.ProcessEnv): string {
  const fromEnv = env.LONGBUILD_CACHE_DIR;
  if (fromEnv !== undefined && fromEnv !== '') return isAbsolute(fromEnv) ? fromEnv : resolve(paths.repo, fromEnv);
  return setting?.path ?? paths.cache;
}

/**
 * The build's verification cache, or null when turned off (`cache.enabled: false`, or
 * `LONGBUILD_VERIFY_CACHE=off`). A runtime setting, not a logged one: the cache is never
 * authority, so whether it is on changes only how long verification takes, never what the
 * log says was verified.
 */
export function verificationCacheFor(dir: string, env: NodeJS.ProcessEnv, setting: CacheSetting = {}): VerificationCache | null {
  const v = env.LONGBUILD_VERIFY_CACHE;
  if (v !== undefined && v !== '' && v !== 'on' && v !== 'off') throw new ValidationError(`LONGBUILD_VERIFY_CACHE must be 'on' or 'off', got '${v}'`, 'R-28');
  if (v === 'off' || setting.enabled === false) return null;
  const epoch = setting.policyVersion ?? '1';
  return new VerificationCache(dir, epoch === '1' ? {} : { policyVersion: `${CACHE_POLICY_VERSION}:${epoch}` });
}
