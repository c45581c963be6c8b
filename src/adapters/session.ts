import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { canonicalJson, type JsonValue } from '../events/canonical.js';
import { canonicalSha256, sha256Hex } from '../events/hash.js';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import type { BuildSettings } from '../events/catalogue.js';
import type { Planner, Worker } from '../commands/ports.js';
import type { TransferableEventLog } from './log/verbatim.js';
import { openEventLog } from './log/open-log.js';
import type { AppendFence } from './log/postgres-log.js';
import { catchUpFromLog } from './log/paging.js';
import type { ProjectionStore } from '../projections/engine.js';
import { buildProjection } from '../projections/build-projection.js';
import { buildExists, buildPaths, openBuildLog, openBuildProjections, recordLogSpec, type BuildPaths } from './build-dir.js';
import { logicalClock, systemClock, type Clock } from './clock.js';
import { faultsFromEnv, type FaultInjector } from './faults.js';
import { Controller } from './controller/controller.js';
import { gitBinding } from './controller/git-binding.js';
import { verificationCacheFor } from './cache/setting.js';
import { FileEvidenceStore } from './evidence-store.js';
import { ensureRepo, promote, readRef } from './git/git.js';
import { blueprintSha256, loadBlueprint, parseBlueprint, type Blueprint } from './blueprint/blueprint.js';
import { ScriptedPlanner } from './blueprint/scripted-planner.js';
import { ScriptedWorker } from './blueprint/scripted-worker.js';
import { loadConfig, parseConfig, type LongbuildConfig } from './config/config.js';
import { CommandPlanner } from './command/command-planner.js';
import { CommandWorker } from './command/command-worker.js';
import { commandEnv } from './command/command-env.js';

export const INTEGRATION_REF = 'refs/heads/longbuild/integration';

/**
 * How the build is driven, stored as `<dir>/driver.json` when it is initialised; its SHA-256 is
 * pinned in BuildInitialized, so a changed driver file is refused on open.
 */
type DriverFile =
  | { readonly kind: 'blueprint'; readonly blueprint: Blueprint }
  | { readonly kind: 'command'; readonly config: LongbuildConfig; readonly request: JsonValue };

export interface OpenOptions {
  readonly repo?: string;
  readonly dir?: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Replace the planner (tests: a planner that throws if called). */
  readonly planner?: Planner;
  readonly worker?: Worker;
  readonly faults?: FaultInjector;
  /** `init`: the log backend (issue 8; default: the config's `log`, else `sqlite`). */
  readonly log?: string;
  /** Checked atomically with every append (a PostgreSQL log): the controller lease's fencing token. */
  readonly appendFence?: AppendFence;
}

/** An open build: its log, projections and controller. Close it when done. */
export interface BuildSession {
  readonly paths: BuildPaths;
  readonly log: TransferableEventLog;
  readonly projections: ProjectionStore;
  readonly controller: Controller;
  close(): Promise<void>;
}

export interface InitResult {
  readonly buildId: string;
  readonly requestSha256: string;
  readonly position: number;
  readonly paths: BuildPaths;
}

function blueprintSettings(bp: Blueprint): BuildSettings {
  return {
    detailedWindow: bp.detailedWindow,
    coarseWindow: bp.coarseWindow ?? 12,
    maxBatch: bp.maxBatch ?? 1,
    maxAttempts: bp.maxAttempts ?? 3,
    compaction: bp.compaction ?? true,
    plannerRoute: 'scripted:blueprint',
  };
}

function configSettings(c: LongbuildConfig): BuildSettings {
  return {
    detailedWindow: c.detailedWindow,
    coarseWindow: c.coarseWindow,
    maxBatch: c.maxBatch,
    maxAttempts: c.maxAttempts,
    compaction: c.compaction,
    plannerRoute: c.planner.route ?? `command:${c.planner.command[0]}`,
  };
}

/** `longbuild init --blueprint FILE`: a build driven by the scripted planner and worker. */
export async function initFromBlueprint(blueprintPath: string, opts: OpenOptions = {}): Promise<InitResult> {
  const blueprint = loadBlueprint(blueprintPath);
  return initBuild({ kind: 'blueprint', blueprint }, blueprint.request as JsonValue, blueprint.verify, blueprintSettings(blueprint), logicalClock(), opts);
}

/** `longbuild init --request FILE [--config FILE]`: a build driven by configured commands. */
export async function initFromRequest(requestPath: string, configPath: string, opts: OpenOptions = {}): Promise<InitResult> {
  if (!existsSync(requestPath)) throw new ValidationError(`request file ${requestPath} does not exist`);
  let request: unknown;
  try {
    request = JSON.parse(readFileSync(requestPath, 'utf8'));
  } catch (err) {
    throw new ValidationError(`request file ${requestPath} is not valid JSON: ${(err as Error).message}`);
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    throw new ValidationError(`request file ${requestPath} must hold a JSON object (the project request)`);
  }
  canonicalJson(request); // refuses non-canonical numbers early, with the path
  const config = loadConfig(configPath);
  return initBuild({ kind: 'command', config, request: request as JsonValue }, request as JsonValue, config.verify, configSettings(config), systemClock, { ...opts, log: opts.log ?? config.log });
}

async function initBuild(driver: DriverFile, request: JsonValue, verify: readonly (readonly string[])[], settings: BuildSettings, clock: Clock, opts: OpenOptions): Promise<InitResult> {
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
  mkdirSync(paths.dir, { recursive: true });
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
  writeFileSync(paths.driver, driverJson);
  const sourceSha256 = sha256Hex(driverJson);
  const requestSha256 = canonicalSha256(request);
  const buildId = `b-${sha256Hex(`${driver.kind === 'blueprint' ? blueprintSha256(driver.blueprint) : sourceSha256}:${integrationHead}`).slice(0, 16)}`;
  try {
    const result = await log.append(`build-${buildId}`, [{
      type: 'BuildInitialized',
      data: {
        buildId, request, requestSha256, integrationRef: INTEGRATION_REF, baseHead: integrationHead,
        verify: verify.map((c) => [...c]), settings, driver: { kind: driver.kind, sourceSha256 },
      },
      metadata: { recordedAt: clock.now(1), correlationId: buildId },
    }], 'no-stream');
    const store = openBuildProjections(paths);
    try {
      await catchUpFromLog(store, log);
    } finally {
      store.close();
    }
    return { buildId, requestSha256, position: result.position, paths };
  } finally {
    await log.close();
  }
}

/** The trusted verification environment: PATH, a fixed locale and the allowlist, nothing inherited by accident (R-26). */
export function trustedVerifyEnv(env: NodeJS.ProcessEnv, allow: readonly string[] = []): Record<string, string> {
  return commandEnv(env, allow, { NODE_ENV: 'test' });
}

/** Open an initialised build for reading or stepping. */
export async function openBuild(opts: OpenOptions = {}): Promise<BuildSession> {
  const paths = buildPaths(opts);
  const env = opts.env ?? process.env;
  const log = await openBuildLog(paths, opts.appendFence ? { postgresFence: opts.appendFence } : {});
  let projections: ProjectionStore | null = null;
  try {
    projections = openBuildProjections(paths);
    const store = projections;
    // Projections are local SQLite whatever the log is, and catch up from it (R-1, issue 8).
    await catchUpFromLog(store, log);
    const first = (await log.readAll({ from: 1, limit: 1 }))[0];
    if (!first || first.type !== 'BuildInitialized') throw new CorruptLogError(1, 'the log does not start with BuildInitialized');
    const pinned = (first.data as { driver: { sourceSha256: string } }).driver.sourceSha256;
    const driver = readDriver(paths, pinned);
    const allow = driver.kind === 'command' ? driver.config.env.allow : [];
    const controller = await Controller.open({
      log,
      clock: driver.kind === 'blueprint' ? logicalClock() : systemClock,
      planner: opts.planner ?? plannerFor(driver, paths, env),
      worker: opts.worker ?? workerFor(driver, env),
      git: gitBinding({ repo: paths.repo, worktreesDir: paths.worktrees, workspacesDir: paths.workspaces, verifyEnv: trustedVerifyEnv(env, allow), verifyTimeoutMs: 10 * 60_000, cache: verificationCacheFor(paths, env) }),
      evidence: new FileEvidenceStore(paths.evidence),
      faults: opts.faults ?? faultsFromEnv(env),
      protectedPaths: ['.longbuild', relativeBuildDir(paths), ...(driver.kind === 'command' ? driver.config.protectedPaths : driver.blueprint.protectedPaths ?? [])],
      onAppended: (events, state) => store.catchUp(events, new Map([[buildProjection.name, state]])),
      // Issue 7: a deliberate resume bug, only ever set by the fuzz test to prove fuzz can fail.
      ...(env.LONGBUILD_FUZZ_PLANT_BUG === 'skip-adoption' ? { plantedBug: 'skip-adoption' as const } : {}),
    });
    return {
      paths, log, projections: store, controller,
      async close() {
        store.close();
        await log.close();
      },
    };
  } catch (err) {
    projections?.close();
    await log.close();
    throw err;
  }
}

function plannerFor(driver: DriverFile, paths: BuildPaths, env: NodeJS.ProcessEnv): Planner {
  if (driver.kind === 'blueprint') return new ScriptedPlanner(driver.blueprint);
  const c = driver.config;
  return new CommandPlanner({
    argv: c.planner.command, route: c.planner.route ?? `command:${c.planner.command[0]}`, timeoutMs: c.planner.timeoutSeconds * 1000,
    repo: paths.repo, env, allowEnv: c.env.allow,
  });
}

function workerFor(driver: DriverFile, env: NodeJS.ProcessEnv): Worker {
  if (driver.kind === 'blueprint') return new ScriptedWorker(driver.blueprint, env.LONGBUILD_EFFECTS_LEDGER ? { ledgerPath: env.LONGBUILD_EFFECTS_LEDGER } : {});
  const c = driver.config;
  return new CommandWorker({ argv: c.worker.command, timeoutMs: c.worker.timeoutSeconds * 1000, env, allowEnv: c.env.allow });
}

function relativeBuildDir(paths: BuildPaths): string {
  return paths.dir.startsWith(`${paths.repo}/`) ? paths.dir.slice(paths.repo.length + 1) : '.longbuild';
}

function readDriver(paths: BuildPaths, pinnedSha256: string): DriverFile {
  if (!existsSync(paths.driver)) throw new CorruptLogError(1, `${paths.driver} is missing: the build directory is incomplete`);
  const text = readFileSync(paths.driver, 'utf8');
  if (sha256Hex(text) !== pinnedSha256) {
    throw new CorruptLogError(1, `${paths.driver} does not match the SHA-256 pinned when the build was initialised (edited?)`);
  }
  const raw = JSON.parse(text) as { kind: string; blueprint?: unknown; config?: unknown; request?: JsonValue };
  if (raw.kind === 'blueprint') return { kind: 'blueprint', blueprint: parseBlueprint(raw.blueprint, paths.driver) };
  if (raw.kind === 'command') return { kind: 'command', config: parseConfig(raw.config, paths.driver), request: raw.request ?? null };
  throw new ValidationError(`unknown build driver '${raw.kind}' in ${paths.driver}`);
}
