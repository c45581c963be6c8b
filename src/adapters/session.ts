import { UsageFiles } from './controller/usage-files.js';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import type { SandboxSettings } from '../events/catalogue.js';
import { catchUpFromLog } from './log/paging.js';
import { storageErrorOf } from '../projections/storage-guard.js';
import type { ProjectionStore } from '../projections/engine.js';
import { buildProjection } from '../projections/build-projection.js';
import { buildPaths, openBuildLog, openBuildProjections } from './build-dir.js';
import { logicalClock, systemClock } from './clock.js';
import { readDriver } from './driver-file.js';
import { faultsFromEnv } from './faults.js';
import { Controller } from './controller/controller.js';
import { gitBinding } from './controller/git-binding.js';
import { verificationCacheFor } from './cache/setting.js';
import { FileEvidenceStore } from './evidence-store.js';
import { ensureIntegratorRepo } from './git/git.js';
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES } from './sandbox/settings.js';
import { parentResults } from './fork/parent-results.js';
import { FileCallMarks } from './controller/call-marks.js';
import type { StepResult } from './controller/controller.js';
import { callsInDoubt, type BuildState } from '../projections/build-state.js';
import { Notary, SIGNED_AFTER } from './transparency/notary.js';
import { traceparentOf } from '../commands/otel-trace.js';

import { callDrivers, plannerFor, workerFor } from './session-drivers.js';
import { executionOf, trustedVerifyEnv } from './session-execution.js';
import { firstStepChecks } from './session-notary.js';
import { packCheckpoints } from './transparency/checkpoint-pack.js';
import { packLooseObjects } from './git/integrator-repo.js';

export { callDrivers } from './session-drivers.js';
export { cacheDirOfBuild, trustedVerifyEnv } from './session-execution.js';

export const INTEGRATION_REF = 'refs/heads/longbuild/integration';


import type { BuildSession, OpenOptions } from './session-types.js';
export type { BuildSession, OpenOptions };

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
    // Projections are local SQLite whatever the log is, and catch up from it.
    await catchUpFromLog(store, log);
    const first = (await log.readAll({ from: 1, limit: 1 }))[0];
    if (!first || first.type !== 'BuildInitialized') throw new CorruptLogError(1, 'the log does not start with BuildInitialized');
    const firstData = first.data as { buildId: string; driver: { sourceSha256: string }; sandbox?: SandboxSettings; verify: string[][]; integrationRef: string; signing?: { vkey: string }; settings?: { ignoredFiles?: 'allowed' | 'dirty' } };
    // A fork goes on under the driver, verification and settings its ForkedFrom names.
    const folded = store.state<BuildState>(buildProjection.name);
    const initData = folded?.build ? { ...firstData, driver: folded.build.driver, verify: folded.build.verify, settings: folded.build.settings } : firstData;
    const driver = readDriver(paths, initData.driver.sourceSha256);
    await ensureIntegratorRepo(paths.integrator, paths.repo, initData.integrationRef);
    const x = executionOf(paths, driver, initData, env, opts);
    let projectionsBehind = false;
    /** Projections are written behind the log, in batches (decision 0017). */
    const writeProjections = (write: () => void): void => {
      if (projectionsBehind) return;
      try {
        write();
      } catch (err) {
        // The events are durable; the projections are a cache rebuilt from them. A failed write
        // must not stop the effect whose intent was just appended: they catch up on
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
      planner: opts.planner ?? plannerFor(driver, paths, env, x.run(x.sandbox.planner)),
      worker: opts.worker ?? workerFor(driver, env, x.run(x.sandbox.worker)),
      git: gitBinding({
        repo: paths.repo, integratorRepo: paths.integrator, worktreesDir: paths.worktrees, workspacesDir: paths.workspaces, indexDir: paths.index,
        verifyEnv: trustedVerifyEnv(env, x.allow), verifyTimeoutMs: (driver.kind === 'command' ? driver.config.verifyTimeoutSeconds : 600) * 1000, cache: verificationCacheFor(x.cacheDir, env, x.cacheSetting),
        runVerification: ({ phase, ...o }) => x.run(phase === 'setup' ? x.sandbox.setup : x.sandbox.verify)({ ...o, rw: [o.cwd], mounts: x.setup?.mounts(phase) ?? [] }), ignoredFiles: initData.settings?.ignoredFiles ?? 'dirty',
        ...(x.setup !== undefined ? { phases: x.setup.phases } : x.offline !== undefined ? { phases: x.offline } : {}),
        limits: { maxFileBytes: initData.sandbox?.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES, maxFiles: initData.sandbox?.maxFiles ?? DEFAULT_MAX_FILES, protectedPaths: x.protectedPaths, verify: initData.verify },
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
        // A milestone closed: its checkpoint files and the integrator's loose objects are packed (decision 0052).
        if (events.some((e) => e.type === 'CheckpointWritten')) {
          packCheckpoints(paths);
          await packLooseObjects(paths.integrator);
        }
      },
      onAppended: (events, state) => writeProjections(() => store.catchUpLater(events, new Map([[buildProjection.name, state]]))),
    }, store.state<BuildState>(buildProjection.name), { trusted: opts.reading === true });
    /** Before the first append the log is checked. */
    const checked = async (work: () => Promise<StepResult>): Promise<StepResult> => {
      if (opts.reading === true) throw new ValidationError('a build opened for reading does not step (open it without `reading`)');
      notary ??= await firstStepChecks({ paths, log, driver, initData, env, opts, head: controller.current.integrationHead, warn });
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

