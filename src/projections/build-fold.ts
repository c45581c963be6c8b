/**
 * How each domain event changes the build state: the fold's one recipe, applied to a draft
 * by `evolveBuild` (immer, tables) and by `evolveBuildInPlace` (a state of the caller's own).
 * The state's shape, its initial value and its readers are in build-state.ts.
 */
import type { Draft } from 'immer';
import type { JsonValue } from '../events/canonical.js';
import type { DomainEvent } from '../events/catalogue.js';
import { CorruptLogError } from '../events/errors.js';
import { checkpointHeadOf, type JobRecord } from './build-records.js';
import type { BuildState } from './build-state.js';
import { shardDraft, shardGet, shardSet, type Sharded } from './sharded.js';
import { applyCompaction } from './summaries.js';
import { foldApprovalRequested, foldHeadReviewed } from './reviews.js';
import { bumpGraph, closeJob, failedNodeState, outbox, resetGraphBump, setNodeState, spent } from './fold-helpers.js';
import { applyHorizon, horizonConflict } from './fold-horizon.js';

export { horizonConflict };

/**
 * Apply one domain event to a draft of the build state: through immer (`evolveBuild`) or to
 * a state of the caller's own (`evolveBuildInPlace`). Synchronous, one event at a time.
 */
export function applyDomainEvent(draft: Draft<BuildState>, event: DomainEvent, recordedAt: string): void {
  resetGraphBump();
  const notifiers = draft.build?.settings.notify;
  if (notifiers !== undefined) outbox(draft, notifiers, event, recordedAt);
  switch (event.type) {
    case 'BuildInitialized': {
      const d = event.data;
      draft.build = {
        buildId: d.buildId, request: d.request as Draft<JsonValue>, requestSha256: d.requestSha256, integrationRef: d.integrationRef,
        baseHead: d.baseHead, verify: d.verify, settings: d.settings, driver: d.driver,
        ...(d.sandbox === undefined ? {} : { sandbox: d.sandbox }),
        ...(d.acceptance === undefined ? {} : { acceptance: d.acceptance }),
        ...(d.tests === undefined ? {} : { tests: d.tests }),
      };
      draft.integrationHead = d.baseHead;
      return;
    }
    case 'PlannerInvoked': {
      const d = event.data;
      draft.plannerCalls[d.callId] = { callId: d.callId, purpose: d.purpose, status: 'invoked', invocations: 1, rejection: null };
      draft.calls.planner += 1;
      return;
    }
    case 'EffectReinvoked': {
      draft.recoveries += 1;
      if (event.data.effect === 'planner') {
        draft.calls.planner += 1;
        const call = draft.plannerCalls[event.data.key];
        if (call) call.invocations += 1;
      } else {
        draft.calls.worker += 1;
        const prefix = `${draft.build?.buildId}:`;
        const attemptId = event.data.key.startsWith(prefix) ? event.data.key.slice(prefix.length) : event.data.key;
        const attempt = shardDraft(draft.attempts, attemptId);
        if (attempt) attempt.invocations = (attempt.invocations ?? 1) + 1;
        spent(draft, attempt?.nodeId ?? null, event.data.usage, true);
        return;
      }
      spent(draft, null, event.data.usage, true);
      return;
    }
    case 'PlannerReturned': {
      const call = draft.plannerCalls[event.data.callId];
      if (call) call.status = event.data.awaitingApproval === true ? 'awaiting' : 'returned';
      if (call && event.data.awaitingApproval === true) call.proposal = event.data.proposal as Draft<JsonValue>;
      if (event.data.reused !== undefined) (draft.reused ??= { planner: 0, worker: 0 }).planner += 1;
      else spent(draft, null, event.data.usage, false);
      return;
    }
    case 'ProposalRejected': {
      const call = draft.plannerCalls[event.data.callId];
      if (call) {
        call.status = 'rejected';
        call.rejection = { rule: event.data.rule, reason: event.data.reason };
        delete call.proposal;
      }
      return;
    }
    case 'ApprovalRequested':
      foldApprovalRequested(draft, event.data, draft.position);
      return;
    case 'HeadReviewed':
      foldHeadReviewed(draft, event.data, draft.position);
      return;
    case 'ProposalApproved': {
      const call = draft.plannerCalls[event.data.callId];
      if (call?.status === 'awaiting') call.status = 'approved';
      return;
    }
    case 'HorizonSealed':
    case 'HorizonRenewed': {
      // a repeat of the horizon in force is a no-op; another plan under its identity (or a
      // revision out of order) is a log no correct host writes.
      const conflict = horizonConflict(draft.horizon, event.type, event.data);
      if (conflict === 'same') return;
      if (conflict !== null) throw new CorruptLogError(draft.position, conflict);
      // An approved proposal is sealed now: its call is done with.
      const approved = draft.plannerCalls[event.data.callId];
      if (approved?.status === 'approved') {
        approved.status = 'returned';
        delete approved.proposal;
      }
      applyHorizon(draft, event.data);
      return;
    }
    case 'AttemptStarted': {
      const d = event.data;
      shardSet(draft.attempts, d.attemptId, {
        attemptId: d.attemptId, nodeId: d.nodeId, attempt: d.attempt, baseHead: d.baseHead, branch: d.branch,
        commitDate: recordedAt, status: 'started', commit: null, adopted: false,
      });
      if (!draft.openAttempts.includes(d.attemptId)) draft.openAttempts.push(d.attemptId);
      const node = draft.nodes[d.nodeId];
      if (node) node.attempts = d.attempt;
      draft.calls.worker += 1;
      setNodeState(draft, d.nodeId, 'running');
      return;
    }
    case 'AttemptFinished': {
      const d = event.data;
      const attempt = shardDraft(draft.attempts, d.attemptId);
      draft.openAttempts = draft.openAttempts.filter((id) => id !== d.attemptId);
      if (attempt) {
        attempt.status = d.outcome;
        attempt.commit = d.commit ?? null;
        attempt.adopted = d.adopted;
        attempt.evidenceSha256 = d.evidenceSha256;
      }
      if (d.reused !== undefined) (draft.reused ??= { planner: 0, worker: 0 }).worker += 1;
      else spent(draft, d.nodeId, d.usage, false);
      if (d.durationMs !== undefined) {
        draft.durations ??= { worker: { calls: 0, ms: 0 }, verify: { jobs: 0, ms: 0 } };
        draft.durations.worker.calls += 1;
        draft.durations.worker.ms += d.durationMs;
      }
      const node = draft.nodes[d.nodeId];
      if (node && d.decision !== undefined) node.decision = d.decision;
      if (node && d.outcome === 'failed') {
        node.lastFailure = { attemptId: d.attemptId, reason: d.reason ?? 'the attempt failed', ...(d.stdoutSha256 !== undefined && d.stderrSha256 !== undefined ? { evidence: [d.stdoutSha256, d.stderrSha256] } : {}) };
      }
      if (d.outcome === 'committed') setNodeState(draft, d.nodeId, 'validating');
      else if (d.outcome === 'recorded') setNodeState(draft, d.nodeId, 'accepted');
      else setNodeState(draft, d.nodeId, failedNodeState(draft, d.nodeId));
      return;
    }
    case 'IntegrationStarted': {
      const d = event.data;
      if (shardGet(draft.jobs as Sharded<JobRecord>, d.jobId) === undefined) {
        draft.jobCount += 1;
        draft.openJobs.push(d.jobId);
        for (const id of d.nodeIds) {
          const node = draft.nodes[id];
          if (node) node.jobIds = [...(node.jobIds ?? []), d.jobId];
        }
      }
      // A job that integrates the next half of a split takes it off the queue.
      const next = draft.batchQueue[0];
      const queued = next !== undefined && next.length === d.nodeIds.length && next.every((id, i) => id === d.nodeIds[i]);
      if (queued) draft.batchQueue.shift();
      shardSet(draft.jobs, d.jobId, {
        jobId: d.jobId, nodeIds: d.nodeIds, candidates: d.candidates, baseHead: d.baseHead, startedAt: recordedAt,
        status: 'started', verification: null, receipt: null, adopted: false,
        ...(d.after !== undefined ? { after: d.after } : {}), ...(queued ? { queued: true as const } : {}),
      });
      return;
    }
    case 'VerificationFinished': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      if (!job) return;
      // A candidate that did not apply ran no verification command (its evidence is the conflict).
      if (d.resultCommit !== null) {
        draft.verifications.commands += d.evidence.length;
        draft.verifications.cacheHits += d.evidence.filter((e) => e.cacheHit).length;
        const ran = d.evidence.filter((e) => !e.cacheHit);
        if (ran.length > 0) {
          draft.durations ??= { worker: { calls: 0, ms: 0 }, verify: { jobs: 0, ms: 0 } };
          draft.durations.verify.jobs += 1;
          draft.durations.verify.ms += Math.round(ran.reduce((t, e) => t + e.durationMs, 0));
        }
      }
      job.status = 'verified';
      job.verification = {
        passed: d.passed, ...(d.reason !== undefined ? { reason: d.reason } : {}), resultCommit: d.resultCommit, tree: d.tree, evidence: d.evidence, evidenceSha256: d.evidenceSha256,
        ...(d.tests !== undefined ? { tests: d.tests } : {}),
      };
      // A verification that measured the head's own tests (there was no record of them) says what they are.
      const base = d.tests?.base;
      if (base?.measured === true && base.head === draft.integrationHead && draft.headTests?.head !== base.head) {
        const { head, measured: _m, tree: _t, ...counts } = base;
        draft.headTests = { head, counts };
      }
      return;
    }
    case 'IntegrationPromoted': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      closeJob(draft, d.jobId);
      if (job) {
        job.status = 'promoted';
        job.receipt = d.receipt;
        job.adopted = d.adopted;
      }
      draft.integrationHead = d.receipt.resultCommit;
      if (draft.build?.tests !== undefined) {
        const t = d.receipt.tests;
        draft.headTests = { head: d.receipt.resultCommit, counts: t === undefined ? null : { passed: t.passed, failed: t.failed, skipped: t.skipped, passingSha256: t.passingSha256 } };
        if (t?.retired !== undefined) draft.retiredTests = (draft.retiredTests ?? 0) + t.retired.length;
      }
      for (const c of d.receipt.candidates) {
        const node = draft.nodes[c.nodeId];
        if (node) {
          node.commit = c.commit;
          node.receiptJobId = d.jobId;
        }
        setNodeState(draft, c.nodeId, 'accepted');
      }
      return;
    }
    case 'IntegrationFailed': {
      const d = event.data;
      const job = shardDraft(draft.jobs, d.jobId);
      closeJob(draft, d.jobId);
      if (job) job.status = 'failed';
      // The failing command's output (the last one run) and each node's candidate, for the rework.
      const failing = job?.verification?.evidence.at(-1);
      for (const id of d.nodeIds) {
        const node = draft.nodes[id];
        const candidate = job?.candidates.find((c) => c.nodeId === id);
        if (node) {
          node.lastFailure = {
            jobId: d.jobId, reason: d.reason,
            ...(failing ? { evidence: [failing.stdoutSha256, failing.stderrSha256] } : {}),
            ...(candidate ? { candidate: { attemptId: candidate.attemptId, commit: candidate.commit } } : {}),
          };
        }
        setNodeState(draft, id, failedNodeState(draft, id));
      }
      return;
    }
    case 'IntegrationDiscarded': {
      // Its nodes stay validating and are integrated again; a split's group goes back in the queue.
      const job = shardDraft(draft.jobs, event.data.jobId);
      closeJob(draft, event.data.jobId);
      if (job) {
        job.status = 'discarded';
        if (job.queued === true) draft.batchQueue.push([...job.nodeIds]);
      }
      return;
    }
    case 'BatchSplit': {
      const job = shardDraft(draft.jobs, event.data.jobId);
      closeJob(draft, event.data.jobId);
      if (job) job.status = 'split';
      draft.batchQueue.unshift(...event.data.halves);
      return;
    }
    case 'CheckpointWritten': {
      const d = event.data;
      // Whole while its window is open (the planner's input reads it, R-16); a head otherwise (decision 0032).
      const open = draft.horizon?.detailed.some((m) => m.id === d.checkpoint.milestoneId) === true;
      draft.checkpoints[d.checkpoint.milestoneId] = { checkpoint: open ? d.checkpoint : checkpointHeadOf(d.checkpoint), sha256: d.checkpointSha256, position: draft.position };
      if (draft.build?.settings.compaction) draft.pendingCompactions.push(d.checkpoint.milestoneId);
      return;
    }
    case 'MilestoneCompacted': {
      if (draft.summaries[event.data.summaryId]) return; // a replayed compaction changes nothing
      applyCompaction(draft, event.data, draft.position);
      bumpGraph(draft);
      return;
    }
    case 'BuildCompleted':
      draft.completed = true;
      return;
    case 'BuildBlocked':
      draft.blocked = { reason: event.data.reason, nodeIds: event.data.nodeIds };
      return;
    case 'RefRepaired':
      draft.recoveries += 1; // the refs were made to agree with the log; nothing else changes
      return;
    case 'NodeRetried': {
      const node = draft.nodes[event.data.nodeId];
      if (!node || node.state !== 'blocked') return; // only a blocked node is retried (the decider says so)
      node.attemptLimit = event.data.attemptLimit;
      setNodeState(draft, event.data.nodeId, 'revising');
      draft.blocked = null;
      return;
    }
    case 'PlanningReopened': {
      const call = draft.plannerCalls[event.data.callId];
      if (!call || call.status !== 'rejected') return; // only a refused round is reopened (the decider says so)
      call.reopened = (call.reopened ?? 0) + event.data.asks;
      if (event.data.reason !== undefined) call.reopenReason = event.data.reason;
      return;
    }
    case 'NotificationSent':
      return; // the outbox (above) settles it
    case 'ProvenanceRecorded':
      // The notes' digests (R-62), recorded as a run ends: no state of the build, and no tick of the
      // logical clock, so a build run in several `run`s records the times (and commits) of one.
      draft.recoveries += 1;
      return;
    case 'BudgetChanged':
      draft.budget = event.data.budget;
      delete draft.budgetPause;
      return;
    case 'BudgetReached': {
      const d = event.data;
      if (d.scope !== 'node') {
        draft.budgetPause = d;
        return;
      }
      const node = draft.nodes[d.nodeId ?? ''];
      if (!node || node.state === 'accepted' || node.state === 'canceled') return;
      node.lastFailure = { reason: d.reason ?? 'its budget is spent' };
      setNodeState(draft, d.nodeId!, 'blocked');
      return;
    }
    case 'NodeCanceled': {
      for (const id of event.data.nodeIds) {
        const node = draft.nodes[id];
        if (node && node.state !== 'accepted') setNodeState(draft, id, 'canceled'); // accepted work stays accepted
      }
      draft.blocked = null;
      return;
    }
    case 'AcceptanceStarted': {
      const d = event.data;
      const a = (draft.acceptance ??= { runs: {}, count: 0, open: null, latest: null, requested: false });
      if (a.runs[d.runId] === undefined) a.count += 1;
      a.runs[d.runId] = { runId: d.runId, milestoneId: d.milestoneId, head: d.head, status: 'started' };
      a.open = d.runId;
      // A run on the head as it is answers an operator's request for one.
      if (d.milestoneId === null) a.requested = false;
      return;
    }
    case 'AcceptanceFinished': {
      const d = event.data;
      const run = draft.acceptance?.runs[d.runId];
      if (!run) return;
      run.status = d.passed ? 'passed' : 'failed';
      run.evidence = d.evidence;
      run.position = draft.position;
      if (d.reason !== undefined) run.reason = d.reason;
      draft.acceptance!.open = null;
      draft.acceptance!.latest = d.runId;
      return;
    }
    case 'AcceptanceRequested': {
      (draft.acceptance ??= { runs: {}, count: 0, open: null, latest: null, requested: false }).requested = true;
      return;
    }
    case 'ForkedFrom': {
      // the build goes on from the parent's state under the driver the fork names. Like a
      // recovery event, it is not part of the work: the logical clock skips it, so an unchanged
      // blueprint fork records the parent's times, commit dates and so commits.
      const d = event.data;
      if (draft.build) {
        Object.assign(draft.build, { driver: d.driver, request: d.request as Draft<JsonValue>, requestSha256: d.requestSha256, verify: d.verify, settings: d.settings });
        if (d.acceptance === undefined) delete draft.build.acceptance;
        else draft.build.acceptance = d.acceptance;
        if (d.tests === undefined) delete draft.build.tests;
        else draft.build.tests = d.tests;
      }
      const { buildId, repo, dir, position, headHash } = d.parent;
      draft.fork = { buildId, repo, dir, position, headHash, at: draft.position };
      draft.recoveries += 1;
      return;
    }
    default: {
      // Exhaustive over the catalogue; an event type this build does not know is ignored.
      const unknown: never = event;
      void unknown;
    }
  }
}

