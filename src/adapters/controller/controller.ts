import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { canonicalSha256, sha256Hex } from '../../events/hash.js';
import { CorruptLogError, EffectError, RefusedTransitionError } from '../../events/errors.js';
import { computeEventHash, type StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/log.js';
import type { CommandEvidence, DomainEvent, Receipt } from '../../events/catalogue.js';
import { attemptOf, evolveBuild, horizonConflict, initialBuildState, jobOf, type AttemptRecord, type BuildState, type JobRecord } from '../../projections/build-state.js';
import { nextAction, plannerAsks, refusedTimes, type NextAction } from '../../commands/next-action.js';
import { graphRecords } from '../../projections/graph-record.js';
import { isBatchMode, shouldSplit, splitData } from '../../commands/batch.js';
import { validateProposal, validateRenewal } from '../../commands/horizon.js';
import { acceptedVersions, deriveCheckpoint } from '../../commands/checkpoint.js';
import { compactMilestone } from '../../commands/compaction.js';
import { ATTEMPT_REF_PREFIX, attemptIdsOfNode, decideRefRepairs, finishedAttemptBranches, withoutAttempts, type RefRepair } from '../../commands/refs.js';
import type { Planner, Worker } from '../../commands/ports.js';
import { plannerInputOf, reworkOf, workPacketOf } from '../../commands/effect-inputs.js';
import { withDependencyFiles, withFailureEvidence } from './packet-context.js';
import type { Clock } from '../clock.js';
import type { FaultInjector } from '../faults.js';
import type { CallMarks } from './call-marks.js';
import type { EvidenceStore, GitPort } from './ports.js';
import { throwIfInterrupted } from '../interrupt.js';
import type { OperatorVerdict } from '../../commands/operator.js';

export type StepOutcome =
  | 'planned' | 'dispatched' | 'integrated' | 'revising' | 'checkpointed' | 'compacted'
  | 'renewed' | 'recovered' | 'horizon_complete' | 'blocked' | 'split' | 'refused';

export interface StepResult {
  readonly outcome: StepOutcome;
  readonly position: number;
  readonly graphRevision: number;
  readonly detail: string;
  readonly nodeId?: string;
  readonly milestoneId?: string;
  readonly reason?: string;
}

/** What a worker call returned, kept durably (call marks) until its AttemptFinished is recorded. */
interface KeptWorkerOutcome {
  readonly outcome: 'committed' | 'recorded' | 'failed';
  readonly stdoutSha256: string;
  readonly stderrSha256: string;
  readonly reason?: string;
  readonly decision?: string;
  readonly durationMs?: number;
}

export interface ControllerDeps {
  readonly log: EventLog;
  readonly clock: Clock;
  readonly planner: Planner;
  readonly worker: Worker;
  readonly git: GitPort;
  readonly evidence: EvidenceStore;
  readonly faults: FaultInjector;
  /**
   * Durable marks of planner and worker calls about to start (call-marks.ts): an open intent
   * whose call has no mark never started, so resuming it records no re-invocation (issue 17).
   */
  readonly calls?: CallMarks;
  /** Checked before every append: the controller still holds its lease (throws ConcurrencyError). */
  readonly beforeAppend?: () => void;
  /** Called after every append with the new events (projections catch up here). */
  readonly onAppended?: (events: readonly StoredEvent[], state: BuildState) => void;
  /**
   * A deliberate resume bug, for proving that `longbuild fuzz` can fail (issue 7); set only from
   * LONGBUILD_FUZZ_PLANT_BUG by the session. 'skip-adoption': never adopt an in-doubt outcome.
   */
  readonly plantedBug?: 'skip-adoption';
}

/**
 * The deterministic host (R-17..R-19): folds the log into state, asks the pure core what comes
 * next, and carries out that one controller event as intent → effect → result appends.
 */
export class Controller {
  private state: BuildState = initialBuildState;
  private streamId = '';
  private streamRevision = -1;
  private prevHash: string | null = null;
  /** EffectReinvoked and RefRepaired events so far: out-of-band events an uninterrupted, untampered run never appends. */
  private reinvocations = 0;
  /** Attempt branches are compared with the log once per open; the integration ref every step. */
  private attemptRefsChecked = false;

  private constructor(private readonly deps: ControllerDeps) {}

  /** Open a controller on an initialised build: fold the whole log. */
  static async open(deps: ControllerDeps): Promise<Controller> {
    const c = new Controller(deps);
    await c.catchUp();
    if (!c.state.build) throw new CorruptLogError(1, 'the log holds no BuildInitialized event (run `longbuild init` first)');
    return c;
  }

  get current(): BuildState {
    return this.state;
  }

  /** Fold events appended since we last looked (another controller, or a crashed run). */
  async catchUp(): Promise<void> {
    for (;;) {
      const batch = await this.deps.log.readAll({ from: this.state.position + 1, limit: 5000 });
      if (batch.length === 0) return;
      for (const e of batch) this.fold(e);
    }
  }

  private fold(e: StoredEvent, folded?: BuildState): void {
    if (this.prevHash !== null && e.prevHash !== this.prevHash) {
      throw new CorruptLogError(e.position, 'previous-hash link broken while reading the log (run `longbuild verify`)');
    }
    // Every event the controller folds is re-hashed: an edited event is never silently acted on.
    if (computeEventHash(e) !== e.hash) throw new CorruptLogError(e.position, 'hash mismatch (event edited); run `longbuild verify`');
    if (this.streamId === '') this.streamId = e.streamId;
    if (e.streamId === this.streamId) this.streamRevision = e.revision;
    this.prevHash = e.hash;
    if (e.type === 'EffectReinvoked' || e.type === 'RefRepaired') this.reinvocations += 1;
    this.state = folded ?? evolveBuild(this.state, e);
  }

  private async append(events: readonly DomainEvent[], causationId: string): Promise<void> {
    for (const e of events) this.deps.faults.reach(`before-append:${e.type}`);
    this.deps.beforeAppend?.();
    throwIfInterrupted(); // an interrupted controller records nothing more (interrupt.ts)
    const position = this.state.position + 1;
    const recordedAt = this.now(position);
    // an event that changes the graph records the revision it makes and that graph's SHA-256.
    const { records: graphs, states } = graphRecords(this.state, events, recordedAt);
    const result = await this.deps.log.append(
      this.streamId,
      events.map((e, i) => ({
        type: e.type, data: e.data as JsonValue,
        metadata: { recordedAt, causationId, correlationId: this.state.build!.buildId, ...(graphs[i] ? { graph: { ...graphs[i] } } : {}) },
      })),
      this.streamRevision,
    );
    // The states folded for the graph records are the fold of these events: adopt them (each
    // event still re-hashed and linked) instead of folding again.
    result.events.forEach((e, i) => this.fold(e, e.position === position + i ? states[i] : undefined));
    this.deps.onAppended?.(result.events, this.state);
    for (const e of events) this.deps.faults.reach(`after-append:${e.type}`);
  }

  /**
   * The clock's time for the event at `position`, on a tick that skips recovery-only events: with
   * the logical clock a resumed build then records the same times, commit dates and so commit SHAs
   * and checkpoint bytes as an uninterrupted one, even after an in-doubt re-invocation.
   */
  private now(position: number): string {
    return this.deps.clock.now(position - this.reinvocations);
  }

  private async effect<T>(name: 'planner' | 'worker' | 'verify' | 'promote', run: () => Promise<T>, call?: { key: string; invocation: number }): Promise<T> {
    this.deps.faults.reach(`before-effect:${name}`);
    if (call !== undefined) this.deps.calls?.mark(call.key, call.invocation); // durable before the call starts
    const result = await run();
    this.deps.faults.reach(`after-effect:${name}`);
    return result;
  }

  /**
   * Whether the last recorded invocation of a call was started before a crash (no marks kept:
   * assume it was, as R-18 always did). Only then is it re-invoked (EffectReinvoked); otherwise
   * the recorded invocation is simply made now.
   */
  private callStarted(key: string, invocation: number): boolean {
    return this.deps.calls?.started(key, invocation) ?? true;
  }

  private result(outcome: StepOutcome, detail: string, extra: Partial<StepResult> = {}): StepResult {
    return { outcome, position: this.state.position, graphRevision: this.state.graphRevision, detail, ...extra };
  }

  /** Record an operator's decision (e.g. `retry`): checked against the state first, then one append. */
  async operate(decide: (state: BuildState) => OperatorVerdict, causationId: string): Promise<StepResult> {
    await this.catchUp();
    const verdict = decide(this.state);
    if (!verdict.ok) throw new RefusedTransitionError(verdict.reason);
    await this.append([verdict.event], causationId);
    return this.result('recovered', `${verdict.event.type} recorded`);
  }

  /** Perform exactly one controller event. */
  async advance(): Promise<StepResult> {
    await this.catchUp();
    const repaired = await this.repairRefs();
    if (repaired !== null) return repaired;
    const action = nextAction(this.state);
    switch (action.kind) {
      case 'uninitialized':
        throw new CorruptLogError(1, 'the build is not initialised');
      case 'completed':
        return this.result('horizon_complete', 'the build is complete');
      case 'blocked':
        return this.result('blocked', action.reason, { reason: action.reason });
      case 'plan':
        return this.plan(action);
      case 'checkpoint':
        return this.checkpoint(action.milestoneId);
      case 'compact':
        return this.compact(action.milestoneId);
      case 'settle-job':
        return this.settleJob(jobOf(this.state, action.jobId)!);
      case 'settle-attempt':
        return this.settleAttempt(attemptOf(this.state, action.attemptId)!);
      case 'integrate':
        return this.integrate(action);
      case 'complete': {
        await this.append([{ type: 'BuildCompleted', data: { graphRevision: this.state.graphRevision, integrationHead: this.state.integrationHead! } }], 'complete');
        return this.result('horizon_complete', 'every milestone is checkpointed and no coarse milestone remains');
      }
      case 'dispatch':
        return this.dispatch(action);
      case 'stuck': {
        await this.append([{ type: 'BuildBlocked', data: { reason: action.reason, nodeIds: action.nodeIds, graphRevision: this.state.graphRevision } }], 'stuck');
        return this.result('blocked', action.reason, { reason: action.reason });
      }
      default: {
        const never: never = action;
        throw new Error(`unhandled action ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * the refs must agree with the log before anything else happens. Each disagreement is
   * repaired from the log and recorded (one step); it never blames an attempt.
   */
  private async repairRefs(): Promise<StepResult | null> {
    if (!this.state.build || this.state.integrationHead === null) return null;
    const observed = await this.deps.git.observeRefs(this.state.build.integrationRef, !this.attemptRefsChecked);
    this.attemptRefsChecked = true;
    // Branches a crash left behind after their node was accepted go first (housekeeping, nothing recorded).
    const finished = finishedAttemptBranches(this.state, Object.keys(observed.attempts ?? {}));
    await this.deps.git.deleteAttemptBranches(finished);
    const repairs = decideRefRepairs(this.state, finished.length === 0 ? observed : withoutAttempts(observed, finished));
    if (repairs.length === 0) return null;
    await this.repair(repairs, 'refs');
    const what = repairs.map((r) => `${r.where} ${r.ref}: ${r.found ?? '(missing)'} -> ${r.expected ?? '(deleted)'}`).join('; ');
    return this.result('recovered', `refs disagreed with the log and were repaired (R-33): ${what}`);
  }

  /** Reset refs from the log, then record each repair. */
  private async repair(repairs: readonly RefRepair[], causationId: string): Promise<void> {
    for (const r of repairs) await this.deps.git.repairRef(r);
    await this.append(repairs.map((r) => ({ type: 'RefRepaired' as const, data: { ...r, graphRevision: this.state.graphRevision } })), causationId);
  }

  // ---- planning ---------------------------------------------------------------

  private async plan(action: Extract<NextAction, { kind: 'plan' }>): Promise<StepResult> {
    const { purpose, callId } = action;
    const invocation = (): number => this.state.plannerCalls[callId]?.invocations ?? 1;
    // An answer kept before the crash is the call's result: it is recorded now, the planner not asked again.
    const kept = action.inDoubt ? this.deps.calls?.kept(callId, invocation()) as { answer: unknown } | null | undefined : null;
    if (action.inDoubt && !kept) {
      // The call was made and left no result: make it again, same key. A call the crash
      // came before is simply made now.
      if (this.callStarted(callId, invocation())) await this.append([{ type: 'EffectReinvoked', data: { effect: 'planner', key: callId } }], callId);
    } else if (!action.inDoubt) {
      await this.append([{ type: 'PlannerInvoked', data: { callId, purpose, horizonRevision: this.state.horizon?.revision ?? 0, graphRevision: this.state.graphRevision } }], callId);
    }
    const input = plannerInputOf(this.state, purpose, callId);
    let raw: unknown;
    if (kept) {
      raw = kept.answer;
    } else {
      raw = await this.effect('planner', () => this.deps.planner.propose(input), { key: callId, invocation: invocation() });
      this.keepAnswer(callId, invocation(), raw);
    }
    let proposal: JsonValue = null;
    let proposalSha256 = sha256Hex('null');
    let verdict: { ok: true } | { ok: false; rule: string; reason: string } = { ok: true };
    try {
      proposalSha256 = sha256Hex(canonicalJson(raw));
      proposal = raw as JsonValue;
    } catch (err) {
      verdict = { ok: false, rule: 'R-28', reason: `proposal is not canonical JSON: ${(err as Error).message}` };
    }
    const graphRevision = this.state.graphRevision;
    const returned: DomainEvent = { type: 'PlannerReturned', data: { callId, proposal, proposalSha256, graphRevision } };
    const checked = verdict.ok ? validateProposal(raw, this.state) : verdict;
    if (checked.ok) {
      const plan = (checked as Extract<typeof checked, { plan: unknown }>).plan;
      const current = this.state.horizon;
      if (purpose === 'renew' && current) {
        const renewal = validateRenewal(current, current.revision, plan);
        if (!renewal.ok) return this.reject(returned, callId, renewal.rule, renewal.reason);
      }
      const versions = acceptedVersions(this.state);
      const pins = {
        requestSha256: this.state.build!.requestSha256,
        graphRevision,
        integrationHead: this.state.integrationHead!,
        contracts: versions.contracts,
        foundations: versions.foundations,
        createdAt: this.now(this.state.position + 1),
        plannerRoute: this.deps.planner.route,
      };
      const body = { planSha256: plan.planSha256, detailed: plan.detailed, coarse: plan.coarse, nodes: plan.nodes, pins, callId, graphRevision };
      const horizonId = purpose === 'seal' ? `horizon-${this.state.build!.requestSha256.slice(0, 16)}` : current!.horizonId;
      const conflict = horizonConflict(this.state.horizon, purpose === 'seal' ? 'HorizonSealed' : 'HorizonRenewed', { horizonId, revision: purpose === 'seal' ? 1 : current!.revision + 1, planSha256: plan.planSha256 });
      if (conflict !== null && conflict !== 'same') return this.reject(returned, callId, 'R-15', conflict);
      if (purpose === 'seal') {
        await this.append([returned, { type: 'HorizonSealed', data: { horizonId, revision: 1, ...body } }], callId);
        return this.result('planned', `sealed ${horizonId} r1: detailed ${plan.detailed.map((m) => m.id).join(', ')}; coarse ${plan.coarse.length}`);
      }
      await this.append([returned, { type: 'HorizonRenewed', data: { horizonId: current!.horizonId, revision: current!.revision + 1, fromRevision: current!.revision, ...body } }], callId);
      return this.result('renewed', `renewed to r${current!.revision + 1}: promoted ${plan.detailed.map((m) => m.id).join(', ')}; coarse ${plan.coarse.length}`);
    }
    const refusal = checked as { rule: string; reason: string };
    return this.reject(returned, callId, refusal.rule, refusal.reason);
  }

  /** Keep a planner's answer until it is recorded (only a canonical one: anything else is re-asked after a crash). */
  private keepAnswer(callId: string, invocation: number, raw: unknown): void {
    try {
      canonicalJson(raw);
    } catch {
      return;
    }
    this.deps.calls?.keep(callId, invocation, { answer: raw as JsonValue });
    this.deps.faults.reach('after-keep:planner');
  }

  private async reject(returned: DomainEvent, callId: string, rule: string, reason: string): Promise<StepResult> {
    await this.append([returned, { type: 'ProposalRejected', data: { callId, rule, reason, graphRevision: this.state.graphRevision } }], callId);
    // A round with asks left returns the proposal to the planner with the reasons (next step).
    const next = nextAction(this.state);
    if (next.kind === 'plan') return this.result('refused', `${rule}: ${reason}; asking the planner again (${next.callId})`);
    return this.result('blocked', `${rule}: ${reason}`, { reason: `proposal refused (${rule}): ${reason}${refusedTimes(plannerAsks(this.state))}` });
  }

  // ---- checkpoints --------------------------------------------------------------

  private async checkpoint(milestoneId: string): Promise<StepResult> {
    const verdict = deriveCheckpoint(this.state, milestoneId, this.now(this.state.position + 1));
    if (!verdict.ok) throw new EffectError(`cannot checkpoint '${milestoneId}' (${verdict.rule}): ${verdict.reason}`);
    await this.append([{ type: 'CheckpointWritten', data: { checkpoint: verdict.checkpoint, checkpointSha256: verdict.sha256, graphRevision: this.state.graphRevision } }], `checkpoint.${milestoneId}`);
    return this.result('checkpointed', `checkpoint ${milestoneId} ${verdict.sha256.slice(0, 12)}`, { milestoneId });
  }

  /** R-21..R-23: replace a checkpointed milestone by its summary node (one event, no effect). */
  private async compact(milestoneId: string): Promise<StepResult> {
    const verdict = compactMilestone(this.state, milestoneId, this.now(this.state.position + 1));
    if (!verdict.ok) throw new EffectError(`cannot compact '${milestoneId}' (${verdict.rule}): ${verdict.reason}`);
    if (verdict.replay) return this.result('compacted', `${milestoneId} is already ${verdict.summaryId}`, { milestoneId });
    await this.append([{ type: 'MilestoneCompacted', data: verdict.data }], `compact.${milestoneId}`);
    const d = verdict.data.summary;
    return this.result('compacted', `${milestoneId} -> ${verdict.data.summaryId} (${d.compactedNodeIds.length} nodes, ${d.absorbedSummaryIds.length} summaries absorbed)`, { milestoneId });
  }

  // ---- work ---------------------------------------------------------------------

  private async dispatch(action: Extract<NextAction, { kind: 'dispatch' }>): Promise<StepResult> {
    const { nodeId, attempt, attemptId } = action;
    await this.append([{
      type: 'AttemptStarted',
      data: { attemptId, nodeId, attempt, baseHead: this.state.integrationHead!, branch: ATTEMPT_REF_PREFIX + attemptId, graphRevision: this.state.graphRevision },
    }], attemptId);
    await this.runWorker(attemptOf(this.state, attemptId)!);
    const node = this.state.nodes[nodeId]!;
    // A failed attempt says why, and where its output is (`run` shows the detail of every step).
    const why = (node.state === 'revising' || node.state === 'blocked') && node.lastFailure?.attemptId === attemptId
      ? ` (${node.lastFailure.reason}; \`longbuild evidence ${attemptId}\`)` : '';
    return this.result('dispatched', `${nodeId} attempt ${attempt}: ${node.state}${why}`, { nodeId });
  }

  private async runWorker(a: AttemptRecord): Promise<void> {
    const node = this.state.nodes[a.nodeId]!;
    // A retry reworks the candidate that failed integration, in a clone that starts from its changes.
    const rework = this.deps.worker.reworks === true ? reworkOf(this.state, a) : null;
    const prepared = node.kind === 'writable'
      ? await this.deps.git.prepareAttemptWorktree(a.attemptId, a.branch, a.baseHead, rework ? ATTEMPT_REF_PREFIX + rework.attemptId : undefined)
      : { worktree: '', reworked: false };
    const worktree = prepared.worktree;
    const packet = await withDependencyFiles(
      withFailureEvidence(workPacketOf(this.state, a), node.lastFailure?.evidence, this.deps.evidence, prepared.reworked ? rework?.commit : undefined),
      (commit) => this.deps.git.filesChangedBy(commit),
    );
    const call = { key: packet.idempotencyKey, invocation: a.invocations ?? 1 };
    const out = await this.effect('worker', () => this.deps.worker.implement(packet, worktree), call);
    const stdoutSha256 = this.deps.evidence.put(Buffer.from(out.stdout));
    const stderrSha256 = this.deps.evidence.put(Buffer.from(out.stderr));
    const kept: KeptWorkerOutcome = {
      outcome: out.outcome, stdoutSha256, stderrSha256,
      ...(out.reason !== undefined ? { reason: out.reason } : {}), ...(out.decision !== undefined ? { decision: out.decision } : {}), ...(out.durationMs !== undefined ? { durationMs: out.durationMs } : {}),
    };
    // Kept before the host acts on it: a crash or a full disk from here on finishes the attempt
    // from this outcome and the clone, without calling the worker again.
    this.deps.calls?.keep(call.key, call.invocation, kept as unknown as JsonValue);
    this.deps.faults.reach('after-keep:worker');
    await this.finishWorker(a, kept, worktree);
  }

  /** Record what a worker call returned: commit the clone of a writable node, then AttemptFinished. */
  private async finishWorker(a: AttemptRecord, out: KeptWorkerOutcome, worktree: string): Promise<void> {
    const node = this.state.nodes[a.nodeId]!;
    const { stdoutSha256, stderrSha256 } = out;
    const evidenceSha256 = canonicalSha256({ stdout: stdoutSha256, stderr: stderrSha256 });
    const base = {
      attemptId: a.attemptId, nodeId: a.nodeId, evidenceSha256, stdoutSha256, stderrSha256, ...(out.durationMs !== undefined ? { durationMs: out.durationMs } : {}),
      adopted: false, graphRevision: this.state.graphRevision,
    };
    if (node.kind === 'read-only') {
      const finished = out.outcome === 'failed'
        ? { ...base, outcome: 'failed' as const, reason: out.reason ?? 'worker failed' }
        : { ...base, outcome: 'recorded' as const, ...(out.decision !== undefined ? { decision: out.decision } : {}) };
      await this.append([{ type: 'AttemptFinished', data: finished }], a.attemptId);
      return;
    }
    if (out.outcome === 'failed') {
      await this.deps.git.removeAttemptWorktree(a.attemptId);
      await this.finishWritable(a, null, base, out.reason ?? 'worker failed');
      return;
    }
    // The host commits what the worker left in its clone; nothing of the clone's .git is used.
    const made = await this.deps.git.commitAttempt(a.branch, a.baseHead, worktree, `longbuild: ${a.nodeId} (attempt ${a.attempt})`, a.commitDate);
    await this.deps.git.removeAttemptWorktree(a.attemptId);
    if (made.kind === 'refused') {
      await this.append([{ type: 'AttemptFinished', data: { ...base, outcome: 'failed', reason: `${made.rule}: ${made.reason}` } }], a.attemptId);
      return;
    }
    await this.finishWritable(a, made.kind === 'committed' ? made : null, base, 'worker produced no change');
  }

  private async finishWritable(
    a: AttemptRecord,
    commit: { commit: string; tree: string } | null,
    base: { attemptId: string; nodeId: string; evidenceSha256: string; stdoutSha256?: string; stderrSha256?: string; adopted: boolean; graphRevision: number },
    noCommitReason: string,
  ): Promise<void> {
    if (!commit) {
      await this.append([{ type: 'AttemptFinished', data: { ...base, outcome: 'failed', reason: noCommitReason } }], a.attemptId);
      return;
    }
    const refused = await this.deps.git.candidateProblem(a.baseHead, commit.commit);
    if (refused !== null) {
      await this.append([{ type: 'AttemptFinished', data: { ...base, outcome: 'failed', reason: `${refused.rule}: ${refused.reason}` } }], a.attemptId);
      return;
    }
    await this.append([{ type: 'AttemptFinished', data: { ...base, outcome: 'committed', commit: commit.commit, tree: commit.tree } }], a.attemptId);
  }

  /** an attempt without a result — adopt its commit if the branch has one, else re-invoke. */
  private async settleAttempt(a: AttemptRecord): Promise<StepResult> {
    const node = this.state.nodes[a.nodeId]!;
    if (node.kind === 'writable' && this.deps.plantedBug !== 'skip-adoption') {
      const found = await this.deps.git.findAttemptCommit(a.branch, a.baseHead);
      if (found) {
        await this.deps.git.removeAttemptWorktree(a.attemptId);
        const evidenceSha256 = canonicalSha256({ adoptedCommit: found.commit });
        await this.finishWritable(a, found, { attemptId: a.attemptId, nodeId: a.nodeId, evidenceSha256, adopted: true, graphRevision: this.state.graphRevision }, '');
        return this.result('recovered', `adopted ${a.nodeId}'s commit ${found.commit.slice(0, 12)} from ${a.branch}`, { nodeId: a.nodeId });
      }
    }
    const key = `${this.state.build!.buildId}:${a.attemptId}`;
    const kept = this.deps.calls?.kept(key, a.invocations ?? 1) as KeptWorkerOutcome | null | undefined;
    const clone = kept && node.kind === 'writable' ? await this.deps.git.keptAttemptWorktree(a.attemptId) : '';
    if (kept && clone !== null) {
      // The worker returned and its outcome was kept; the crash (or a full disk) came before the result was recorded.
      await this.finishWorker(a, kept, clone);
      return this.result('recovered', `finished ${a.attemptId} from the worker's kept outcome (it returned before the crash; not called again)`, { nodeId: a.nodeId });
    }
    if (!this.callStarted(key, a.invocations ?? 1)) {
      // The crash came between the intent and the call: nothing ran, so nothing is re-invoked.
      await this.runWorker(attemptOf(this.state, a.attemptId)!);
      return this.result('recovered', `started the worker for ${a.attemptId} (the crash came before it started)`, { nodeId: a.nodeId });
    }
    await this.append([{ type: 'EffectReinvoked', data: { effect: 'worker', key } }], a.attemptId);
    await this.runWorker(attemptOf(this.state, a.attemptId)!);
    return this.result('recovered', `re-invoked the worker for ${a.attemptId} (no outcome was observable)`, { nodeId: a.nodeId });
  }

  // ---- integration ----------------------------------------------------------------

  private async integrate(action: Extract<NextAction, { kind: 'integrate' }>): Promise<StepResult> {
    await this.append([{
      type: 'IntegrationStarted',
      data: { jobId: action.jobId, nodeIds: action.candidates.map((c) => c.nodeId), candidates: action.candidates, baseHead: this.state.integrationHead!, graphRevision: this.state.graphRevision },
    }], action.jobId);
    return this.continueJob(jobOf(this.state, action.jobId)!, false);
  }

  private async settleJob(job: JobRecord): Promise<StepResult> {
    return this.continueJob(job, true);
  }

  private async continueJob(job: JobRecord, recovering: boolean): Promise<StepResult> {
    if (job.status === 'started') {
      // Verification is idempotent: re-running it on the same tree is safe.
      await this.verifyJob(job);
      job = jobOf(this.state, job.jobId)!;
    }
    const v = job.verification!;
    const ids = job.nodeIds.join(', ');
    if (!v.passed && shouldSplit(this.state, job)) {
      // a failed batch blames nobody yet; its halves are integrated next (bisection).
      const data = splitData(this.state, job, v.resultCommit === null ? 'the candidates do not apply together' : `verification failed twice on tree ${v.tree}`);
      await this.append([{ type: 'BatchSplit', data }], job.jobId);
      return this.result('split', `${ids}: batch failed (${data.reason}); split into ${data.halves.map((h) => h.join(', ')).join(' | ')}`, { nodeId: job.nodeIds[0]! });
    }
    if (!v.passed) {
      const reason = v.reason === undefined ? 'verification failed' : `verification failed: ${v.reason}`;
      await this.append([{ type: 'IntegrationFailed', data: { jobId: job.jobId, nodeIds: [...job.nodeIds], reason, evidenceSha256: v.evidenceSha256, graphRevision: this.state.graphRevision } }], job.jobId);
      return this.result('revising', `${ids}: ${reason}; back to revising`, { nodeId: job.nodeIds[0]! });
    }
    const ref = this.state.build!.integrationRef;
    const receipt: Receipt = {
      jobId: job.jobId, nodeIds: [...job.nodeIds], baseHead: job.baseHead,
      candidates: job.candidates.map((c) => ({ nodeId: c.nodeId, commit: c.commit })),
      resultCommit: v.resultCommit!, tree: v.tree!, evidenceSha256s: v.evidence.flatMap((e) => [e.stdoutSha256, e.stderrSha256]),
      cacheHit: v.evidence.length > 0 && v.evidence.every((e) => e.cacheHit),
    };
    const now = await this.deps.git.readRef(ref);
    let adopted = false;
    if (now === v.resultCommit && this.deps.plantedBug !== 'skip-adoption') {
      adopted = true; // the ref already moved before the crash: adopt the promotion
      await this.deps.git.repairRef({ ref, where: 'published', found: null, expected: v.resultCommit! }); // and publish it, idempotently
    } else {
      let promoted = await this.effect('promote', () => this.deps.git.promote(ref, v.resultCommit!, job.baseHead));
      if (!promoted.ok) {
        // Someone else moved the ref: reset it to the logged head, record the stray commit
        // and promote again. Nobody is blamed for it.
        await this.repair([{ ref, where: 'integrator', found: promoted.actual, expected: job.baseHead }], job.jobId);
        promoted = await this.effect('promote', () => this.deps.git.promote(ref, v.resultCommit!, job.baseHead));
        if (!promoted.ok) throw new EffectError(`the integration ref ${ref} keeps moving behind the integrator's back (now at ${promoted.actual ?? 'nothing'}); stop whatever moves it, then run again`);
      }
    }
    await this.append([{ type: 'IntegrationPromoted', data: { jobId: job.jobId, receipt, adopted, graphRevision: this.state.graphRevision } }], job.jobId);
    // The accepted nodes' attempt branches are done with: their commits are in the receipt and on the head.
    await this.deps.git.deleteAttemptBranches(finishedAttemptBranches(this.state, job.nodeIds.flatMap((id) => attemptIdsOfNode(this.state, id))));
    return this.result(recovering ? 'recovered' : 'integrated', `${ids} promoted to ${v.resultCommit!.slice(0, 12)}${adopted ? ' (adopted)' : ''}`, { nodeId: job.nodeIds[0]! });
  }

  private async verifyJob(job: JobRecord): Promise<void> {
    const verify = this.state.build!.verify;
    const out = await this.effect('verify', () => this.deps.git.integrateAndVerify(job.jobId, job.baseHead, job.candidates.map((c) => c.commit), job.startedAt, verify,
      isBatchMode(this.state) ? { retestOnFailure: true } : undefined));
    let data;
    if (!out.ok) {
      data = { jobId: job.jobId, resultCommit: null, tree: null, passed: false, reason: out.reason, evidence: [], evidenceSha256: canonicalSha256({ reason: out.reason }), graphRevision: this.state.graphRevision };
    } else {
      const evidence: CommandEvidence[] = out.verification.commands.map((c) => ({
        argv: [...c.argv], exitCode: c.exitCode, stdoutSha256: this.deps.evidence.put(c.stdout), stderrSha256: this.deps.evidence.put(c.stderr),
        durationMs: Math.round(c.durationMs), cacheHit: c.cacheHit,
      }));
      data = {
        jobId: job.jobId, resultCommit: out.resultCommit, tree: out.tree, passed: out.verification.passed,
        ...(out.verification.reason !== undefined ? { reason: out.verification.reason } : {}),
        evidence, evidenceSha256: canonicalSha256(evidence.map((e) => ({ argv: e.argv, exitCode: e.exitCode, stdout: e.stdoutSha256, stderr: e.stderrSha256 }))),
        graphRevision: this.state.graphRevision,
      };
    }
    await this.append([{ type: 'VerificationFinished', data }], job.jobId);
  }
}

