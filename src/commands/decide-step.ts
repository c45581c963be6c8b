/**
 * The controller's step, pure (R-17, R-18). `decideStep(state, ctx)` says what a step appends and
 * which effect it needs; `settle(state, ctx, request, result)` says what an effect's result
 * appends and what follows. A step is a chain of such decisions: append the decision's events,
 * then run its effect and settle the result, or decide again on the new state (a `Focus`), until
 * it is `done`. The host (src/adapters/controller) only interprets: append, run, fault points.
 *
 * Several chains may be in flight at once (parallel agents): every decision reads the state as
 * folded when it is taken, and every request names what it is about (attempt, job, call), so a
 * result is settled against the log as it stands when it arrives, not as it stood when it left.
 */
import { canonicalSha256 } from '../events/hash.js';
import type { DomainEvent } from '../events/catalogue.js';
import { attemptOf, jobOf, type AttemptRecord, type BuildState, type JobRecord } from '../projections/build-state.js';
import { isBatchMode, shouldSplit, splitData } from './batch.js';
import { deriveCheckpoint } from './checkpoint.js';
import { compactMilestone } from './compaction.js';
import { plannerInputOf, reworkOf, workPacketOf } from './effect-inputs.js';
import { workerCallKey } from './call-ids.js';
import { concurrencyOf, jobsBelow, nextAction, sunkBelow, type NextAction } from './next-action.js';
import { ATTEMPT_REF_PREFIX, attemptIdsOfNode, decideRefRepairs, finishedAttemptBranches, withoutAttempts } from './refs.js';
import {
  isEffect, type Decision, type EffectRequest, type EffectResults, type FinishDraft, type Focus, type KeptWorkerOutcome, type Outcome,
  type StepContext, type VerificationOutcome,
} from './step-types.js';
import { surfaceJudgement, type SurfaceJudgement } from './test-surface.js';
import { runVerdicts, verifyTests } from './job-tests.js';

export * from './step-types.js';
export { attemptMessage, describe } from './step-records.js';
import { acceptanceFinished, answered, promoted } from './step-results.js';
import { attemptMessage, done, evidenceOf, finished, go, hostJudged, reinvoked, verificationFinished } from './step-records.js';

/** The decision a step takes on `state` (a fresh step: `begin`), or on what a previous decision left. */
export function decideStep(state: BuildState, ctx: StepContext, focus: Focus = { kind: 'begin' }): Decision {
  switch (focus.kind) {
    case 'begin':
      // R-33: the refs must agree with the log before anything else happens.
      if (!state.build || state.integrationHead === null) return decideStep(state, ctx, { kind: 'choose' });
      return go({ kind: 'observe-refs', ref: state.build.integrationRef, withAttempts: !ctx.attemptRefsChecked });
    case 'choose':
      return choose(state, ctx, nextAction(state, ctx.running));
    case 'repair-refs':
      if (focus.repairs.length === 0) return decideStep(state, ctx, { kind: 'choose' });
      return go({ kind: 'repair-refs', repairs: focus.repairs, causationId: 'refs', then: done('recovered', `refs disagreed with the log and were repaired (R-33): ${focus.repairs.map((r) => `${r.where} ${r.ref}: ${r.found ?? '(missing)'} -> ${r.expected ?? '(deleted)'}`).join('; ')}`) });
    case 'call-planner': {
      const invocation = state.plannerCalls[focus.callId]?.invocations ?? 1;
      return go({ kind: 'planner', callId: focus.callId, purpose: focus.purpose, invocation, input: plannerInputOf(state, focus.purpose, focus.callId) });
    }
    case 'run-worker':
      return runWorker(state, ctx, attemptOf(state, focus.attemptId)!, focus.report);
    case 'continue-job':
      return continueJob(state, ctx, focus.jobId, focus.recovering);
    case 'after-promotion': {
      // The accepted nodes' attempt branches are done with: their commits are in the receipt and on the head.
      const jobs = focus.jobIds.map((id) => jobOf(state, id)!);
      const nodeIds = jobs.flatMap((j) => j.nodeIds);
      const last = jobs.at(-1)!.verification!;
      const together = jobs.length > 1 ? ` (${focus.jobIds.join(', ')} in one promotion)` : '';
      const report = done(focus.recovering ? 'recovered' : 'integrated', `${nodeIds.join(', ')} promoted to ${last.resultCommit!.slice(0, 12)}${together}${focus.adopted ? ' (adopted)' : ''}`, { nodeId: nodeIds[0]! });
      return go({ kind: 'delete-branches', attemptIds: finishedAttemptBranches(state, nodeIds.flatMap((id) => attemptIdsOfNode(state, id))), then: report });
    }
    case 'done':
    case 'fail':
    case 'wait':
      return go(focus);
  }
}

/** The decision for the next controller event (R-17), by the kind `nextAction` chose. */
function choose(state: BuildState, ctx: StepContext, action: NextAction): Decision {
  switch (action.kind) {
    case 'uninitialized':
      return go({ kind: 'fail', error: 'corrupt', message: 'the build is not initialised' });
    case 'completed':
      return go(done('horizon_complete', 'the build is complete'));
    case 'blocked':
      return go(done('blocked', action.reason, { reason: action.reason }));
    case 'paused':
      return go(done('paused', action.reason, { reason: action.reason }), action.reached !== undefined ? [{ type: 'BudgetReached', data: action.reached }] : [], 'budget');
    case 'awaiting_approval': {
      // R-60: a head gate is recorded once (what an operator is told of); waiting records nothing.
      const request = action.gate !== 'plan' ? action.request : undefined;
      const key = action.gate === 'plan' ? '' : `approval.${action.gate}.${action.milestoneId ?? action.head}`;
      return go(done('awaiting_approval', action.reason, { reason: action.reason }), request !== undefined ? [{ type: 'ApprovalRequested', data: request }] : [], key);
    }
    case 'seal-approved': {
      // R-60: the operator approved the proposal recorded with its PlannerReturned; it is checked again and sealed now.
      const call = state.plannerCalls[action.callId]!;
      return answered(state, ctx, action.callId, action.purpose, { answer: call.proposal ?? null }, true);
    }
    case 'over-budget':
      return go(done('over-budget', `${action.nodeId} is blocked: ${action.reached.reason}`, { nodeId: action.nodeId, reason: action.reached.reason }), [{ type: 'BudgetReached', data: action.reached }], `budget.${action.nodeId}`);
    case 'plan': {
      const { callId, purpose } = action;
      if (action.inDoubt) return go({ kind: 'recall-planner', callId, purpose, invocation: state.plannerCalls[callId]?.invocations ?? 1 });
      const invoked: DomainEvent = { type: 'PlannerInvoked', data: { callId, purpose, horizonRevision: state.horizon?.revision ?? 0, graphRevision: state.graphRevision } };
      return go({ kind: 'call-planner', callId, purpose }, [invoked], callId);
    }
    case 'checkpoint': {
      const verdict = deriveCheckpoint(state, action.milestoneId, ctx.now);
      if (!verdict.ok) return go({ kind: 'fail', error: 'effect', message: `cannot checkpoint '${action.milestoneId}' (${verdict.rule}): ${verdict.reason}` });
      const written: DomainEvent = { type: 'CheckpointWritten', data: { checkpoint: verdict.checkpoint, checkpointSha256: verdict.sha256, graphRevision: state.graphRevision } };
      return go(done('checkpointed', `checkpoint ${action.milestoneId} ${verdict.sha256.slice(0, 12)}`, { milestoneId: action.milestoneId }), [written], `checkpoint.${action.milestoneId}`);
    }
    case 'compact': {
      // R-21..R-23: replace a checkpointed milestone by its summary node (one event, no effect).
      const m = action.milestoneId;
      const verdict = compactMilestone(state, m, ctx.now);
      if (!verdict.ok) return go({ kind: 'fail', error: 'effect', message: `cannot compact '${m}' (${verdict.rule}): ${verdict.reason}` });
      if (verdict.replay) return go(done('compacted', `${m} is already ${verdict.summaryId}`, { milestoneId: m }));
      const d = verdict.data.summary;
      return go(done('compacted', `${m} -> ${verdict.data.summaryId} (${d.compactedNodeIds.length} nodes, ${d.absorbedSummaryIds.length} summaries absorbed)`, { milestoneId: m }),
        [{ type: 'MilestoneCompacted', data: verdict.data }], `compact.${m}`);
    }
    case 'settle-job': {
      // A job left open is continued; its verification may run alongside other calls (several in flight).
      const d = continueJob(state, ctx, action.jobId, true);
      return isEffect(d.next) && d.next.kind === 'verify' ? alongside(state, d, action.jobId) : d;
    }
    case 'settle-attempt': {
      // R-18: an attempt without a result — adopt its commit if the branch has one, else re-invoke.
      const a = attemptOf(state, action.attemptId)!;
      return go({ kind: 'recall-attempt', attemptId: a.attemptId, key: workerCallKey(state.build!.buildId, a.attemptId), invocation: a.invocations ?? 1, writable: state.nodes[a.nodeId]!.kind === 'writable', branch: a.branch, baseHead: a.baseHead });
    }
    case 'integrate': {
      const started: DomainEvent = {
        type: 'IntegrationStarted',
        data: {
          jobId: action.jobId, nodeIds: action.candidates.map((c) => c.nodeId), candidates: action.candidates, baseHead: state.integrationHead!,
          ...(action.after !== undefined ? { after: action.after } : {}), graphRevision: state.graphRevision,
        },
      };
      return alongside(state, go({ kind: 'continue-job', jobId: action.jobId, recovering: false }, [started], action.jobId), action.jobId);
    }
    case 'complete':
      return go(done('horizon_complete', 'every milestone is checkpointed and no coarse milestone remains'),
        [{ type: 'BuildCompleted', data: { graphRevision: state.graphRevision, integrationHead: state.integrationHead! } }], 'complete');
    case 'dispatch': {
      const { nodeId, attempt, attemptId } = action;
      const started: DomainEvent = {
        type: 'AttemptStarted',
        data: { attemptId, nodeId, attempt, baseHead: state.integrationHead!, branch: ATTEMPT_REF_PREFIX + attemptId, graphRevision: state.graphRevision },
      };
      return alongside(state, go({ kind: 'run-worker', attemptId, report: { kind: 'dispatched', nodeId, attempt, attemptId } }, [started], attemptId), attemptId);
    }
    case 'accept': {
      const started: DomainEvent = { type: 'AcceptanceStarted', data: { runId: action.runId, milestoneId: action.milestoneId, head: action.head, graphRevision: state.graphRevision } };
      return alongside(state, go({ kind: 'accept', runId: action.runId, head: action.head, commands: state.build!.acceptance!, recovering: false }, [started], action.runId), action.runId);
    }
    case 'settle-acceptance': {
      // Acceptance is idempotent (a clean workspace, the same tree; its passes cached): run it again.
      const run = state.acceptance!.runs[action.runId]!;
      return alongside(state, go({ kind: 'accept', runId: run.runId, head: run.head, commands: state.build!.acceptance!, recovering: true }), action.runId);
    }
    case 'stuck':
      return go(done('blocked', action.reason, { reason: action.reason }),
        [{ type: 'BuildBlocked', data: { reason: action.reason, nodeIds: action.nodeIds, graphRevision: state.graphRevision } }], 'stuck');
    case 'wait':
      return go({ kind: 'wait' });
  }
}

/** A decision whose chain may run alongside others: only when the build keeps several calls in flight (K = 1 keeps one step at a time). */
const alongside = (state: BuildState, d: Decision, key: string): Decision => (concurrencyOf(state) > 1 ? { ...d, fiber: key } : d);

/** The worker call of an open attempt (its intent already recorded). */
function runWorker(state: BuildState, ctx: StepContext, a: AttemptRecord, report: Outcome): Decision {
  const node = state.nodes[a.nodeId]!;
  const packet = workPacketOf(state, a);
  return go({
    kind: 'worker', attemptId: a.attemptId, key: packet.idempotencyKey, invocation: a.invocations ?? 1, packet, writable: node.kind === 'writable',
    rework: ctx.workerReworks ? reworkOf(state, a) : null, failureEvidence: node.lastFailure?.evidence, report,
  });
}

/** Settle an effect's result: what it appends, and what follows. */
export function settle<K extends keyof EffectResults>(state: BuildState, ctx: StepContext, request: Extract<EffectRequest, { kind: K }>, result: EffectResults[K]): Decision {
  const r = request as EffectRequest;
  switch (r.kind) {
    case 'observe-refs': {
      const observed = result as EffectResults['observe-refs'];
      // Branches a crash left behind after their node was accepted go first (housekeeping, nothing recorded).
      const finished = finishedAttemptBranches(state, Object.keys(observed.attempts ?? {}));
      const repairs = decideRefRepairs(state, finished.length === 0 ? observed : withoutAttempts(observed, finished));
      const then: Focus = { kind: 'repair-refs', repairs };
      return finished.length === 0 ? decideStep(state, ctx, then) : go({ kind: 'delete-branches', attemptIds: finished, then });
    }
    case 'delete-branches':
      return decideStep(state, ctx, r.then);
    case 'repair-refs':
      return go(r.then, r.repairs.map((x) => ({ type: 'RefRepaired' as const, data: { ...x, graphRevision: state.graphRevision } })), r.causationId);
    case 'recall-planner': {
      const recalled = result as EffectResults['recall-planner'];
      // An answer kept before the crash is the call's result: it is recorded now, the planner not asked again.
      if (recalled.kept !== null) return answered(state, ctx, r.callId, r.purpose, recalled.kept as EffectResults['planner']);
      // The call was made and left no result: make it again, same key (R-18). A call the crash came before is simply made now.
      const then: Focus = { kind: 'call-planner', callId: r.callId, purpose: r.purpose };
      return recalled.started ? go(then, [reinvoked('planner', r.callId, recalled)], r.callId) : decideStep(state, ctx, then);
    }
    case 'planner':
      return answered(state, ctx, r.callId, r.purpose, result as EffectResults['planner']);
    case 'recall-attempt':
      return recalled(state, ctx, attemptOf(state, r.attemptId)!, r, result as EffectResults['recall-attempt']);
    case 'worker': {
      const { kept, worktree } = result as EffectResults['worker'];
      return finishAttempt(state, attemptOf(state, r.attemptId)!, kept, worktree, r.report);
    }
    case 'finish-clone': {
      const made = result as EffectResults['finish-clone'];
      if (made.kind === 'refused') return finished(hostJudged(r.draft), { outcome: 'failed', reason: `${made.rule}: ${made.reason}` }, r.report);
      if (made.kind === 'unchanged') return finished(r.commit === null ? r.draft : hostJudged(r.draft), { outcome: 'failed', reason: r.noCommitReason }, r.report);
      return go({ kind: 'check-candidate', base: r.commit!.baseHead, commit: made.commit, tree: made.tree, removeClone: null, draft: r.draft, report: r.report, ...judgedOf(state, r.draft.nodeId) });
    }
    case 'check-candidate': {
      const { problem } = result as EffectResults['check-candidate'];
      if (problem !== null) return finished(hostJudged(r.draft), { outcome: 'failed', reason: `${problem.rule}: ${problem.reason}` }, r.report);
      return finished(r.draft, { outcome: 'committed', commit: r.commit, tree: r.tree }, r.report);
    }
    case 'verify':
      return go({ kind: 'continue-job', jobId: r.jobId, recovering: r.recovering }, [verificationFinished(state, r.jobId, result as VerificationOutcome)], r.jobId);
    case 'accept':
      return acceptanceFinished(state, r, result as EffectResults['accept']);
    case 'read-ref': {
      const found = (result as EffectResults['read-ref']).commit;
      const results = r.jobIds.map((id) => jobOf(state, id)!.verification!.resultCommit!);
      // The ref already moved before the crash, to one of these results: adopt the promotions up
      // to it (R-18), publishing it idempotently; the jobs after it are promoted next.
      const at = found === null ? -1 : results.indexOf(found);
      if (at >= 0) return go({ kind: 'publish', ref: r.ref, commit: found!, jobIds: r.jobIds.slice(0, at + 1), recovering: r.recovering });
      // From the logged head (the first job's base, or the result of the job it was stacked on) to the last result.
      return go({ kind: 'promote', ref: r.ref, commit: results.at(-1)!, expectedOld: state.integrationHead!, tries: 1, jobIds: r.jobIds, recovering: r.recovering });
    }
    case 'publish':
      return promoted(state, r.jobIds, true, r.recovering);
    case 'promote': {
      const p = result as EffectResults['promote'];
      if (p.ok) return promoted(state, r.jobIds, false, r.recovering);
      if (r.tries > 1) {
        return go({ kind: 'fail', error: 'effect', message: `the integration ref ${r.ref} keeps moving behind the integrator's back (now at ${p.actual ?? 'nothing'}); stop whatever moves it, then run again` });
      }
      // Someone else moved the ref (R-29): reset it to the logged head, record the stray commit (R-33), and promote again. Nobody is blamed for it.
      return go({ kind: 'repair-refs', repairs: [{ ref: r.ref, where: 'integrator', found: p.actual, expected: r.expectedOld }], causationId: r.jobIds[0]!, then: { ...r, tries: r.tries + 1 } });
    }
  }
}


/** The surface a node's candidate is checked against and what its plan lets it change (R-49), when the build has a test policy. */
function judgedOf(state: BuildState, nodeId: string): { judged?: SurfaceJudgement } {
  const judged = surfaceJudgement(state.build?.tests?.surface, state.nodes[nodeId]?.changes);
  return judged === undefined ? {} : { judged };
}

/** What a crash left of an open attempt decides how it is settled (R-18). */
function recalled(state: BuildState, ctx: StepContext, a: AttemptRecord, r: Extract<EffectRequest, { kind: 'recall-attempt' }>, found: EffectResults['recall-attempt']): Decision {
  const nodeId = a.nodeId;
  if (r.writable && found.found) {
    // The evidence is the worker's output when its outcome was kept (the host committed it, then
    // crashed): the adopted result is then the uninterrupted one, summaries and all (R-19).
    // Without a kept outcome, what the call used is what it reported in its usage file (R-58).
    const evidence = found.kept ? evidenceOf(found.kept) : { evidenceSha256: canonicalSha256({ adoptedCommit: found.found.commit }), ...(found.lostUsage !== undefined ? { usage: found.lostUsage } : {}) };
    const draft: FinishDraft = { attemptId: a.attemptId, nodeId, ...evidence, adopted: true, graphRevision: state.graphRevision };
    const report: Outcome = { kind: 'report', outcome: 'recovered', detail: `adopted ${nodeId}'s commit ${found.found.commit.slice(0, 12)} from ${a.branch}`, nodeId };
    return go({ kind: 'check-candidate', base: a.baseHead, commit: found.found.commit, tree: found.found.tree, removeClone: a.attemptId, draft, report, ...judgedOf(state, nodeId) });
  }
  // The worker returned and its outcome was kept; the crash (or a full disk) came before the result
  // was recorded. A failure needs no clone (it may already be gone); a success needs the clone to commit.
  if (found.kept && (found.clone !== null || found.kept.outcome === 'failed')) {
    return finishAttempt(state, a, found.kept, found.clone ?? '', { kind: 'report', outcome: 'recovered', detail: `finished ${a.attemptId} from the worker's kept outcome (it returned before the crash; not called again)`, nodeId });
  }
  // A call made now may run alongside the others in flight (several workers): re-invoked calls too.
  if (!found.started) {
    // The crash came between the intent and the call: nothing ran, so nothing is re-invoked.
    return alongside(state, runWorker(state, ctx, a, { kind: 'report', outcome: 'recovered', detail: `started the worker for ${a.attemptId} (the crash came before it started)`, nodeId }), a.attemptId);
  }
  const report: Outcome = { kind: 'report', outcome: 'recovered', detail: `re-invoked the worker for ${a.attemptId} (no outcome was observable)`, nodeId };
  return alongside(state, go({ kind: 'run-worker', attemptId: a.attemptId, report }, [reinvoked('worker', r.key, found)], a.attemptId), a.attemptId);
}


/** Record what a worker call returned: a read-only node's result, or a writable node's clone committed by the host (R-24). */
function finishAttempt(state: BuildState, a: AttemptRecord, out: KeptWorkerOutcome, worktree: string, report: Outcome): Decision {
  const draft: FinishDraft = { attemptId: a.attemptId, nodeId: a.nodeId, ...evidenceOf(out), adopted: false, graphRevision: state.graphRevision };
  if (state.nodes[a.nodeId]!.kind === 'read-only') {
    return finished(draft, out.outcome === 'failed' ? { outcome: 'failed', reason: out.reason ?? 'worker failed' } : { outcome: 'recorded', ...(out.decision !== undefined ? { decision: out.decision } : {}) }, report);
  }
  if (out.outcome === 'failed') return go({ kind: 'finish-clone', attemptId: a.attemptId, draft, noCommitReason: out.reason ?? 'worker failed', report, commit: null });
  // The host commits what the worker left in its clone (R-24); nothing of the clone's .git is used.
  const commit = { branch: a.branch, baseHead: a.baseHead, worktree, message: attemptMessage(state, a), date: a.commitDate };
  return go({ kind: 'finish-clone', attemptId: a.attemptId, draft, noCommitReason: 'worker produced no change', report, commit });
}





/**
 * An integration job's next decision: verify it, then split, fail or promote it (R-24, R-25). A
 * job stacked on others is verified on the tree their promotions make, and promoted or blamed
 * only once they are promoted; when one of them does not promote, it is discarded (nobody blamed).
 */
function continueJob(state: BuildState, ctx: StepContext, jobId: string, recovering: boolean): Decision {
  const job = jobOf(state, jobId)!;
  const ids = job.nodeIds.join(', ');
  // Promoted with the job below it (one promotion for a run of verified jobs) while this chain waited.
  if (job.status === 'promoted') return go(done('recovered', `${ids}: ${jobId} was promoted with the jobs below it`, { nodeId: job.nodeIds[0]! }));
  const below = jobsBelow(state, job);
  const sunk = sunkBelow(below);
  if (sunk !== undefined) {
    const reason = `stacked on ${sunk.jobId}, which ${sunk.status === 'split' ? 'was split' : sunk.status === 'failed' ? 'failed' : 'was discarded'}: integrated again on the head`;
    return go(done('discarded', `${ids}: ${jobId} ${reason}`, { nodeId: job.nodeIds[0]! }),
      [{ type: 'IntegrationDiscarded', data: { jobId, nodeIds: [...job.nodeIds], reason, graphRevision: state.graphRevision } }], jobId);
  }
  if (job.status === 'started') {
    // Verification is idempotent: re-running it on the same tree is safe. On the head as it is
    // now, with the candidates of every job below applied first, each as its own job applies them.
    const tests = verifyTests(state, job);
    return go({
      kind: 'verify', jobId, baseHead: state.integrationHead!, commits: job.candidates.map((c) => c.commit), date: job.startedAt, commands: state.build!.verify,
      retestOnFailure: isBatchMode(state), recovering,
      ...(below.length > 0 ? { layers: below.map((j) => ({ jobId: j.jobId, commits: j.candidates.map((c) => c.commit), date: j.startedAt })) } : {}),
      ...(tests !== undefined ? { tests } : {}),
    });
  }
  const v = job.verification!;
  const awaited = below.at(-1);
  if (awaited !== undefined) {
    // What this verification means depends on the jobs below: decided once they are promoted.
    return go(done('verified', `${ids}: ${jobId} ${v.passed ? 'passed' : 'failed'} on top of ${awaited.jobId}; decided once ${below.length === 1 ? 'it is' : 'they are'} promoted`, { nodeId: job.nodeIds[0]! }));
  }
  // The tests' verdict (R-50, R-51): a passing verification whose tests the ratchet refuses fails like any other.
  const verdict = v.passed ? runVerdicts(state, [job])[0]! : null;
  const refused = verdict !== null && !verdict.ok ? verdict : null;
  if ((!v.passed || refused !== null) && shouldSplit(state, job)) {
    // R-25: a failed batch blames nobody yet; its halves are integrated next (bisection).
    const why = v.resultCommit === null ? 'the candidates do not apply together' : refused !== null ? `${refused.rule}: ${refused.reason}` : `verification failed twice on tree ${v.tree}`;
    const data = splitData(state, job, why);
    return go(done('split', `${ids}: batch failed (${data.reason}); split into ${data.halves.map((h) => h.join(', ')).join(' | ')}`, { nodeId: job.nodeIds[0]! }), [{ type: 'BatchSplit', data }], jobId);
  }
  if (!v.passed || refused !== null) {
    const reason = refused !== null ? `${refused.rule}: ${refused.reason}` : v.reason === undefined ? 'verification failed' : `verification failed: ${v.reason}`;
    return go(done('revising', `${ids}: ${reason}; back to revising`, { nodeId: job.nodeIds[0]! }),
      [{ type: 'IntegrationFailed', data: { jobId, nodeIds: [...job.nodeIds], reason, evidenceSha256: v.evidenceSha256, graphRevision: state.graphRevision } }], jobId);
  }
  return go({ kind: 'read-ref', ref: state.build!.integrationRef, jobIds: promotableRun(state, ctx, job), recovering });
}

/**
 * A passing job on the head, and the run of jobs stacked one on the other above it that are
 * verified and passing (their chains done): promoted together, by one compare-and-set to the
 * last one's result — each still its own receipt (R-24). Just the job when nothing waits on it.
 */
function promotableRun(state: BuildState, ctx: StepContext, job: JobRecord): string[] {
  const run = [job];
  const open = state.openJobs.map((id) => jobOf(state, id)!);
  for (;;) {
    const next = open.find((j) => j.after === run.at(-1)!.jobId);
    if (next === undefined || next.status !== 'verified' || next.verification?.passed !== true || ctx.running?.has(next.jobId) === true) break;
    // A job whose tests the ratchet refuses is not promoted with the run: it is decided on its own (and fails).
    if (!runVerdicts(state, [...run, next]).at(-1)!.ok) break;
    run.push(next);
  }
  return run.map((j) => j.jobId);
}





