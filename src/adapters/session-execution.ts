import { readFileSync } from 'node:fs';
import type { SandboxSettings } from '../events/catalogue.js';
import { ValidationError } from '../events/errors.js';
import type { BuildPaths } from './build-dir.js';
import type { DriverFile } from './driver-file.js';
import { cacheDirOf } from './cache/setting.js';
import { BWRAP_MISSING, ensureSandboxInit, findBwrap, findPrlimit, runSandboxed, type SandboxPolicy } from './sandbox/sandbox.js';
import { setupPhase, offlinePhases } from './sandbox/setup-phase.js';
import { redactor } from './sandbox/redact.js';
import { ProcessSlots } from './process/slots.js';
import { agentSecretNames } from './command/invocation.js';
import { commandEnv } from './command/command-env.js';
import { homePaths, secretPaths } from './transparency/keys.js';
import type { Runner } from './session-drivers.js';
import type { OpenOptions } from './session-types.js';

/** What a session reads of the build's first event (or of a fork's ForkedFrom: its driver, verification and settings). */
export interface InitData {
  readonly buildId: string;
  readonly driver: { readonly sourceSha256: string };
  readonly sandbox?: SandboxSettings;
  readonly verify: readonly (readonly string[])[];
  readonly integrationRef: string;
  readonly signing?: { readonly vkey: string };
  readonly settings?: { readonly ignoredFiles?: 'allowed' | 'dirty' };
}

/**
 * How a build's processes run: each role's sandbox, the verification environment's
 * allowlist, the setup phase and the offline phases, the process cap, secrets redacted from
 * everything they print, and the paths a candidate may not touch.
 */
export function executionOf(paths: BuildPaths, driver: DriverFile, initData: InitData, env: NodeJS.ProcessEnv, opts: Pick<OpenOptions, 'signingKey' | 'cwd'>) {
  // What verification gets: the allowlist, and the secrets unless the config keeps them from it.
  const allow = driver.kind === 'command' ? [...driver.config.env.allow, ...(driver.config.env.secretTo.verify ? driver.config.env.secret : [])] : [];
  const secretNames = driver.kind === 'command' ? [...driver.config.env.secret, ...agentSecretNames([driver.config.planner.agent, driver.config.worker.agent])] : [];
  const secrets = secretNames.map((n) => env[n]).filter((v): v is string => v !== undefined && v !== '');
  const cacheSetting = driver.kind === 'command' ? driver.config.cache : undefined;
  const cacheDir = cacheDirOf(paths, cacheSetting, env);
  const sandbox = sandboxPolicies(paths, initData.sandbox, env, cacheDir, secretPaths(env, opts.signingKey, opts.cwd));
  const redact = redactor(secrets);
  // The setup phase: builds that record setup's network (new builds) tell npm when a phase is offline.
  const net = initData.sandbox?.network;
  const phaseNetwork = net?.setup !== undefined ? { setup: net.setup, verify: net.verify } : undefined;
  const setupCount = (initData.settings as { setup?: number } | undefined)?.setup ?? 0;
  const setup = setupCount > 0 ? setupPhase({ setup: setupCount, dir: paths.packages, sandboxed: initData.sandbox?.mode === 'bwrap', network: phaseNetwork ?? { setup: net?.verify ?? true, verify: net?.verify ?? true } }) : undefined;
  const offline = setup === undefined && phaseNetwork !== undefined ? offlinePhases(phaseNetwork) : undefined;
  // Every untrusted process takes a slot while it runs (maxProcesses; git takes none).
  const cap = driver.kind === 'command' ? driver.config.maxProcesses : driver.blueprint.maxProcesses;
  const slots = cap === undefined ? null : new ProcessSlots(cap);
  const run = (policy: () => SandboxPolicy): Runner => async (o) => redact(await (slots === null ? runSandboxed(policy(), o) : slots.with(() => runSandboxed(policy(), o))));
  const protectedPaths = ['.longbuild', relativeBuildDir(paths), ...(driver.kind === 'command' ? driver.config.protectedPaths : driver.blueprint.protectedPaths ?? [])];
  return { allow, cacheSetting, cacheDir, sandbox, setup, offline, run, protectedPaths };
}

/** The trusted verification environment: PATH, a fixed locale and the allowlist, nothing inherited by accident. */
export function trustedVerifyEnv(env: NodeJS.ProcessEnv, allow: readonly string[] = []): Record<string, string> {
  return commandEnv(env, allow, { NODE_ENV: 'test' });
}

/**
 * The sandbox of each role, from what the build recorded. Every role hides the repository,
 * the build directory and the cache. bubblewrap is looked up when the first sandboxed call is
 * made, so reading commands (`status`, `show`) work on a machine without it; a sandboxed call
 * there is refused with one line.
 */
export function sandboxPolicies(paths: BuildPaths, recorded: SandboxSettings | undefined, env: NodeJS.ProcessEnv, cacheDir: string, secret: readonly string[]): Record<'planner' | 'worker' | 'verify' | 'setup', () => SandboxPolicy> {
  const mode = recorded?.mode ?? 'off';
  const network = recorded?.network ?? { planner: true, worker: true, verify: true };
  const hide = [paths.repo, paths.dir, paths.cache, cacheDir];
  // Every role gets a private home and never sees a key, whatever the config exposes on purpose.
  const home = homePaths(env);
  const expose = recorded?.expose ?? [];
  let found: { bwrap: string; initPath: string } | null = null;
  const resolve = (): { bwrap: string; initPath: string } => {
    if (mode === 'off') return { bwrap: '', initPath: '' };
    if (found !== null) return found;
    const bwrap = findBwrap(env);
    if (bwrap === null) throw new ValidationError(`this build was initialised with the bubblewrap sandbox, but ${BWRAP_MISSING.replace(/ or set .*$/, '')}`, 'R-30');
    found = { bwrap, initPath: ensureSandboxInit(paths.sandbox) };
    return found;
  };
  // Limits are applied by prlimit inside the sandbox; a build that has them refuses to run without it.
  const prlimit = (): { prlimit?: string } => {
    const p = findPrlimit(env);
    return p === null ? {} : { prlimit: p };
  };
  const policy = (role: 'planner' | 'worker' | 'verify', net: boolean) => (): SandboxPolicy => {
    const limits = recorded?.limits?.[role];
    return { mode, hide, home, secret, expose, network: net, ...resolve(), ...(limits !== undefined ? { limits, ...prlimit() } : {}) };
  };
  // Setup runs under verification's limits, with its own network (absent, in builds from before: verification's).
  return { planner: policy('planner', network.planner), worker: policy('worker', network.worker), verify: policy('verify', network.verify), setup: policy('verify', network.setup ?? network.verify) };
}

/** The verification cache directory a build uses (`LONGBUILD_CACHE_DIR`, its config's `cache.path`, or its own), for `longbuild cache`. */
export function cacheDirOfBuild(paths: BuildPaths, env: NodeJS.ProcessEnv): string {
  let setting: { path?: string } | undefined;
  try {
    const raw = JSON.parse(readFileSync(paths.driver, 'utf8')) as { kind?: string; config?: { cache?: { path?: unknown } } };
    const path = raw.kind === 'command' ? raw.config?.cache?.path : undefined;
    if (typeof path === 'string') setting = { path };
  } catch {
    // no readable driver: the build directory's own cache
  }
  return cacheDirOf(paths, setting, env);
}

function relativeBuildDir(paths: BuildPaths): string {
  return paths.dir.startsWith(`${paths.repo}/`) ? paths.dir.slice(paths.repo.length + 1) : '.longbuild';
}
