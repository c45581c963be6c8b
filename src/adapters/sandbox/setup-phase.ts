/**
 * The setup phase: a build's `setup` commands (an install) run before its verification
 * commands, in the same workspace, with what an install needs and the code under test must not
 * have — the network (`sandbox.network.setup`, on by default) and the build's package cache,
 * read-write — and without what would hand that network to the candidate: package lifecycle
 * scripts (npm's `ignore-scripts`, set in the environment, which outranks a project's `.npmrc`).
 * Verification then runs offline, with the cache read-only. A phase without the network tells npm
 * so (`offline`), so an install there fails at once instead of retrying until its timeout.
 */
import { mkdirSync } from 'node:fs';
import type { VerificationPhase, VerificationPhases } from '../cache/cached-verification.js';
import { guarded } from '../../projections/storage-guard.js';

/** Where the package cache is mounted in the sandbox: one path for every build, so cache keys do not depend on the build's directory. */
export const PACKAGES_MOUNT = '/run/longbuild-packages';

export interface SetupPhase {
  readonly phases: VerificationPhases;
  /** The package cache's mount for a command of `phase` (none when the sandbox is off: the path is the host's). */
  mounts(phase: VerificationPhase): { src: string; dest: string; rw: boolean }[];
}

/**
 * The phases of a build with `setup` commands. `dir` is the build's own package cache: never
 * shared with another build, so an entry poisoned by one build's setup cannot reach another; npm
 * checks each entry's integrity against the lock file as it reads it.
 */
export function setupPhase(o: { setup: number; dir: string; sandboxed: boolean; network: { setup: boolean; verify: boolean } }): SetupPhase {
  const root = o.sandboxed ? PACKAGES_MOUNT : o.dir;
  const offline = (net: boolean): Record<string, string> => (net ? {} : { npm_config_offline: 'true' });
  const quiet = { npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
  const setupEnv = {
    LONGBUILD_PACKAGES: root,
    npm_config_cache: `${root}/npm`, npm_config_ignore_scripts: 'true', ...quiet,
    PIP_CACHE_DIR: `${root}/pip`, YARN_CACHE_FOLDER: `${root}/yarn`,
    ...offline(o.network.setup),
  };
  const verifyEnv = { LONGBUILD_PACKAGES: root, ...quiet, ...offline(o.network.verify) };
  let made = false;
  return {
    phases: { setup: o.setup, env: { setup: setupEnv, verify: verifyEnv }, network: o.network },
    mounts(phase) {
      if (!made) {
        guarded(o.dir, () => mkdirSync(o.dir, { recursive: true, mode: 0o700 }));
        made = true;
      }
      return o.sandboxed ? [{ src: o.dir, dest: PACKAGES_MOUNT, rw: phase === 'setup' }] : [];
    },
  };
}

/** The variables a verification phase without the network gets (fast failure of an install), for builds without setup. */
export function offlinePhases(network: { setup: boolean; verify: boolean }): VerificationPhases {
  return { setup: 0, env: { setup: {}, verify: network.verify ? {} : { npm_config_offline: 'true' } }, network };
}
