/**
 * `longbuild init`: a new build from a blueprint, or from a request and a config of real
 * commands — the repository and its integration ref, the private build directory, an empty log,
 * the driver file, the signing key, the first event (BuildInitialized) and the first signed
 * checkpoint.
 */
import { FileCallMarks } from './controller/call-marks.js';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { buildIdOf } from '../commands/call-ids.js';
import { buildInitialized } from '../commands/first-events.js';
import { canonicalJson, type JsonValue } from '../events/canonical.js';
import type { SandboxSettings } from '../events/catalogue.js';
import { ValidationError } from '../events/errors.js';
import { canonicalSha256, sha256Hex } from '../events/hash.js';
import { parseVerifierKey } from '../events/signed-note.js';
import { blueprintSha256 } from './blueprint/blueprint.js';
import { buildExists, buildPaths, openBuildLog, openBuildProjections, recordLogSpec, type BuildPaths } from './build-dir.js';
import { logicalClock, systemClock, type Clock } from './clock.js';
import { blueprintDriver, driverRecord, requestDriver, type DriverFile, type DriverRecord } from './driver-file.js';
import { ensureIntegratorRepo, ensureRepo, git, promote, readRef } from './git/git.js';
import { detectSurface } from '../commands/test-surface.js';
import type { TestPolicy } from '../events/catalogue.js';
import { testPolicyOf, type TestPolicyInput } from './verify-commands.js';
import { openEventLog } from './log/open-log.js';
import { catchUpFromLog } from './log/paging.js';
import { BWRAP_MISSING, bwrapVersion, findBwrap } from './sandbox/sandbox.js';
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, normalizeSandbox, type SandboxSetting } from './sandbox/settings.js';
import { INTEGRATION_REF, type OpenOptions } from './session.js';
import { buildVerifierKey, deriveBuildKey, homePaths, loadOrCreateSigningKey, secretPaths, signedHeadPath, signingKeyPath } from './transparency/keys.js';
import { Notary } from './transparency/notary.js';

export interface InitResult {
  readonly buildId: string;
  readonly requestSha256: string;
  readonly position: number;
  readonly paths: BuildPaths;
  /** One line to show the user (the sandbox is off on this machine, say). */
  readonly notice?: string;
  /** The signing key file, and whether init created it. */
  readonly signingKey: { readonly path: string; readonly created: boolean; readonly vkey: string };
  /** The tests candidates are judged by (R-48..R-51): the surface detected or configured, the policy, the reports. */
  readonly tests: TestPolicy;
  /** The verification commands, in order (setup first). */
  readonly verify: readonly (readonly string[])[];
}

/**
 * The test policy of a build whose base head is `head`: the surface of the ecosystems the
 * head's root files and the verification programs show (or the configured one), and the report
 * files the commands write (a candidate may not plant one).
 */
export async function testPolicyAt(repo: string, head: string, verify: readonly (readonly string[])[], input: TestPolicyInput): Promise<TestPolicy> {
  const root = (await git(repo, ['ls-tree', '-z', '--name-only', head])).stdout.split('\0').filter((p) => p !== '');
  const reportFiles = input.reports.flatMap((r) => (r?.file !== undefined ? [r.file] : []));
  return testPolicyOf(input, detectSurface(root, verify, reportFiles, input.given));
}

/** `longbuild init --blueprint FILE`: a build driven by the scripted planner and worker. */
export async function initFromBlueprint(blueprintPath: string, opts: OpenOptions = {}): Promise<InitResult> {
  const driver = blueprintDriver(blueprintPath);
  const blueprint = (driver as Extract<DriverFile, { kind: 'blueprint' }>).blueprint;
  const sandbox = decideSandbox(blueprint.sandbox, { maxFileBytes: blueprint.maxFileBytes, maxFiles: blueprint.maxFiles }, opts.env ?? process.env, 'blueprint', opts.cwd);
  return initBuild(driver, driverRecord(driver), logicalClock(), sandbox, opts);
}

/**
 * The sandbox a new build records. A command-driven build needs bubblewrap unless its
 * config says "off". A blueprint build's workers are longbuild's own; when bubblewrap is missing
 * and the blueprint does not ask for it, its verification runs unsandboxed and says so.
 */
function decideSandbox(setting: SandboxSetting | undefined, sizes: { maxFileBytes: number | undefined; maxFiles: number | undefined }, env: NodeJS.ProcessEnv, kind: 'blueprint' | 'command', cwd: string | undefined): { settings: SandboxSettings; notice?: string } {
  const n = normalizeSandbox(setting);
  const expose = exposedPaths(n.expose ?? [], env, cwd);
  const base = { network: n.network, maxFileBytes: sizes.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, maxFiles: sizes.maxFiles ?? DEFAULT_MAX_FILES, ...(n.limits !== undefined ? { limits: n.limits } : {}), ...(expose.length > 0 ? { expose } : {}) };
  if (n.mode === 'off') return { settings: { mode: 'off', bwrapVersion: null, reason: `"sandbox": "off" in the ${kind === 'blueprint' ? 'blueprint' : 'config'}`, ...base }, notice: 'longbuild: the sandbox is off for this build ("sandbox": "off"): planner, worker and verification run unsandboxed (recorded in the log)' };
  const bwrap = findBwrap(env);
  if (bwrap === null) {
    if (kind === 'command' || setting !== undefined) throw new ValidationError(BWRAP_MISSING, 'R-30');
    return {
      settings: { mode: 'off', bwrapVersion: null, reason: 'blueprint build: bubblewrap is not installed', ...base },
      notice: 'longbuild: bubblewrap is not installed: this blueprint build verifies unsandboxed (recorded in the log; apt-get install bubblewrap to sandbox it)',
    };
  }
  return { settings: { mode: 'bwrap', bwrapVersion: bwrapVersion(bwrap), ...base } };
}

/**
 * The config's `sandbox.expose` as absolute paths (`~` is the home of the user running init). A
 * path that is, or holds, a key or longbuild's config directory is refused: it would stay
 * hidden anyway, and the config would read as if it were not.
 */
function exposedPaths(given: readonly string[], env: NodeJS.ProcessEnv, cwd: string | undefined): string[] {
  const home = homePaths(env)[0] ?? '/';
  const secrets = secretPaths(env, undefined, cwd);
  return given.map((p) => {
    const abs = resolvePath(p === '~' ? home : p.startsWith('~/') ? join(home, p.slice(2)) : p);
    const held = secrets.find((s) => s === abs || s.startsWith(abs.endsWith('/') ? abs : `${abs}/`));
    if (held !== undefined) throw new ValidationError(`sandbox.expose '${p}' holds ${held}, where longbuild keeps keys: no sandbox may see it (R-53); expose a narrower path`, 'R-53');
    return abs;
  });
}

/** `longbuild init --request FILE [--config FILE]`: a build driven by configured commands. */
export async function initFromRequest(requestPath: string, configPath: string, opts: OpenOptions = {}): Promise<InitResult> {
  const driver = requestDriver(requestPath, configPath);
  const config = (driver as Extract<DriverFile, { kind: 'command' }>).config;
  const sandbox = decideSandbox(config.sandbox, { maxFileBytes: config.maxFileBytes, maxFiles: config.maxFiles }, opts.env ?? process.env, 'command', opts.cwd);
  return initBuild(driver, driverRecord(driver), systemClock, sandbox, { ...opts, log: opts.log ?? config.log });
}

async function initBuild(driver: DriverFile, record: DriverRecord, clock: Clock, sandbox: { settings: SandboxSettings; notice?: string }, opts: OpenOptions): Promise<InitResult> {
  const { request, verify, acceptance, settings } = record;
  if (record.tests.reports.length !== verify.length) throw new ValidationError(`internal: ${record.tests.reports.length} report settings for ${verify.length} verification commands`);
  const paths = buildPaths(opts);
  const logSpec = opts.log ?? 'sqlite';
  if (buildExists(paths)) {
    const existing = await openBuildLog(paths);
    const head = await existing.head().finally(() => existing.close());
    if (head) throw new ValidationError(`a build already exists in ${paths.dir} (${head.position} events); use another --dir or remove it`);
  }
  const head = await ensureRepo(paths.repo, clock.now(0), { buildDir: paths.dir });
  let integrationHead = await readRef(paths.repo, INTEGRATION_REF);
  if (integrationHead === null) {
    const r = await promote(paths.repo, INTEGRATION_REF, head, null);
    if (r !== 'promoted') throw new ValidationError(`could not create ${INTEGRATION_REF}`);
    integrationHead = head;
  }
  // The build directory is private: the log, the driver, evidence and the cache key live here.
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  chmodSync(paths.dir, 0o700);
  await ensureIntegratorRepo(paths.integrator, paths.repo, INTEGRATION_REF);
  const tests = await testPolicyAt(paths.repo, integrationHead, verify, record.tests);
  // The log is reached before the build directory records anything, and must be empty: a shared
  // schema or stream that already holds another build's events is refused.
  const log = await openEventLog(logSpec, { defaultSqlitePath: paths.events });
  try {
    const head = await log.head();
    if (head) throw new ValidationError(`the log ${logSpec === 'sqlite' ? paths.events : 'given by --log'} already holds ${head.position} events; give each build its own (e.g. ?schema=NAME)`);
  } catch (err) {
    await log.close();
    throw err;
  }
  if (logSpec !== 'sqlite') recordLogSpec(paths, logSpec);
  const driverJson = canonicalJson(driver);
  writeFileSync(paths.driver, driverJson, { mode: 0o600 });
  const sourceSha256 = sha256Hex(driverJson);
  const requestSha256 = canonicalSha256(request);
  const buildId = buildIdOf(driver.kind === 'blueprint' ? blueprintSha256(driver.blueprint) : sourceSha256, integrationHead);
  let key: ReturnType<typeof loadOrCreateSigningKey>;
  try {
    key = loadOrCreateSigningKey(signingKeyPath(opts.signingKey, opts.env ?? process.env, opts.cwd));
  } catch (err) {
    await log.close();
    throw err;
  }
  // The build signs under its own key, derived from the user's.
  const buildKey = deriveBuildKey(key.privateKey, buildId);
  const vkey = buildVerifierKey(buildId, buildKey);
  try {
    const first = buildInitialized({
      buildId, request, integrationRef: INTEGRATION_REF, baseHead: integrationHead, verify, acceptance,
      settings, driver: { kind: driver.kind, sourceSha256 }, sandbox: sandbox.settings, vkey, tests,
    });
    const result = await log.append(`build-${buildId}`, [{ type: first.type, data: first.data as JsonValue, metadata: { recordedAt: clock.now(1), correlationId: buildId } }], 'no-stream');
    // The call journal from the start (BuildInitialized.callJournal): a missing one is then a lost one.
    FileCallMarks.create(paths.calls);
    const store = openBuildProjections(paths);
    try {
      await catchUpFromLog(store, log);
    } finally {
      store.close();
    }
    const notary = Notary.open(paths, log, buildId, parseVerifierKey(vkey), buildKey, signedHeadPath(opts.env ?? process.env, paths.dir));
    try {
      await notary.sign();
    } finally {
      notary.close();
    }
    return {
      buildId, requestSha256, position: result.position, paths, signingKey: { path: key.path, created: key.created, vkey }, tests, verify,
      ...(sandbox.notice === undefined ? {} : { notice: sandbox.notice }),
    };
  } finally {
    await log.close();
  }
}
