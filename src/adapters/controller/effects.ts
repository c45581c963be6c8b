/**
 * The effects a step requests (src/commands/decide-step.ts), carried out: git, the planner and worker
 * processes, the evidence store and the call marks. Each effect does what its request says and
 * reports what happened; what that means for the log is decided by `settle`, never here. Fault
 * points (`before-effect:NAME`, `after-effect:NAME`, `after-keep:ROLE`) sit where the process
 * boundary is, so the fuzzer can stop the host exactly there.
 */
import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { callInputSha256, commitIdsIn, type CommitContent, type HashedDriver } from '../../commands/call-input.js';
import type { CommandEvidence } from '../../events/catalogue.js';
import type { EffectRequest, EffectResults, KeptWorkerOutcome, VerificationOutcome } from '../../commands/decide-step.js';
import type { Planner, PlannerAnswer, Worker } from '../../commands/ports.js';
import { ATTEMPT_REF_PREFIX } from '../../commands/refs.js';
import type { FaultInjector } from '../faults.js';
import type { BuildState } from '../../projections/build-state.js';
import { shardGet } from '../../projections/sharded.js';
import type { CallMarks } from './call-marks.js';
import { withAcceptanceOutput, withDependencyFiles, withFailureEvidence } from './packet-context.js';
import { jobTests, readRun, reportFilesOf, type CommandTests } from './test-evidence.js';
import type { EvidenceStore, GitPort, VerificationRun } from './effect-ports.js';
import type { UsageFiles } from './usage-files.js';
import type { Usage } from '../../events/catalogue.js';

export interface EffectDeps {
  readonly planner: Planner;
  readonly worker: Worker;
  readonly git: GitPort;
  readonly evidence: EvidenceStore;
  readonly faults: FaultInjector;
  /**
   * Durable marks of planner and worker calls about to start (call-marks.ts): an open intent
   * whose call has no mark never started, so resuming it records no re-invocation.
   */
  readonly calls?: CallMarks;
  /** Told when a planner, worker or verification call starts and ends (progress shows them). */
  readonly board?: CallBoard;
  /**
   * The driver of each call: what, besides its input, decides what a planner or worker
   * call returns. Without it no input digest is recorded (and nothing is reused).
   */
  readonly drivers?: CallDrivers;
  /** A fork's parent's results by input digest: adopted instead of calling. */
  readonly reuse?: ReuseSource;
  /**
   * Rejects (ConcurrencyError, exit 3) when this controller no longer holds the lease, checked now
   * (for PostgreSQL, against the lease row): run immediately before every effect that moves a ref
   * (promote, publish, repair, delete branches), so a deposed controller moves none.
   */
  readonly fence?: () => Promise<void>;
  /** Where commands report what their calls used, and the prices; absent: nothing is read. */
  readonly usage?: UsageFiles;
  /** The traceparent of a call's span in the build's trace (commands/otel.ts). */
  readonly traceparent?: (kind: 'planner' | 'attempt', key: string) => string;
  /** One line about a usage report that was not taken (a warning; the call stands). */
  readonly warn?: (line: string) => void;
}

export interface CallDrivers {
  /** The planner's driver: as it is, or digested once (a blueprint's plan: HashedDriver). */
  planner(): JsonValue | HashedDriver;
  worker(nodeId: string): JsonValue;
}

/** A parent's recorded result: its event's position and hash. */
export interface ReusedFrom {
  readonly position: number;
  readonly hash: string;
}

/** Where a fork finds its parent's results (src/adapters/fork/parent-results.ts). */
export interface ReuseSource {
  /** The parent's answer to a planner call with this input digest, or null. */
  planner(inputSha256: string): Promise<{ readonly answer: JsonValue; readonly from: ReusedFrom } | null>;
  /**
   * The parent's worker outcome for a call with this input digest (its evidence files copied into
   * this build's store), with the commit whose tree the worker left and the repository holding
   * it (null for a read-only or failed outcome), or null.
   */
  worker(inputSha256: string): Promise<{ readonly kept: KeptWorkerOutcome; readonly commit: { readonly sha: string; readonly repo: string } | null; readonly from: ReusedFrom } | null>;
}

/** The calls running now, for whoever shows progress: a key, what the call is, since when. */
export interface CallBoard {
  begin(key: string, label: string): void;
  end(key: string): void;
}

export type RunEffect = <R extends EffectRequest>(request: R) => Promise<EffectResults[R['kind']]>;

/**
 * The runner of every effect a step can request, and `keptDurable`: call it once the log is
 * durable (inside the writer's turn, so `state` is what is committed) and before an effect that
 * changes the world starts. A worker's outcome is kept written but unflushed (decision 0017):
 * when the commit that made the log durable records it (its AttemptFinished), the kept line is
 * moot and is never flushed on its own; one the log does not record yet is flushed now.
 */
export interface EffectRunner {
  readonly run: RunEffect;
  keptDurable(state: BuildState): void;
}

/** The runner of every effect a step can request (see EffectRunner). */
export function effectRunner(deps: EffectDeps): EffectRunner {
  const { git, faults, calls } = deps;
  /** Attempts whose worker outcome is kept unflushed, until the log records it. */
  const unflushed = new Set<string>();
  const keptDurable = (state: BuildState): void => {
    for (const attemptId of unflushed) {
      if (shardGet(state.attempts, attemptId)?.status === 'started') {
        calls?.flush();
        unflushed.clear();
        return;
      }
    }
    unflushed.clear();
  };
  /** A call to a process: its fault points, and its mark, durable before it starts. */
  const call = async <T>(name: 'planner' | 'worker' | 'verify' | 'accept' | 'promote', run: () => Promise<T>, mark?: { key: string; invocation: number }, shown?: { key: string; label: string }): Promise<T> => {
    faults.reach(`before-effect:${name}`);
    if (mark !== undefined) calls?.mark(mark.key, mark.invocation);
    if (shown !== undefined) deps.board?.begin(shown.key, shown.label);
    let result: T;
    try {
      result = await run();
    } finally {
      if (shown !== undefined) deps.board?.end(shown.key);
    }
    faults.reach(`after-effect:${name}`);
    return result;
  };
  const run = async (r: EffectRequest): Promise<EffectResults[keyof EffectResults]> => {
    switch (r.kind) {
      case 'observe-refs':
        return git.observeRefs(r.ref, r.withAttempts);
      case 'delete-branches':
        await deps.fence?.();
        await git.deleteAttemptBranches(r.attemptIds);
        return null;
      case 'repair-refs':
        await deps.fence?.();
        for (const x of r.repairs) await git.repairRef(x);
        return null;
      case 'recall-planner': {
        const kept = calls?.kept(r.callId, r.invocation) ?? null;
        return { kept, ...startedOf(calls, r.callId, r.invocation), ...(kept === null ? lostUsage(r.callId, r.invocation) : {}) };
      }
      case 'planner': {
        const input = withAcceptanceOutput(r.input, deps.evidence);
        const inputSha256 = await digest('planner', input, () => deps.drivers!.planner());
        const reused = inputSha256 !== undefined ? await deps.reuse?.planner(inputSha256) ?? null : null;
        const digested = inputSha256 !== undefined ? { inputSha256 } : {};
        if (reused !== null) {
          // The parent answered this very input: its answer is this call's, checked again like any answer.
          const result = { answer: reused.answer, ...digested, reused: reused.from };
          calls?.keep(r.callId, r.invocation, result as unknown as JsonValue);
          return result;
        }
        const usageFile = deps.usage?.prepare(r.callId, r.invocation);
        const options = { ...(usageFile !== undefined ? { usageFile } : {}), ...(deps.traceparent !== undefined ? { traceparent: deps.traceparent('planner', r.callId) } : {}) };
        const got: PlannerAnswer = await call('planner', async (): Promise<PlannerAnswer> => (deps.planner.answer !== undefined ? deps.planner.answer(input, options) : { proposal: await deps.planner.propose(input) }),
          { key: r.callId, invocation: r.invocation }, { key: r.callId, label: `planner (${r.purpose}, ${r.callId})` });
        const answer = got.proposal;
        // An answer kept from an interrupted invocation asked no model: what that one used is its EffectReinvoked's.
        const used = got.replayed === true ? undefined : usageOf(got.usage, r.callId, r.invocation);
        const spent = used !== undefined ? { usage: used } : {};
        // Kept until it is recorded (only a canonical answer: anything else is re-asked after a crash).
        if (isCanonical(answer)) {
          calls?.keep(r.callId, r.invocation, { answer: answer as JsonValue, ...digested, ...spent } as JsonValue);
          faults.reach('after-keep:planner');
        }
        return { answer, ...digested, ...spent };
      }
      case 'recall-attempt': {
        const found = r.writable ? await git.findAttemptCommit(r.branch, r.baseHead) : null;
        const kept = (calls?.kept(r.key, r.invocation) ?? null) as KeptWorkerOutcome | null;
        const clone = kept !== null && r.writable ? await git.keptAttemptWorktree(r.attemptId) : '';
        return { found, kept, clone, ...startedOf(calls, r.key, r.invocation), ...(kept === null ? lostUsage(r.key, r.invocation) : {}) };
      }
      case 'worker': {
        const { packet } = r;
        // A retry reworks the candidate that failed integration, in a clone that starts from its changes.
        const prepared = r.writable
          ? await git.prepareAttemptWorktree(r.attemptId, packet.branch, packet.baseHead, r.rework ? ATTEMPT_REF_PREFIX + r.rework.attemptId : undefined)
          : { worktree: '', reworked: false, conflicts: [] };
        const full = await withDependencyFiles(
          withFailureEvidence(packet, r.failureEvidence, deps.evidence, prepared.reworked ? r.rework?.commit : undefined, prepared.conflicts),
          (commit) => git.filesChangedBy(commit),
        );
        const inputSha256 = await digest('worker', full, () => deps.drivers!.worker(packet.nodeId));
        const reused = inputSha256 !== undefined ? await adopted(inputSha256, r.writable, prepared.worktree) : null;
        if (reused !== null) {
          calls?.keep(r.key, r.invocation, reused as unknown as JsonValue);
          return { kept: reused, worktree: prepared.worktree };
        }
        const usageFile = deps.usage?.prepare(r.key, r.invocation);
        const options = { ...(usageFile !== undefined ? { usageFile } : {}), ...(deps.traceparent !== undefined ? { traceparent: deps.traceparent('attempt', r.attemptId) } : {}) };
        const out = await call('worker', () => deps.worker.implement(full, prepared.worktree, options),
          { key: r.key, invocation: r.invocation }, { key: r.attemptId, label: `worker on ${packet.nodeId} (attempt ${packet.attempt})` });
        const used = usageOf(out.usage, r.key, r.invocation);
        const kept: KeptWorkerOutcome = {
          outcome: out.outcome, stdoutSha256: deps.evidence.put(Buffer.from(out.stdout)), stderrSha256: deps.evidence.put(Buffer.from(out.stderr)),
          ...(out.reason !== undefined ? { reason: out.reason } : {}), ...(out.decision !== undefined ? { decision: out.decision } : {}), ...(out.durationMs !== undefined ? { durationMs: out.durationMs } : {}),
          ...(inputSha256 !== undefined ? { inputSha256 } : {}), ...(used !== undefined ? { usage: used } : {}),
        };
        // Kept before the host acts on it: a crash or a full disk from here on finishes the attempt
        // from this outcome and the clone, without calling the worker again. Written now, flushed
        // with the next commit unless that commit records it (keptDurable).
        calls?.keep(r.key, r.invocation, kept as unknown as JsonValue, { flush: false });
        unflushed.add(r.attemptId);
        faults.reach('after-keep:worker');
        return { kept, worktree: prepared.worktree };
      }
      case 'finish-clone': {
        const c = r.commit;
        const made = c === null ? { kind: 'unchanged' as const } : await git.commitAttempt(c.branch, c.baseHead, c.worktree, c.message, c.date);
        await git.removeAttemptWorktree(r.attemptId);
        return made;
      }
      case 'check-candidate':
        if (r.removeClone !== null) await git.removeAttemptWorktree(r.removeClone);
        return { problem: await git.candidateProblem(r.base, r.commit, r.judged) };
      case 'verify':
        return verify(r);
      case 'accept': {
        const out = await call('accept', () => git.checkHead(r.runId, r.head, r.commands), undefined, { key: r.runId, label: `acceptance ${r.runId} on ${r.head.slice(0, 12)}` });
        return { tree: out.tree, passed: out.verification.passed, ...(out.verification.reason !== undefined ? { reason: out.verification.reason } : {}), evidence: storedEvidence(out.verification) };
      }
      case 'read-ref':
        return { commit: await git.readRef(r.ref) };
      case 'publish':
        await deps.fence?.();
        await git.repairRef({ ref: r.ref, where: 'published', found: null, expected: r.commit });
        return null;
      case 'promote':
        return call('promote', async () => {
          await deps.fence?.();
          return git.promote(r.ref, r.commit, r.expectedOld);
        });
    }
  };
  /** What a call used: its agent's report, else its usage file; priced. */
  const usageOf = (reported: Usage | undefined, key: string, invocation: number): Usage | undefined => {
    if (deps.usage === undefined) return reported;
    if (reported !== undefined) return deps.usage.price(reported);
    const read = deps.usage.read(key, invocation);
    if (read.problem !== undefined) deps.warn?.(`${read.problem}; the call's usage is recorded as unknown`);
    return read.usage;
  };
  /** What an invocation a crash interrupted reported before it (its usage file), for its EffectReinvoked. */
  const lostUsage = (key: string, invocation: number): { lostUsage?: Usage } => {
    const read = deps.usage?.read(key, invocation) ?? {};
    if (read.problem !== undefined) deps.warn?.(`${read.problem}; the interrupted call's usage is recorded as unknown`);
    return read.usage !== undefined ? { lostUsage: read.usage } : {};
  };
  /** A call's input digest, when the build names its drivers: commit ids are read as the content they name. */
  const digest = async (role: 'planner' | 'worker', input: unknown, driver: () => JsonValue | HashedDriver): Promise<string | undefined> => {
    if (deps.drivers === undefined) return undefined;
    const contents = new Map<string, CommitContent | null>();
    for (const id of commitIdsIn(input)) contents.set(id, await git.contentOf(id));
    return callInputSha256(role, input, driver(), contents);
  };
  /**
   * The parent's outcome for this input, its files placed in the clone as the parent's
   * worker left them; null when there is none or its commit cannot be had (the worker is called).
   */
  const adopted = async (inputSha256: string, writable: boolean, worktree: string): Promise<KeptWorkerOutcome | null> => {
    const found = await deps.reuse?.worker(inputSha256) ?? null;
    if (found === null || (found.commit !== null) !== (writable && found.kept.outcome === 'committed')) return null;
    if (found.commit !== null) {
      try {
        await git.materialize(worktree, found.commit.sha, found.commit.repo);
      } catch {
        return null; // the parent's repository or commit is gone: the call is made
      }
    }
    return { ...found.kept, inputSha256, reused: found.from };
  };
  /** Apply and verify in a clean workspace (the cache first); the evidence bytes are stored, the result names them. */
  const verify = async (r: Extract<EffectRequest, { kind: 'verify' }>): Promise<VerificationOutcome> => {
    const opts = {
      ...(r.retestOnFailure ? { retestOnFailure: true } : {}), ...(r.layers !== undefined ? { layers: r.layers } : {}),
      ...(r.tests !== undefined && r.tests.reports.some((x) => x?.file !== undefined) ? { reportFiles: reportFilesOf(r.tests.reports) } : {}),
    };
    const stacked = r.layers !== undefined && r.layers.length > 0 ? ` on top of ${r.layers.at(-1)!.jobId}` : '';
    const out = await call('verify', () => git.integrateAndVerify(r.jobId, r.baseHead, r.commits, r.date, r.commands, Object.keys(opts).length > 0 ? opts : undefined),
      undefined, { key: r.jobId, label: `verifying ${r.jobId}${stacked}` });
    if (!out.ok) {
      if (out.conflict === undefined) return { ok: false, reason: out.reason };
      // The conflict is evidence: what git said and the conflicted files, for the rework.
      const c = out.conflict;
      return { ok: false, reason: out.reason, evidence: [{ argv: [...c.argv], exitCode: 1, stdoutSha256: deps.evidence.put(c.output), stderrSha256: deps.evidence.put(Buffer.alloc(0)), durationMs: Math.round(c.durationMs), cacheHit: false }] };
    }
    const v = out.verification;
    if (r.tests === undefined) return { ok: true, resultCommit: out.resultCommit, tree: out.tree, passed: v.passed, ...(v.reason !== undefined ? { reason: v.reason } : {}), evidence: storedEvidence(v) };
    // The tests' reports (R-51), what they are compared with, and the hold-out (R-50).
    const read = readRun(v, r.tests.reports, deps.evidence);
    const tests = await jobTests(r.tests, { jobId: r.jobId, date: r.date, commands: r.commands, run: v, read, under: out.under, result: out.resultCommit }, git, deps.evidence, deps.board);
    return {
      ok: true, resultCommit: out.resultCommit, tree: out.tree, passed: v.passed, ...(v.reason !== undefined ? { reason: v.reason } : {}),
      evidence: storedEvidence(v, read.perCommand), ...(tests !== undefined ? { tests } : {}),
    };
  };
  /** Every command's output bytes stored; the evidence names them (and what each one's test report said). */
  const storedEvidence = (v: VerificationRun, tests: readonly CommandTests[] = []): CommandEvidence[] => v.commands.map((c, i) => ({
    argv: [...c.argv], exitCode: c.exitCode, stdoutSha256: deps.evidence.put(c.stdout), stderrSha256: deps.evidence.put(c.stderr),
    durationMs: Math.round(c.durationMs), cacheHit: c.cacheHit, ...tests[i],
  }));
  return { run: run as RunEffect, keptDurable };
}

function isCanonical(value: unknown): boolean {
  try {
    canonicalJson(value);
    return true;
  } catch {
    return false;
  }
}

/** Whether a call in doubt had started, from its mark; with the journal lost, it is in doubt and counted as made. */
function startedOf(calls: CallMarks | undefined, key: string, invocation: number): { started: boolean; journalLost?: true } {
  if (calls === undefined) return { started: true };
  if (calls.started(key, invocation)) return { started: true };
  return calls.lost?.() === true ? { started: true, journalLost: true } : { started: false };
}
