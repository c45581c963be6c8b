import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { canonicalJson, type JsonValue } from '../events/canonical.js';
import { canonicalSha256, sha256Hex } from '../events/hash.js';
import { CorruptLogError, NotFoundError, ValidationError } from '../events/errors.js';
import type { BuildSettings } from '../events/catalogue.js';
import type { Planner, Worker } from '../commands/ports.js';
import { SqliteEventLog } from './log/sqlite-log.js';
import { ProjectionStore } from '../projections/engine.js';
import { allProjections } from '../projections/registry.js';
import { buildPaths, type BuildPaths } from './build-dir.js';
import { logicalClock, systemClock, type Clock } from './clock.js';
import { faultsFromEnv, type FaultInjector } from './faults.js';
import { Controller } from './controller/controller.js';
import { gitBinding } from './controller/git-binding.js';
import { FileEvidenceStore } from './evidence-store.js';
import { ensureRepo, promote, readRef } from './git/git.js';
import { blueprintSha256, loadBlueprint, parseBlueprint, type Blueprint } from './blueprint/blueprint.js';
import { ScriptedPlanner } from './blueprint/scripted-planner.js';
import { ScriptedWorker } from './blueprint/scripted-worker.js';

export const INTEGRATION_REF = 'refs/heads/longbuild/integration';

/** What `init` records about how the build is driven (stored as `<dir>/driver.json`). */
interface DriverFile {
  readonly kind: 'blueprint';
  readonly blueprint: Blueprint;
}

export interface OpenOptions {
  readonly repo?: string;
  readonly dir?: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Replace the planner (tests: a planner that throws if called). */
  readonly planner?: Planner;
  readonly worker?: Worker;
  readonly faults?: FaultInjector;
}

/** An open build: its log, projections and controller. Close it when done. */
export interface BuildSession {
  readonly paths: BuildPaths;
  readonly log: SqliteEventLog;
  readonly projections: ProjectionStore;
  readonly controller: Controller;
  close(): Promise<void>;
}

function settingsOf(bp: Blueprint): BuildSettings {
  return {
    detailedWindow: bp.detailedWindow,
    coarseWindow: bp.coarseWindow ?? 12,
    maxBatch: 1,
    maxAttempts: 3,
    compaction: true,
    plannerRoute: 'scripted:blueprint',
  };
}

/** `longbuild init --blueprint FILE`: repo, build directory and the first event. */
export async function initFromBlueprint(blueprintPath: string, opts: OpenOptions = {}): Promise<{ buildId: string; requestSha256: string; position: number; paths: BuildPaths }> {
  const paths = buildPaths(opts);
  const blueprint = loadBlueprint(blueprintPath);
  if (existsSync(paths.events)) {
    const log = new SqliteEventLog({ path: paths.events });
    const head = log.headSync();
    await log.close();
    if (head) throw new ValidationError(`a build already exists in ${paths.dir} (${head.position} events); use another --dir or remove it`);
  }
  const clock = logicalClock();
  const head = await ensureRepo(paths.repo, clock.now(0), { buildDir: paths.dir });
  const integrationHead = (await readRef(paths.repo, INTEGRATION_REF)) ?? head;
  if ((await readRef(paths.repo, INTEGRATION_REF)) === null) {
    const r = await promote(paths.repo, INTEGRATION_REF, head, null);
    if (r !== 'promoted') throw new ValidationError(`could not create ${INTEGRATION_REF}`);
  }
  mkdirSync(paths.dir, { recursive: true });
  const driver: DriverFile = { kind: 'blueprint', blueprint };
  writeFileSync(paths.driver, canonicalJson(driver));
  const sourceSha256 = blueprintSha256(blueprint);
  const requestSha256 = canonicalSha256(blueprint.request);
  const buildId = `b-${sha256Hex(`${sourceSha256}:${integrationHead}`).slice(0, 16)}`;
  const log = new SqliteEventLog({ path: paths.events });
  try {
    const result = await log.append(`build-${buildId}`, [{
      type: 'BuildInitialized',
      data: {
        buildId,
        request: blueprint.request as JsonValue,
        requestSha256,
        integrationRef: INTEGRATION_REF,
        baseHead: integrationHead,
        verify: blueprint.verify,
        settings: settingsOf(blueprint),
        driver: { kind: 'blueprint', sourceSha256 },
      },
      metadata: { recordedAt: clock.now(1), correlationId: buildId },
    }], 'no-stream');
    const store = ProjectionStore.open(paths.projections, allProjections());
    store.catchUp(log.iterateAll(store.resumeFrom()));
    store.close();
    return { buildId, requestSha256, position: result.position, paths };
  } finally {
    await log.close();
  }
}

/** The trusted verification environment: PATH and a fixed locale, nothing inherited by accident (R-26). */
export function trustedVerifyEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return { PATH: env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', NODE_ENV: 'test' };
}

/** Open an initialised build for reading or stepping. */
export async function openBuild(opts: OpenOptions = {}): Promise<BuildSession> {
  const paths = buildPaths(opts);
  if (!existsSync(paths.events)) throw new NotFoundError(`no build in ${paths.dir} (run \`longbuild init --blueprint FILE\` first, or pass --dir)`);
  const env = opts.env ?? process.env;
  const log = new SqliteEventLog({ path: paths.events });
  const projections = ProjectionStore.open(paths.projections, allProjections());
  try {
    projections.catchUp(log.iterateAll(projections.resumeFrom()));
    const driver = readDriver(paths);
    const clock: Clock = driver.kind === 'blueprint' ? logicalClock() : systemClock;
    const planner = opts.planner ?? new ScriptedPlanner(driver.blueprint);
    const worker = opts.worker ?? new ScriptedWorker(driver.blueprint, env.LONGBUILD_EFFECTS_LEDGER ? { ledgerPath: env.LONGBUILD_EFFECTS_LEDGER } : {});
    const controller = await Controller.open({
      log,
      clock,
      planner,
      worker,
      git: gitBinding({ repo: paths.repo, worktreesDir: paths.worktrees, workspacesDir: paths.workspaces, verifyEnv: trustedVerifyEnv(env), verifyTimeoutMs: 10 * 60_000 }),
      evidence: new FileEvidenceStore(paths.evidence),
      faults: opts.faults ?? faultsFromEnv(env),
      protectedPaths: ['.longbuild', relativeBuildDir(paths)],
      onAppended: (events) => projections.catchUp(events),
    });
    return {
      paths, log, projections, controller,
      async close() {
        projections.close();
        await log.close();
      },
    };
  } catch (err) {
    projections.close();
    await log.close();
    throw err;
  }
}

function relativeBuildDir(paths: BuildPaths): string {
  return paths.dir.startsWith(`${paths.repo}/`) ? paths.dir.slice(paths.repo.length + 1) : '.longbuild';
}

function readDriver(paths: BuildPaths): DriverFile {
  if (!existsSync(paths.driver)) throw new CorruptLogError(1, `${paths.driver} is missing: the build directory is incomplete`);
  const raw = JSON.parse(readFileSync(paths.driver, 'utf8')) as { kind: string; blueprint: unknown };
  if (raw.kind !== 'blueprint') throw new ValidationError(`unknown build driver '${raw.kind}' in ${paths.driver}`);
  return { kind: 'blueprint', blueprint: parseBlueprint(raw.blueprint, paths.driver) };
}
