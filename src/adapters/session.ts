import { UsageFiles } from './controller/usage-files.js';
import { setupPhase, offlinePhases } from './sandbox/setup-phase.js';
import { readFileSync } from 'node:fs';
import type { JsonValue } from '../events/canonical.js';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import type { SandboxSettings } from '../events/catalogue.js';
import type { Planner, Worker } from '../commands/ports.js';
import type { TransferableEventLog } from './log/verbatim.js';
import type { AppendFence } from './log/postgres-log.js';
import { catchUpFromLog } from './log/paging.js';
import { storageErrorOf } from '../projections/storage-guard.js';
import type { ProjectionStore } from '../projections/engine.js';
import { buildProjection } from '../projections/build-projection.js';
import { buildPaths, openBuildLog, openBuildProjections, type BuildPaths } from './build-dir.js';
import { logicalClock, systemClock } from './clock.js';
import { readDriver, type DriverFile } from './driver-file.js';
import { faultsFromEnv, type FaultInjector } from './faults.js';
import { Controller } from './controller/controller.js';
import { gitBinding } from './controller/git-binding.js';
import { cacheDirOf, verificationCacheFor } from './cache/setting.js';
import { FileEvidenceStore } from './evidence-store.js';
import { ensureIntegratorRepo } from './git/git.js';
import { integratorDamage, integratorRecovery } from './git/integrator-repo.js';
import { BWRAP_MISSING, ensureSandboxInit, findBwrap, findPrlimit, runSandboxed, type SandboxPolicy } from './sandbox/sandbox.js';
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES } from './sandbox/settings.js';
import { redactor } from './sandbox/redact.js';
import { ProcessSlots } from './process/slots.js';
import type { SandboxedRun } from './sandbox/sandbox.js';
import type { ProcessResult } from './process/run-process.js';
import type { Blueprint } from './blueprint/blueprint.js';
import { proposedNode, ScriptedPlanner } from './blueprint/scripted-planner.js';
import { findBlueprintNode } from './blueprint/blueprint.js';
import type { CallDrivers } from './controller/effects.js';
import { parentResults } from './fork/parent-results.js';
import { ScriptedWorker } from './blueprint/scripted-worker.js';
import { CommandPlanner } from './command/command-planner.js';
import { CommandWorker } from './command/command-worker.js';
import { FileCallMarks } from './controller/call-marks.js';
import { agentSecretNames, assertCallable, defaultRoute, styleFor } from './command/invocation.js';
import { commandEnv } from './command/command-env.js';
import type { KeyObject } from 'node:crypto';
import type { StepResult } from './controller/controller.js';
import { callsInDoubt, type BuildState } from '../projections/build-state.js';
import type { OperatorVerdict } from '../commands/operator.js';
import { parseVerifierKey } from '../events/signed-note.js';
import { Notary, SIGNED_AFTER } from './transparency/notary.js';
import { traceparentOf } from '../commands/otel-trace.js';
import { buildKeyFrom, homePaths, loadSigningKey, secretPaths, signedHeadPath, signingKeyPath } from './transparency/keys.js';

export const INTEGRATION_REF = 'refs/heads/longbuild/integration';


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
  /** Checked before every append: the controller lease is still held (the SQLite lock file). */
  readonly beforeAppend?: () => void;
  /** Checked immediately before every ref a controller moves (the lease confirmed held, issue 45). */
  readonly beforeRefMove?: () => Promise<void>;
  /** The controller lease is held while the session lives: the log's tail is read once (LogCursorDeps.soleWriter). */
  readonly soleWriter?: boolean;
  /** The signing key file (R-35; default: LONGBUILD_SIGNING_KEY, else `<config dir>/signing.key`). */
  readonly signingKey?: string;
  /** One line for the user about something that did not stop the build (default: stderr). */
  readonly warn?: (line: string) => void;
  /**
   * A reading command (status, show, diff): the state the projections folded is taken as it is,
   * its events not re-hashed again (`verify` checks every byte; a step re-hashes what it acts on).
   * Such a session refuses to step.
   */
  readonly reading?: boolean;
}

/** An open build: its log, projections and controller. Close it when done. */
export interface BuildSession {
  readonly paths: BuildPaths;
  readonly log: TransferableEventLog;
  readonly projections: ProjectionStore;
  readonly controller: Controller;
  /**
   * One controller step. Before the first, the log is checked against the chain head
   * anchor and the last signed checkpoint; a checkpoint is signed after every promotion,
   * milestone checkpoint and end of the build. With `held`, its last events may stay
   * uncommitted until the next effect starts or the build is closed (a run's steps then share
   * commits, decision 0017); without it they are durable when it returns.
   */
  advance(options?: { readonly held?: boolean }): Promise<StepResult>;
  /**
   * Run to the end (or until `stop`), with up to `concurrency` worker calls in flight (issue 16),
   * reporting each step as it ends; under the same log checks, and signed at the end.
   */
  /** `stop(inFlight)`: whether to decide nothing more, given the steps started and not ended yet. */
  runAll(onStep: (r: StepResult) => void, stop?: (inFlight: number) => boolean): Promise<StepResult | null>;
  /** Record an operator's decision (`retry`), under the same log checks as a step. */
  operate(decide: (state: BuildState) => OperatorVerdict, causationId: string): Promise<StepResult>;
  /**
   * Close; a session that appended signs a checkpoint at the head first (the end of every run),
   * unless `sign` is false (after a storage failure: the log's files are not to be touched again).
   */
  close(options?: { readonly sign?: boolean }): Promise<void>;
}

/** The trusted verification environment: PATH, a fixed locale and the allowlist, nothing inherited by accident. */
export function trustedVerifyEnv(env: NodeJS.ProcessEnv, allow: readonly string[] = []): Record<string, string> {
  return commandEnv(env, allow, { NODE_ENV: 'test' });
}

/** The report of a run that made no step (stopped before the first). */
function describeNothing(state: BuildState): StepResult {
  return { outcome: 'recovered', position: state.position, graphRevision: state.graphRevision, detail: 'no step' };
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
    const warn = opts.warn ?? ((line: string) => void process.stderr.write(`longbuild: ${line}\n`));
    // An upgrade that changed the projections' layout refolds the whole log once: say so, it can take a minute.
    const head = store.reset.length > 0 ? (await log.head())?.position ?? 0 : 0;
    if (head > 0) warn(`${paths.projections} was written by another version of longbuild (${store.reset.join(', ')}): folding the log into it again, ${head} events (once)`);
    // Projections are local SQLite whatever the log is, and catch up from it (R-1, issue 8).
    await catchUpFromLog(store, log);
    const first = (await log.readAll({ from: 1, limit: 1 }))[0];
    if (!first || first.type !== 'BuildInitialized') throw new CorruptLogError(1, 'the log does not start with BuildInitialized');
    const firstData = first.data as { buildId: string; driver: { sourceSha256: string }; sandbox?: SandboxSettings; verify: string[][]; integrationRef: string; signing?: { vkey: string }; settings?: { ignoredFiles?: 'allowed' | 'dirty' } };
    // A fork goes on under the driver, verification and settings its ForkedFrom names.
    const folded = store.state<BuildState>(buildProjection.name);
    const initData = folded?.build ? { ...firstData, driver: folded.build.driver, verify: folded.build.verify, settings: folded.build.settings } : firstData;
    const driver = readDriver(paths, initData.driver.sourceSha256);
    // What verification gets: the allowlist, and the secrets unless the config keeps them from it.
    const allow = driver.kind === 'command' ? [...driver.config.env.allow, ...(driver.config.env.secretTo.verify ? driver.config.env.secret : [])] : [];
    const secretNames = driver.kind === 'command' ? [...driver.config.env.secret, ...agentSecretNames([driver.config.planner.agent, driver.config.worker.agent])] : [];
    const secrets = secretNames.map((n) => env[n]).filter((v): v is string => v !== undefined && v !== '');
    await ensureIntegratorRepo(paths.integrator, paths.repo, initData.integrationRef);
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
    let projectionsBehind = false;
    /** Projections are written behind the log, in batches (decision 0017). */
    const writeProjections = (write: () => void): void => {
      if (projectionsBehind) return;
      try {
        write();
      } catch (err) {
        // The events are durable; the projections are a cache rebuilt from them. A failed write
        // must not stop the effect whose intent was just appended (issue 17): they catch up on
        // the next open.
        projectionsBehind = true;
        const why = storageErrorOf(err, paths.projections)?.detail ?? (err as Error).message;
        warn(`${paths.projections} could not be updated (${why}); the log is intact and the projections catch up on the next run`);
      }
    };
    // The notary is opened at the first step: reading commands (status, show) need no key and no
    // tree store, and still read builds from before signed checkpoints.
    let notary: Notary | null = null;
    const evidence = new FileEvidenceStore(paths.evidence);
    const calls = new FileCallMarks(paths.calls, (firstData as { callJournal?: number }).callJournal === 1,
      (journal) => warn(`${journal} is missing or was emptied: a call that was in flight may have been made; it is counted as made again (EffectReinvoked, journal lost)`));
    // The controller starts from the state the projection store restored and caught up.
    const controller = await Controller.open({
      log,
      clock: driver.kind === 'blueprint' ? logicalClock() : systemClock,
      planner: opts.planner ?? plannerFor(driver, paths, env, run(sandbox.planner)),
      worker: opts.worker ?? workerFor(driver, env, run(sandbox.worker)),
      git: gitBinding({
        repo: paths.repo, integratorRepo: paths.integrator, worktreesDir: paths.worktrees, workspacesDir: paths.workspaces, indexDir: paths.index,
        verifyEnv: trustedVerifyEnv(env, allow), verifyTimeoutMs: (driver.kind === 'command' ? driver.config.verifyTimeoutSeconds : 600) * 1000, cache: verificationCacheFor(cacheDir, env, cacheSetting),
        runVerification: ({ phase, ...o }) => run(phase === 'setup' ? sandbox.setup : sandbox.verify)({ ...o, rw: [o.cwd], mounts: setup?.mounts(phase) ?? [] }), ignoredFiles: initData.settings?.ignoredFiles ?? 'dirty',
        ...(setup !== undefined ? { phases: setup.phases } : offline !== undefined ? { phases: offline } : {}),
        limits: { maxFileBytes: initData.sandbox?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, maxFiles: initData.sandbox?.maxFiles ?? DEFAULT_MAX_FILES, protectedPaths, verify: initData.verify },
      }),
      evidence,
      calls,
      drivers: callDrivers(driver),
      // Only a command build's calls report usage; a blueprint's scripted ones use nothing.
      ...(driver.kind === 'command' ? { usage: new UsageFiles(paths.usage, driver.config.prices), warn, traceparent: (kind: 'planner' | 'attempt', key: string) => traceparentOf(initData.buildId, kind, key) } : {}),
      ...(folded?.fork !== undefined ? { reuse: parentResults(folded.fork, evidence, warn) } : {}),
      faults: opts.faults ?? faultsFromEnv(env),
      ...(opts.beforeAppend ? { beforeAppend: opts.beforeAppend } : {}),
      ...(opts.beforeRefMove ? { fence: opts.beforeRefMove } : {}),
      ...(opts.soleWriter === true ? { soleWriter: true } : {}),
      // a checkpoint signed at every promotion, milestone checkpoint and end, as it is appended.
      afterAppend: async (events, durable) => {
        if (notary === null || !events.some((e) => SIGNED_AFTER.has(e.type))) return;
        await durable(); // a signature covers only what is durable
        await notary.sign();
      },
      onAppended: (events, state) => writeProjections(() => store.catchUpLater(events, new Map([[buildProjection.name, state]]))),
    }, store.state<BuildState>(buildProjection.name), { trusted: opts.reading === true });
    /** Before the first append the log is checked. */
    const checked = async (work: () => Promise<StepResult>): Promise<StepResult> => {
      if (opts.reading === true) throw new ValidationError('a build opened for reading does not step (open it without `reading`)');
      if (notary === null) {
        // An agent without credentials is refused before anything is recorded (reading commands need none).
        if (driver.kind === 'command') for (const [role, c] of [['planner', driver.config.planner], ['worker', driver.config.worker]] as const) assertCallable(role, c, env);
        const opened = openNotary(paths, log, initData, env);
        try {
          opened.useKey(loadBuildKey(opts, env, initData));
          await opened.check();
          // The integrator's repository holds the integration head whole, or the run stops before recording anything (issue 45).
          const head = controller.current.integrationHead;
          const damage = head ? await integratorDamage(paths.integrator, head) : null;
          if (damage !== null) throw new ValidationError(`${paths.integrator} is damaged: ${damage}; ${integratorRecovery(paths.integrator)}`, 'R-31');
          if (opened.restored !== null) warn(`${opened.restored} did not verify (damaged): written again from this machine's copy of the last signature`);
          // Checkpoints a stopped run missed (an unwritable checkpoints/, a kill before the signature) are signed now (issue 45).
          const missed = await opened.signMissed();
          if (missed.length > 0) warn(`signed ${missed.length} checkpoint${missed.length === 1 ? '' : 's'} an earlier run missed (at size${missed.length === 1 ? '' : 's'} ${missed.join(', ')})`);
        } catch (err) {
          opened.close();
          throw err;
        }
        notary = opened;
      }
      return work();
    };
    return {
      paths, log, projections: store, controller,
      async advance(options) {
        return checked(() => controller.advance(options));
      },
      async runAll(onStep, stop) {
        let last: StepResult | null = null;
        await checked(async () => (last = await controller.runAll(onStep, stop)) ?? describeNothing(controller.current));
        return last;
      },
      async operate(decide, causationId) {
        return checked(() => controller.operate(decide, causationId));
      },
      async close(options = {}) {
        try {
          // Decisions appended since the last effect (a final report, a refusal) are committed.
          if (!controller.broken) {
            await controller.sync();
            // Every marked call settled in a durable log: the journal has nothing left to answer (decision 0025).
            if (opts.reading !== true && !callsInDoubt(controller.current)) calls.forgetSettled();
          }
          if (options.sign !== false) await notary?.sign();
        } finally {
          notary?.close();
          calls.close();
          writeProjections(() => store.flush());
          store.close();
          await log.close();
        }
      },
    };
  } catch (err) {
    projections?.close();
    await log.close();
    throw err;
  }
}

/** Events after which a checkpoint is signed: promotions, milestone checkpoints, the end. */

function openNotary(paths: BuildPaths, log: TransferableEventLog, initData: { buildId: string; signing?: { vkey: string } }, env: NodeJS.ProcessEnv): Notary {
  if (initData.signing === undefined) {
    throw new CorruptLogError(1, 'the log names no signing key (the build predates signed checkpoints, R-35): it can be read and verified, not extended');
  }
  return Notary.open(paths, log, initData.buildId, parseVerifierKey(initData.signing.vkey), null, signedHeadPath(env, paths.dir));
}

/** The signing key for appending: it must be the key the build recorded. */
function loadBuildKey(opts: OpenOptions, env: NodeJS.ProcessEnv, initData: { buildId: string; signing?: { vkey: string } }): KeyObject {
  const key = loadSigningKey(signingKeyPath(opts.signingKey, env, opts.cwd));
  const buildKey = buildKeyFrom(key.privateKey, initData.buildId, initData.signing!.vkey);
  if (buildKey === null) {
    throw new ValidationError(`the signing key ${key.path} is not this build's key (the log records ${initData.signing!.vkey}); pass the build's key with --signing-key FILE, or set LONGBUILD_SIGNING_KEY`, 'R-35');
  }
  return buildKey;
}

type Runner = (o: SandboxedRun) => Promise<ProcessResult>;

/**
 * The sandbox of each role, from what the build recorded. Every role hides the repository,
 * the build directory and the cache. bubblewrap is looked up when the first sandboxed call is
 * made, so reading commands (`status`, `show`) work on a machine without it; a sandboxed call
 * there is refused with one line.
 */
function sandboxPolicies(paths: BuildPaths, recorded: SandboxSettings | undefined, env: NodeJS.ProcessEnv, cacheDir: string, secret: readonly string[]): Record<'planner' | 'worker' | 'verify' | 'setup', () => SandboxPolicy> {
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

function plannerFor(driver: DriverFile, paths: BuildPaths, env: NodeJS.ProcessEnv, run: Runner): Planner {
  if (driver.kind === 'blueprint') return new ScriptedPlanner(driver.blueprint);
  const c = driver.config;
  return new CommandPlanner({
    style: styleFor('planner', c.planner, env, [...c.env.allow, ...(c.env.secretTo.planner ? c.env.secret : [])]),
    route: c.planner.route ?? defaultRoute(c.planner), timeoutMs: c.planner.timeoutSeconds * 1000, repo: paths.integrator, answers: paths.answers, run,
  });
}

/**
 * The driver of each planner and worker call: a blueprint's plan (what the scripted planner
 * proposes from) and a node's entry; a command build's planner or worker configuration and the
 * environment names it passes. Part of every call's input digest.
 */
export function callDrivers(driver: DriverFile): CallDrivers {
  const plain = (v: unknown): JsonValue => JSON.parse(JSON.stringify(v ?? null)) as JsonValue;
  if (driver.kind === 'blueprint') {
    const bp = driver.blueprint;
    const planned = (ms: Blueprint['milestones']) => ms.map((m) => ({ id: m.id, title: m.title, ...(m.intent !== undefined ? { intent: m.intent } : {}), nodes: m.nodes.map(proposedNode) }));
    const plan = plain({ kind: 'blueprint', detailedWindow: bp.detailedWindow, coarseWindow: bp.coarseWindow, milestones: planned(bp.milestones), repairs: planned(bp.repairs ?? []) });
    return { planner: () => plan, worker: (nodeId) => plain({ kind: 'blueprint', node: findBlueprintNode(bp, nodeId)?.node ?? null }) };
  }
  const c = driver.config;
  const planner = plain({ kind: 'command', planner: c.planner, env: c.env });
  const worker = plain({ kind: 'command', worker: c.worker, env: c.env });
  return { planner: () => planner, worker: () => worker };
}

function workerFor(driver: DriverFile, env: NodeJS.ProcessEnv, run: Runner): Worker {
  if (driver.kind === 'blueprint') return new ScriptedWorker(driver.blueprint, env.LONGBUILD_EFFECTS_LEDGER ? { ledgerPath: env.LONGBUILD_EFFECTS_LEDGER } : {});
  const c = driver.config;
  return new CommandWorker({
    style: styleFor('worker', c.worker, env, [...c.env.allow, ...(c.env.secretTo.worker ? c.env.secret : [])]), timeoutMs: c.worker.timeoutSeconds * 1000, run,
    rework: c.worker.rework ?? c.worker.agent !== undefined,
  });
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
