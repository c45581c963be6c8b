import { compareCodePoints } from '../events/canonical.js';
import type { Budget, DataOf } from '../events/catalogue.js';
import { describeReached, milestoneSpent, NO_SPEND, reachedLimit } from './spend.js';
import { attemptOf, jobOf, type AcceptanceRun, type BuildState, type JobRecord, type PlannerCallRecord, type ReviewRecord } from '../projections/build-state.js';
import { acceptanceDue, acceptanceRepairsOf, hasAcceptance, latestAcceptance, repairsPlanned } from './acceptance.js';
import { activeMilestone, firstReady } from '../projections/graph.js';
import { graphIndexOf } from '../projections/graph-index.js';
import { batchGroup, isBatchMode } from './batch.js';
import { pendingCompaction } from './compaction.js';
import { acceptanceRunIdOf, attemptIdOf, jobIdOf, plannerAskId } from './call-ids.js';
import type { PlannerPurpose } from './call-ids.js';
import { checkpointGate, describeGate, headGateReason, landGate, unansweredRejection, type HeadGate } from './gates.js';

/** What the controller's next event is about, decided from state alone (R-17). */
export type NextAction =
  | { kind: 'uninitialized' }
  | { kind: 'completed' }
  | { kind: 'blocked'; reason: string; planning?: { purpose: PlannerPurpose; horizonRevision: number; callId: string }; rejected?: HeadGate }
  | { kind: 'plan'; purpose: PlannerPurpose; callId: string; inDoubt: boolean }
  | { kind: 'checkpoint'; milestoneId: string }
  | { kind: 'compact'; milestoneId: string }
  | { kind: 'settle-attempt'; attemptId: string }
  | { kind: 'integrate'; candidates: { nodeId: string; attemptId: string; commit: string }[]; jobId: string; after?: string }
  | { kind: 'settle-job'; jobId: string }
  | { kind: 'complete' }
  | { kind: 'dispatch'; nodeId: string; attempt: number; attemptId: string }
  /** Run the acceptance commands on `head`. */
  | { kind: 'accept'; runId: string; milestoneId: string | null; head: string }
  | { kind: 'settle-acceptance'; runId: string }
  | { kind: 'stuck'; reason: string; nodeIds: string[] }
  /** Nothing to decide until a call in flight returns (several workers). */
  | { kind: 'wait' }
  /** The next call would start past the budget (R-59); `reached`: the BudgetReached to record (absent: already recorded). */
  | { kind: 'paused'; reason: string; reached?: DataOf<'BudgetReached'> }
  /** A valid proposal waits for an operator's approval (R-60): nothing is planned or dispatched until `approve` or `reject`. */
  | { kind: 'awaiting_approval'; gate: 'plan'; purpose: PlannerPurpose; callId: string; reason: string }
  /** A checkpoint or the final head waits for an operator's approval (R-60); `request`: the ApprovalRequested to record. */
  | ({ kind: 'awaiting_approval'; reason: string } & HeadGate)
  /** An approved proposal: seal or renew it now (R-60). */
  | { kind: 'seal-approved'; purpose: PlannerPurpose; callId: string }
  /** The node to dispatch spent its own limit (perNode, R-59): it is blocked, not dispatched. */
  | { kind: 'over-budget'; nodeId: string; reached: DataOf<'BudgetReached'> };

/** No calls in flight: the one-at-a-time controller. */
const NONE: ReadonlySet<string> = new Set();

/** Worker calls a build keeps in flight at once (settings.concurrency; absent: 1). */
export function concurrencyOf(state: Pick<BuildState, 'build'>): number {
  return state.build?.settings.concurrency ?? 1;
}

/** Integration jobs a build keeps open at once, each stacked on the one before it (settings.speculation; absent: 1). */
export function speculationOf(state: Pick<BuildState, 'build'>): number {
  return state.build?.settings.speculation ?? 1;
}

/**
 * The open job a verified job waits for before it is promoted or blamed: the job it is stacked
 * on, while that one is still open (its promotion decides what this one's verification means).
 */
export function awaitedJob(state: Pick<BuildState, 'jobs' | 'openJobs'>, jobId: string): string | null {
  const job = jobOf(state, jobId);
  if (job?.after === undefined || job.status !== 'verified') return null;
  return state.openJobs.includes(job.after) ? job.after : null;
}

/**
 * The jobs a stacked job is verified on top of (speculative integration): the chain of `after`
 * jobs not promoted yet, oldest first. Empty for a job on the head itself.
 */
export function jobsBelow(state: Pick<BuildState, 'jobs'>, job: JobRecord): JobRecord[] {
  const chain: JobRecord[] = [];
  for (let id = job.after; id !== undefined;) {
    const below = jobOf(state, id);
    if (below === undefined || below.status === 'promoted') break; // promoted in order: the head holds the rest
    chain.unshift(below);
    id = below.after;
  }
  return chain;
}

/** The first job below that will never promote (failed, split or discarded): the stacked job must be discarded. */
export function sunkBelow(below: readonly JobRecord[]): JobRecord | undefined {
  return below.find((j) => j.status === 'failed' || j.status === 'split' || j.status === 'discarded');
}

/** The nodes of the jobs still open (they are being integrated). */
export function nodesInOpenJobs(state: Pick<BuildState, 'jobs' | 'openJobs'>): Set<string> {
  const out = new Set<string>();
  for (const id of state.openJobs) for (const n of jobOf(state, id)?.nodeIds ?? []) out.add(n);
  return out;
}

/**
 * The controller's decision order (R-17): seal a horizon if none; write a missing checkpoint;
 * recover in-flight work (R-11); renew when the window is exhausted; complete; else dispatch
 * the top of the ranked ready wave (R-12). `running`: the attempts whose worker calls are in flight
 * in this controller (several workers): they are not in doubt, and while any runs, a
 * free slot takes the next ready node and nothing waits for the whole milestone.
 */
export function nextAction(state: BuildState, running: ReadonlySet<string> = NONE): NextAction {
  if (!state.build) return { kind: 'uninitialized' };
  if (state.completed) return { kind: 'completed' };
  if (state.blocked) return { kind: 'blocked', reason: state.blocked.reason };

  const horizon = state.horizon;
  const revision = horizon?.revision ?? 0;
  if (!horizon) {
    const round = planningRound(state, 'seal', 0);
    if (round.refused) {
      const r = round.refused;
      return { kind: 'blocked', reason: `${r.rejection?.reason ?? 'proposal rejected'}${refusedTimes(round.asks)}${REPLAN}`, planning: { purpose: 'seal', horizonRevision: 0, callId: r.callId } };
    }
    return planOrPause(state, running, { kind: 'plan', purpose: 'seal', callId: round.callId, inDoubt: round.inDoubt }, round.gate);
  }

  for (const m of horizon.detailed) {
    if (state.checkpoints[m.id]) continue;
    // Complete when every node is accepted or canceled by an operator (NodeCanceled), or it has none.
    if (graphIndexOf(state.nodes).milestoneCounts(m.id).open === 0) return { kind: 'checkpoint', milestoneId: m.id };
    break; // checkpoints are written in milestone order
  }

  // Perform any missing compaction (R-17, R-21, R-23): before in-flight recovery and any dispatch.
  const compact = pendingCompaction(state);
  if (compact !== null) return { kind: 'compact', milestoneId: compact };

  // In-flight recovery first (R-11): unfinished jobs, then unfinished attempts, then committed candidates.
  // The fold keeps the open ones, oldest first, so recovery never scans the build's history. A job
  // verified on top of one still open waits for it (speculative integration).
  const openJob = state.openJobs.filter((id) => !running.has(id) && awaitedJob(state, id) === null).sort(compareJobIds)[0];
  if (openJob !== undefined) return { kind: 'settle-job', jobId: openJob };
  // One integration at a time, or (speculation S) up to S, each stacked on the one before it: the
  // next one applies onto the head the jobs ahead of it promote.
  const after = state.openJobs.length > 0 ? [...state.openJobs].sort(compareJobIds).at(-1) : undefined;
  // Nothing is stacked on a job that will be discarded (one below it did not promote).
  const top = after === undefined ? undefined : jobOf(state, after);
  const sinking = top !== undefined && sunkBelow(jobsBelow(state, top)) !== undefined;
  const integrating = state.openJobs.length >= speculationOf(state) || sinking;
  const stacked = after === undefined ? {} : { after };
  const workers = running.size - state.openJobs.filter((id) => running.has(id)).length;
  const openAttempt = state.openAttempts.filter((id) => !running.has(id)).sort(compareCodePoints)[0];
  if (openAttempt !== undefined) return { kind: 'settle-attempt', attemptId: openAttempt };
  // System-level acceptance: an open run is settled, a due one started.
  const openRun = state.acceptance?.open ?? null;
  if (openRun !== null && !running.has(openRun)) return { kind: 'settle-acceptance', runId: openRun };
  const due = acceptanceDue(state);
  if (due !== null) return { kind: 'accept', runId: acceptanceRunIdOf(state), ...due };
  // R-60: nothing goes past a checkpoint an operator is to approve (its acceptance run, if any, first).
  const held = checkpointGate(state);
  if (held !== null) return atHeadGate(running, held);
  const busy = nodesInOpenJobs(state);
  // Batch integration (R-25): a split's next half, or a full (or final) wave, as one job.
  const group = integrating ? null : batchGroup(state, busy);
  if (group !== null) {
    const candidates = group.map((nodeId) => {
      const attemptId = attemptIdOf(nodeId, state.nodes[nodeId]!.attempts);
      return { nodeId, attemptId, commit: attemptOf(state, attemptId)!.commit! };
    });
    return { kind: 'integrate', candidates, jobId: jobIdOf(state), ...stacked };
  }
  const validating = [...graphIndexOf(state.nodes).withState('validating')].filter((id) => !busy.has(id)).sort(compareCodePoints);
  if (validating.length > 0 && !isBatchMode(state) && !integrating) {
    const nodeId = validating[0]!;
    const attemptId = attemptIdOf(nodeId, state.nodes[nodeId]!.attempts);
    const attempt = attemptOf(state, attemptId)!;
    return { kind: 'integrate', candidates: [{ nodeId, attemptId, commit: attempt.commit! }], jobId: jobIdOf(state), ...stacked };
  }

  const active = activeMilestone(state);
  if (active === null) {
    // The next planner call, and the end, go by the acceptance of what was checkpointed.
    if (openRun !== null) return { kind: 'wait' };
    if (horizon.coarse.length > 0) {
      const round = planningRound(state, 'renew', revision);
      if (round.refused) {
        const r = round.refused.rejection;
        return { kind: 'blocked', reason: `${r ? `renewal refused (${r.rule}): ${r.reason}` : 'renewal refused'}${refusedTimes(round.asks)}${REPLAN}`, planning: { purpose: 'renew', horizonRevision: revision, callId: round.refused.callId } };
      }
      return planOrPause(state, running, { kind: 'plan', purpose: 'renew', callId: round.callId, inDoubt: round.inDoubt }, round.gate);
    }
    // A head an operator rejected (R-60), or a failed acceptance, is repaired before the build completes.
    const rejected = unansweredRejection(state);
    const last = latestAcceptance(state);
    const failure = rejected !== null ? rejectionFailure(rejected) : hasAcceptance(state) && last !== null && last.status === 'failed' ? acceptanceFailure(last) : null;
    if (failure !== null) {
      const next = repairOrBlock(state, failure, revision);
      return next.kind === 'plan' ? planOrPause(state, running, next, planningRound(state, 'repair', revision).gate) : next;
    }
    const landing = landGate(state);
    if (landing !== null) return atHeadGate(running, landing);
    return { kind: 'complete' };
  }

  const revising = [...graphIndexOf(state.nodes).withState('revising')]
    .filter((id) => state.nodes[id]!.milestone === active)
    .sort(compareCodePoints);
  if (workers >= concurrencyOf(state)) return { kind: 'wait' };
  const next = revising[0] ?? firstReady(state);
  if (next === undefined && running.size > 0) return { kind: 'wait' };
  if (next !== undefined) {
    // R-59: no new call starts past the budget; a node that alone spent its own limit is blocked.
    const over = overBudget(state, state.nodes[next]!.milestone);
    if (over !== null) return paused(state, running, over);
    const own = reachedLimit(state.nodes[next]!.spent ?? NO_SPEND, budgetOf(state)?.perNode);
    if (own !== null) {
      const reason = `${describeReached(own, "the node's")} (perNode); \`longbuild budget --per-node-usd N\` (or --per-node-tokens) and \`longbuild retry ${next}\` let it go on`;
      return { kind: 'over-budget', nodeId: next, reached: { scope: 'node', nodeId: next, ...own, reason, graphRevision: state.graphRevision } };
    }
    const attempt = state.nodes[next]!.attempts + 1;
    return { kind: 'dispatch', nodeId: next, attempt, attemptId: attemptIdOf(next, attempt) };
  }
  const stuck = Object.keys(state.nodes)
    .filter((id) => state.nodes[id]!.milestone === active && state.nodes[id]!.state !== 'accepted' && state.nodes[id]!.state !== 'canceled')
    .sort(compareCodePoints);
  return { kind: 'stuck', reason: `milestone '${active}' cannot progress: ${stuck.map((id) => stuckNode(state, id)).join(', ')}`, nodeIds: stuck };
}

/** The budget in force (R-59): the last one an operator set, else the one the build started with. */
export function budgetOf(state: Pick<BuildState, 'budget' | 'build'>): Budget | undefined {
  return state.budget ?? state.build?.settings.budget;
}

/** The build's or (for a worker call) the milestone's limit the spend has reached, or null. */
export function overBudget(state: BuildState, milestoneId: string | null): DataOf<'BudgetReached'> | null {
  const budget = budgetOf(state);
  if (budget === undefined) return null;
  const build = reachedLimit(state.spend?.total ?? NO_SPEND, budget);
  if (build !== null) return { scope: 'build', ...build, reason: describeReached(build, "the build's"), graphRevision: state.graphRevision };
  const mine = milestoneId === null ? null : reachedLimit(milestoneSpent(state.spend, milestoneId), budget.perMilestone);
  if (mine !== null) return { scope: 'milestone', milestoneId: milestoneId!, ...mine, reason: describeReached(mine, `milestone '${milestoneId}'s`), graphRevision: state.graphRevision };
  return null;
}

/**
 * A planner call, unless it would start past the build's budget (a call in doubt is settled
 * whatever the budget); a proposal awaiting an operator, or approved by one, instead (R-60).
 */
function planOrPause(state: BuildState, running: ReadonlySet<string>, plan: Extract<NextAction, { kind: 'plan' }>, gate?: 'awaiting' | 'approved'): NextAction {
  if (gate === 'approved') return { kind: 'seal-approved', purpose: plan.purpose, callId: plan.callId };
  if (gate === 'awaiting') {
    if (running.size > 0) return { kind: 'wait' };
    return { kind: 'awaiting_approval', gate: 'plan', purpose: plan.purpose, callId: plan.callId, reason: awaitingReason(plan.purpose, plan.callId) };
  }
  if (plan.inDoubt) return plan;
  const over = overBudget(state, null);
  return over === null ? plan : paused(state, running, over);
}

/** What a proposal awaiting approval is said to be waiting for (R-60), and what to do. */
export function awaitingReason(purpose: PlannerPurpose, callId: string): string {
  const what = purpose === 'seal' ? 'the first plan' : purpose === 'renew' ? 'the renewal' : 'the repair window';
  return `${what} (${callId}) awaits your approval: \`longbuild approve --show\` prints it; \`longbuild approve [--reason TEXT]\` seals it, \`longbuild reject --reason TEXT\` sends it back to the planner`;
}

/** Paused on `reached` once the calls in flight have returned; recorded once per pause. */
function paused(state: BuildState, running: ReadonlySet<string>, reached: DataOf<'BudgetReached'>): NextAction {
  if (running.size > 0) return { kind: 'wait' };
  const raise = reached.unit === 'usd' ? (reached.scope === 'build' ? '--usd N' : '--per-milestone-usd N') : (reached.scope === 'build' ? '--tokens N' : '--per-milestone-tokens N');
  const reason = `${reached.reason}; \`longbuild budget ${raise}\` raises it, then \`longbuild run\` goes on`;
  const p = state.budgetPause;
  const recorded = p !== undefined && p.scope === reached.scope && p.unit === reached.unit && p.limit === reached.limit && p.milestoneId === reached.milestoneId;
  return { kind: 'paused', reason, ...(recorded ? {} : { reached }) };
}

/** The build waits at a head gate (R-60) once the calls in flight have returned. */
function atHeadGate(running: ReadonlySet<string>, gate: HeadGate): NextAction {
  if (running.size > 0) return { kind: 'wait' };
  return { kind: 'awaiting_approval', reason: headGateReason(gate), ...gate };
}

/** What the build's result failed, what to look at and do, and (a rejection) the head an operator may approve after all. */
interface ResultFailure {
  readonly failed: string;
  readonly next: string;
  readonly rejected?: HeadGate;
}

function acceptanceFailure(run: AcceptanceRun): ResultFailure {
  return {
    failed: `acceptance failed on ${run.head.slice(0, 12)}${run.milestoneId !== null ? ` (milestone '${run.milestoneId}')` : ''}: ${run.reason ?? 'a command failed'}`,
    next: `see \`longbuild evidence ${run.runId}\`; \`longbuild accept\` runs it again`,
  };
}

function rejectionFailure(r: ReviewRecord): ResultFailure {
  const gate: HeadGate = { gate: r.gate, ...(r.milestoneId !== undefined ? { milestoneId: r.milestoneId } : {}), head: r.head };
  return {
    failed: `${describeGate(gate)} was rejected${r.user !== undefined ? ` by ${r.user}` : ''}: ${r.reason ?? 'no reason given'}`,
    next: '`longbuild approve` accepts it after all',
    rejected: gate,
  };
}

/**
 * Acceptance failed on what would be the build's result, or an operator rejected a gated head
 * (R-60): the planner is asked for a repair window while repair rounds remain (each round asks
 * `planner.asks` times); else the build is blocked, saying why and how to go on.
 */
function repairOrBlock(state: BuildState, failure: ResultFailure, revision: number): NextAction {
  const { failed, next } = failure;
  const rejected = failure.rejected !== undefined ? { rejected: failure.rejected } : {};
  const max = acceptanceRepairsOf(state);
  const used = repairsPlanned(state);
  if (used >= max) return { kind: 'blocked', reason: `${failed}; ${max === 0 ? 'no repair window is allowed (acceptanceRepairs 0)' : `${used} repair window${used === 1 ? '' : 's'} did not fix it`}; ${next}`, ...rejected };
  const round = planningRound(state, 'repair', revision);
  if (round.refused) {
    const r = round.refused.rejection;
    return { kind: 'blocked', reason: `${failed}; the repair proposal was refused (${r?.rule ?? '?'}): ${r?.reason ?? ''}${refusedTimes(round.asks)}; ${next}${REPLAN}`, planning: { purpose: 'repair', horizonRevision: revision, callId: round.refused.callId }, ...rejected };
  }
  return { kind: 'plan', purpose: 'repair', callId: round.callId, inDoubt: round.inDoubt };
}

/** What a blocked reason adds when the planner was asked more than once (empty for one ask). */
export function refusedTimes(asks: number): string {
  return asks > 1 ? ` (refused ${asks} times; the planner was asked again with the reasons each time)` : '';
}

/** What a build blocked in planning is told it can do. */
export const REPLAN = '; `longbuild replan [--reason TEXT]` asks the planner again';

/** How many times a round may ask (settings.plannerAsks; builds from before re-asks: once). */
export function plannerAsks(state: Pick<BuildState, 'build'>): number {
  return state.build?.settings.plannerAsks ?? 1;
}

/**
 * Where a planning round stands: the ask to make (or settle, when in doubt), or — every ask refused
 * — the last refusal. Asks are taken in order; only a refused one moves the round on.
 */
export function planningRound(state: BuildState, purpose: PlannerPurpose, horizonRevision: number):
  { callId: string; inDoubt: boolean; asks: number; refused?: undefined; gate?: 'awaiting' | 'approved' } | { asks: number; refused: PlannerCallRecord; gate?: undefined } {
  // An operator's replan adds asks after the refused one it reopened (PlanningReopened).
  let asks = plannerAsks(state);
  let last: PlannerCallRecord | undefined;
  for (let k = 1; k <= asks; k++) {
    const callId = plannerAskId(purpose, horizonRevision, k);
    const call = state.plannerCalls[callId];
    if (call?.status === 'awaiting' || call?.status === 'approved') return { callId, inDoubt: false, asks, gate: call.status };
    if (call?.status !== 'rejected') return { callId, inDoubt: call?.status === 'invoked', asks };
    asks += call.reopened ?? 0;
    last = call;
  }
  return { asks, refused: last! };
}

/** The refusals of the asks before `callId` in its round, oldest first (what the planner is told). */
export function earlierRefusals(state: BuildState, purpose: PlannerPurpose, horizonRevision: number, callId: string): { callId: string; rule: string; reason: string }[] {
  const out: { callId: string; rule: string; reason: string }[] = [];
  for (let k = 1; ; k++) {
    const id = plannerAskId(purpose, horizonRevision, k);
    const call = state.plannerCalls[id];
    if (id === callId || call === undefined) break;
    const r = call.rejection;
    if (r) out.push({ callId: id, rule: r.rule, reason: r.reason });
    // The operator's reason for asking again is said to the planner like a refusal it must answer.
    if (call.reopenReason !== undefined) out.push({ callId: id, rule: 'operator', reason: `asked again by an operator: ${call.reopenReason}` });
  }
  return out;
}

/** A node that holds its milestone up, with why its last attempt failed and where its output is. */
function stuckNode(state: BuildState, id: string): string {
  const n = state.nodes[id]!;
  if (n.state !== 'blocked' || !n.lastFailure) return `${id} is ${n.state}`;
  const f = n.lastFailure;
  return `${id} is blocked after ${n.attempts} attempt${n.attempts === 1 ? '' : 's'} (last: ${f.reason}; see \`longbuild evidence ${f.attemptId ?? f.jobId}\`, then \`longbuild retry ${id}\` or \`longbuild cancel ${id}\`)`;
}

/** Job ids in the order they were started (job-2 before job-10). */
export function compareJobIds(a: string, b: string): number {
  return Number(a.slice(4)) - Number(b.slice(4)) || compareCodePoints(a, b);
}
