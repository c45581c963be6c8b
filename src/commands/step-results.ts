/**
 * What the results of a planner call, an acceptance run and a promotion record: the horizon a
 * planner's answer seals or renews (or its refusal), an acceptance's verdict, the promotions'
 * receipts. Pure; part of the step (decide-step.ts settles effects with them).
 */
import { canonicalJson, type JsonValue } from '../events/canonical.js';
import { sha256Hex } from '../events/hash.js';
import type { DataOf, DomainEvent, Receipt } from '../events/catalogue.js';
import { jobOf, type BuildState } from '../projections/build-state.js';
import { horizonConflict } from '../projections/build-fold.js';
import { acceptedVersions } from './checkpoint.js';
import { decideRenewal, decideRepair, validateProposal } from './horizon.js';
import { horizonIdOf } from './call-ids.js';
import { awaitingReason } from './next-action.js';
import { refuse, type Refusal } from './refusal.js';
import type { Decision, EffectRequest, EffectResults, StepContext } from './step-types.js';
import type { PlannerPurpose } from './call-ids.js';
import { runVerdicts } from './job-tests.js';
import { done, evidenceDigest, go } from './step-records.js';

/**
 * A planner's answer (R-13..R-16, R-28): the horizon it seals or renews, or its refusal. A valid
 * one waits for an operator's approval first where the build asks for it; `approved`: it
 * was recorded before and approved since, so only its seal (or a refusal) is recorded now.
 */
export function answered(state: BuildState, ctx: StepContext, callId: string, purpose: PlannerPurpose, call: EffectResults['planner'], approved = false): Decision {
  const raw = call.answer;
  let proposal: JsonValue = null;
  let proposalSha256 = sha256Hex('null');
  let canonical: Refusal | null = null;
  try {
    proposalSha256 = sha256Hex(canonicalJson(raw));
    proposal = raw as JsonValue;
  } catch (err) {
    canonical = refuse('R-28', `proposal is not canonical JSON: ${(err as Error).message}`);
  }
  const graphRevision = state.graphRevision;
  const reuse = {
    ...(call.inputSha256 !== undefined ? { inputSha256: call.inputSha256 } : {}), ...(call.reused !== undefined ? { reused: call.reused } : {}),
    ...(call.usage !== undefined ? { usage: call.usage } : {}),
  };
  const returned: DomainEvent = { type: 'PlannerReturned', data: { callId, proposal, proposalSha256, ...reuse, graphRevision } };
  const recorded = approved ? [] : [returned];
  const reject = (no: Refusal): Decision =>
    go({ kind: 'done', outcome: { kind: 'rejected', rule: no.rule, reason: no.reason } }, [...recorded, { type: 'ProposalRejected', data: { callId, rule: no.rule, reason: no.reason, graphRevision } }], callId);
  if (canonical) return reject(canonical);
  const current = state.horizon;
  const renewing = purpose !== 'seal' && current !== null;
  const verdict = !renewing ? validateProposal(raw, state) : purpose === 'repair' ? decideRepair(state, current.revision, raw) : decideRenewal(state, current.revision, raw);
  if (!verdict.ok) return reject(verdict);
  if (!('plan' in verdict)) return reject(refuse('R-16', 'the renewal repeats the current horizon'));
  const plan = verdict.plan;
  if (!approved && (state.build?.settings.approve ?? []).includes('plan')) {
    // recorded, and nothing sealed until an operator approves it.
    const reason = awaitingReason(renewing ? purpose : 'seal', callId);
    return go(done('awaiting_approval', reason, { reason }), [{ type: 'PlannerReturned', data: { ...(returned.data as DataOf<'PlannerReturned'>), awaitingApproval: true } }], callId);
  }
  const versions = acceptedVersions(state);
  const pins = {
    requestSha256: state.build!.requestSha256, graphRevision, integrationHead: state.integrationHead!,
    contracts: versions.contracts, foundations: versions.foundations, createdAt: ctx.now, plannerRoute: ctx.plannerRoute,
  };
  const body = { planSha256: plan.planSha256, detailed: plan.detailed, coarse: plan.coarse, nodes: plan.nodes, pins, callId, graphRevision };
  const horizonId = renewing ? current.horizonId : horizonIdOf(state.build!.requestSha256);
  const revision = renewing ? current.revision + 1 : 1;
  // a horizon identity names one plan.
  const conflict = horizonConflict(state.horizon, renewing ? 'HorizonRenewed' : 'HorizonSealed', { horizonId, revision, planSha256: plan.planSha256 });
  if (conflict !== null && conflict !== 'same') return reject(refuse('R-15', conflict));
  const ids = plan.detailed.map((m) => m.id).join(', ');
  if (!renewing) return go(done('planned', `sealed ${horizonId} r1: detailed ${ids}; coarse ${plan.coarse.length}`), [...recorded, { type: 'HorizonSealed', data: { horizonId, revision, ...body } }], callId);
  const what = purpose === 'repair' ? `a repair window: ${ids}` : `promoted ${ids}; coarse ${plan.coarse.length}`;
  return go(done('renewed', `renewed to r${revision}: ${what}`),
    [...recorded, { type: 'HorizonRenewed', data: { horizonId, revision, fromRevision: current.revision, ...body } }], callId);
}

/** AcceptanceFinished for a run, from what the commands did. */
export function acceptanceFinished(state: BuildState, r: Extract<EffectRequest, { kind: 'accept' }>, out: EffectResults['accept']): Decision {
  const run = state.acceptance!.runs[r.runId]!;
  const evidence = out.evidence.map((e) => ({ ...e, argv: [...e.argv] }));
  const where = run.milestoneId === null ? `on ${r.head.slice(0, 12)} (asked for)` : `on ${r.head.slice(0, 12)} (milestone ${run.milestoneId})`;
  const detail = out.passed ? `acceptance passed ${where}` : `acceptance FAILED ${where}: ${out.reason ?? 'a command failed'}; \`longbuild evidence ${r.runId}\``;
  const finished: DomainEvent = {
    type: 'AcceptanceFinished',
    data: { runId: r.runId, head: r.head, tree: out.tree, passed: out.passed, ...(out.reason !== undefined ? { reason: out.reason } : {}), evidence, evidenceSha256: evidenceDigest(evidence), graphRevision: state.graphRevision },
  };
  return go(done('acceptance', detail, { ...(run.milestoneId !== null ? { milestoneId: run.milestoneId } : {}), ...(out.passed ? {} : { reason: out.reason ?? 'acceptance failed' }) }), [finished], r.runId);
}

/**
 * IntegrationPromoted with its receipt for each job promoted, in order, in one append;
 * `cacheHit` only when every command replayed from the cache. Each receipt's base is the head
 * before it: the logged head for the first, the result of the one before for the rest.
 */
export function promoted(state: BuildState, jobIds: readonly string[], adopted: boolean, recovering: boolean): Decision {
  let head = state.integrationHead!;
  const jobs = jobIds.map((jobId) => jobOf(state, jobId)!);
  const verdicts = runVerdicts(state, jobs);
  const events: DomainEvent[] = jobs.map((job, i) => {
    const jobId = job.jobId;
    const v = job.verification!;
    const t = v.tests;
    const verdict = verdicts[i]!;
    const retired = verdict.ok ? verdict.retired : [];
    const receipt: Receipt = {
      jobId, nodeIds: [...job.nodeIds], baseHead: head,
      candidates: job.candidates.map((c) => ({ nodeId: c.nodeId, commit: c.commit })),
      resultCommit: v.resultCommit!, tree: v.tree!, evidenceSha256s: v.evidence.flatMap((e) => [e.stdoutSha256, e.stderrSha256]),
      cacheHit: v.evidence.length > 0 && v.evidence.every((e) => e.cacheHit),
      ...(t !== undefined ? { tests: { passed: t.passed, failed: t.failed, skipped: t.skipped, passingSha256: t.passingSha256, ...(retired.length > 0 ? { retired: [...retired] } : {}) } } : {}),
    };
    head = v.resultCommit!;
    return { type: 'IntegrationPromoted', data: { jobId, receipt, adopted, graphRevision: state.graphRevision } };
  });
  return go({ kind: 'after-promotion', jobIds, adopted, recovering }, events, jobIds[0]!);
}
