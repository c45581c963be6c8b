import { compareCodePoints } from '../events/canonical.js';
import { BudgetSchema, formatZodError, type Budget, type DataOf, type DomainEvent } from '../events/catalogue.js';
import type { BuildState } from '../projections/build-state.js';
import { compactedInto } from '../projections/summaries.js';
import { hasAcceptance } from './acceptance.js';
import { budgetOf, nextAction, plannerAsks } from './next-action.js';
import { changedBudget } from './spend.js';
import { describeGate, type HeadGate } from './gates.js';

/** What an operator asked for, and what the host made of it (pure; the CLI records the event). */
export type OperatorVerdict = { ok: true; event: DomainEvent } | { ok: false; reason: string };

/**
 * `longbuild retry NODE [--attempts N]`: only a node that used up its attempts (state blocked) can
 * be retried; it gets N more (default: the build's maxAttempts), so its limit becomes the attempts
 * made plus N.
 */
export function decideRetry(state: BuildState, nodeId: string, attempts: number | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (state.completed) return { ok: false, reason: 'the build is complete' };
  const node = state.nodes[nodeId];
  if (!node) {
    const blocked = Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'blocked');
    return { ok: false, reason: `no node '${nodeId}' in the graph${blocked.length > 0 ? ` (blocked: ${blocked.join(', ')})` : ''}` };
  }
  if (node.state !== 'blocked') return { ok: false, reason: `node '${nodeId}' is ${node.state}, not blocked: only a node that used up its attempts can be retried` };
  const more = attempts ?? state.build.settings.maxAttempts;
  if (!Number.isInteger(more) || more < 1 || more > 100) return { ok: false, reason: `--attempts must be a whole number from 1 to 100, got ${String(more)}` };
  return {
    ok: true,
    event: {
      type: 'NodeRetried',
      data: { nodeId, attempts: more, attemptLimit: node.attempts + more, operator: { action: 'retry', ...(user ? { user } : {}) }, graphRevision: state.graphRevision },
    },
  };
}

/**
 * `longbuild replan [--reason TEXT] [--asks N]`: a build blocked in planning — every ask of
 * a round (the first plan, a renewal, a repair window) refused — gets N more asks of that round
 * (default: the build's planner.asks). The planner is asked again with every refusal so far and
 * the operator's reason. Refused when the build is not blocked in planning.
 */
export function decideReplan(state: BuildState, reason: string | undefined, asks: number | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (state.completed) return { ok: false, reason: 'the build is complete' };
  const next = nextAction(state);
  if (next.kind !== 'blocked' || next.planning === undefined) {
    return { ok: false, reason: `the build is not blocked in planning${next.kind === 'blocked' ? ` (it is blocked: ${next.reason})` : ''}: replan asks the planner again only after every ask of a round was refused` };
  }
  const more = asks ?? plannerAsks(state);
  if (!Number.isInteger(more) || more < 1 || more > 10) return { ok: false, reason: `--asks must be a whole number from 1 to 10, got ${String(more)}` };
  const p = next.planning;
  return {
    ok: true,
    event: {
      type: 'PlanningReopened',
      data: { purpose: p.purpose, horizonRevision: p.horizonRevision, callId: p.callId, asks: more, ...(reason !== undefined ? { reason } : {}), operator: { action: 'replan', ...(user ? { user } : {}) }, graphRevision: state.graphRevision },
    },
  };
}

/** Node states an operator may cancel: not accepted, and nothing of it in flight. */
const CANCELABLE = new Set(['queued', 'revising', 'blocked']);

/**
 * `longbuild cancel NODE [--reason TEXT]`: the node and every node that depends on it, transitively,
 * that is not accepted yet (they could never run without it). Refused for an unknown or accepted
 * node, and while any of them has an attempt or integration in flight (running, validating).
 */
export function decideCancel(state: BuildState, nodeId: string, reason: string | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (state.completed) return { ok: false, reason: 'the build is complete' };
  const node = state.nodes[nodeId];
  const compacted = node ? undefined : compactedInto(state.summaries, nodeId);
  if (compacted !== undefined) return { ok: false, reason: `node '${nodeId}' is accepted (compacted into ${compacted}): accepted work is never canceled` };
  if (!node) return { ok: false, reason: `no node '${nodeId}' in the graph` };
  if (node.summary === true || node.state === 'accepted') return { ok: false, reason: `node '${nodeId}' is accepted: accepted work is never canceled` };
  if (node.state === 'canceled') return { ok: false, reason: `node '${nodeId}' is already canceled` };
  const dependents = new Map<string, string[]>();
  for (const id in state.nodes) for (const dep of state.nodes[id]!.deps) dependents.set(dep, [...(dependents.get(dep) ?? []), id]);
  const all = new Set<string>([nodeId]);
  const stack = [nodeId];
  while (stack.length > 0) {
    for (const d of dependents.get(stack.pop()!) ?? []) {
      if (all.has(d) || state.nodes[d]!.state === 'accepted' || state.nodes[d]!.state === 'canceled') continue;
      all.add(d);
      stack.push(d);
    }
  }
  const busy = [...all].filter((id) => !CANCELABLE.has(state.nodes[id]!.state)).sort(compareCodePoints);
  if (busy.length > 0) {
    return { ok: false, reason: `node '${busy[0]}' is ${state.nodes[busy[0]!]!.state}: its attempt or integration is in flight; cancel it once \`longbuild run\` has settled it` };
  }
  const rest = [...all].filter((id) => id !== nodeId).sort(compareCodePoints);
  return {
    ok: true,
    event: {
      type: 'NodeCanceled',
      data: { nodeIds: [nodeId, ...rest], ...(reason !== undefined ? { reason } : {}), operator: { action: 'cancel', ...(user ? { user } : {}) }, graphRevision: state.graphRevision },
    },
  };
}

/**
 * `longbuild accept [--reason TEXT]`: run the acceptance commands again, on the head as it is
 * (a failure that came from the environment, fixed since). Refused for a build without
 * acceptance commands, a complete one, and while a run is in flight or already asked for.
 */
export function decideAcceptanceRun(state: BuildState, reason: string | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (!hasAcceptance(state)) return { ok: false, reason: 'this build has no acceptance commands (config "acceptance", or a blueprint\'s)' };
  if (state.completed) return { ok: false, reason: 'the build is complete: its acceptance passed' };
  const open = state.acceptance?.open ?? null;
  if (open !== null) return { ok: false, reason: `acceptance run ${open} is in flight: \`longbuild run\` settles it` };
  if (state.acceptance?.requested === true) return { ok: false, reason: 'an acceptance run is already asked for: `longbuild run` makes it' };
  return {
    ok: true,
    event: { type: 'AcceptanceRequested', data: { ...(reason !== undefined ? { reason } : {}), operator: { action: 'accept', ...(user ? { user } : {}) }, graphRevision: state.graphRevision } },
  };
}

/**
 * `longbuild budget [--usd N] [--tokens N] [--per-node-usd N] …` (R-59): the limits given
 * replace those of the budget in force, the others stay. A build paused on its budget goes on at
 * the next `run` when the new limits allow the next call.
 */
export function decideBudget(state: BuildState, change: Budget, reason: string | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (state.completed) return { ok: false, reason: 'the build is complete' };
  const parsed = BudgetSchema.safeParse(change);
  if (!parsed.success) return { ok: false, reason: `invalid budget: ${formatZodError(parsed.error)}` };
  if (Object.keys(parsed.data).length === 0) return { ok: false, reason: 'no limit given' };
  return {
    ok: true,
    event: {
      type: 'BudgetChanged',
      data: { budget: changedBudget(budgetOf(state), parsed.data), ...(reason !== undefined ? { reason } : {}), operator: { action: 'budget', ...(user ? { user } : {}) }, graphRevision: state.graphRevision },
    },
  };
}

/** What awaits an operator (R-60): a proposal, or a gated head (a checkpoint, the final head). */
export type Awaiting =
  | { gate: 'plan'; callId: string; purpose: 'seal' | 'renew' | 'repair'; proposal: unknown }
  | (HeadGate & { gate: 'checkpoint' | 'land'; base: string; rejected: boolean });

/**
 * What awaits an operator's approval (R-60), or why nothing does. A head an operator rejected
 * whose repairs are used up (the build is blocked on it) may still be approved after all.
 */
export function awaitingApproval(state: BuildState): { ok: true; what: Awaiting } | { ok: false; reason: string } {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  const next = nextAction(state);
  if (next.kind === 'awaiting_approval') {
    if (next.gate === 'plan') return { ok: true, what: { gate: 'plan', callId: next.callId, purpose: next.purpose, proposal: state.plannerCalls[next.callId]?.proposal ?? null } };
    return { ok: true, what: headAwaiting(state, next, false) };
  }
  if (next.kind === 'blocked' && next.rejected !== undefined) return { ok: true, what: headAwaiting(state, next.rejected, true) };
  const gated = (state.build.settings.approve ?? []).length > 0;
  return { ok: false, reason: `nothing awaits approval${gated ? '' : ' (this build asks for none: config "approve")'}${next.kind === 'blocked' ? `; the build is blocked: ${next.reason}` : ''}` };
}

/** A gated head with the head it is compared with: the checkpoint before it (a checkpoint gate), else where the build started. */
function headAwaiting(state: BuildState, g: HeadGate, rejected: boolean): Awaiting {
  const at = { gate: g.gate, ...(g.milestoneId !== undefined ? { milestoneId: g.milestoneId } : {}), head: g.head };
  let base = state.build!.baseHead;
  if (g.gate === 'checkpoint') {
    const own = state.checkpoints[g.milestoneId!]?.position ?? Infinity;
    let best = -1;
    for (const c of Object.values(state.checkpoints)) if (c.position < own && c.position > best) { best = c.position; base = c.checkpoint.integrationHead; }
  }
  return { ...at, base, rejected };
}

/** `longbuild approve [--reason TEXT]` (R-60): the proposal is sealed (or renews the horizon) at the next run; a gated head lets the build go on. */
export function decideApprove(state: BuildState, reason: string | undefined, user: string | undefined): OperatorVerdict {
  const a = awaitingApproval(state);
  if (!a.ok) return a;
  const operator = { action: 'approve' as const, ...(user ? { user } : {}) };
  const why = reason !== undefined ? { reason } : {};
  if (a.what.gate === 'plan') return { ok: true, event: { type: 'ProposalApproved', data: { callId: a.what.callId, ...why, operator, graphRevision: state.graphRevision } } };
  return { ok: true, event: { type: 'HeadReviewed', data: { ...reviewed(state, a.what), approved: true, ...why, operator } } };
}

/**
 * `longbuild reject --reason TEXT` (R-60): a proposal awaiting approval is refused like one the
 * host refused — the planner is asked again with the reason in its `feedback`, within the round's
 * asks (then the build blocks in planning, and `replan` asks again). A gated head is repaired: the
 * reason is the planner's feedback at its next call, and once no coarse milestone is left a repair
 * window is planned (like a failed acceptance).
 */
export function decideReject(state: BuildState, reason: string, user: string | undefined): OperatorVerdict {
  const a = awaitingApproval(state);
  if (!a.ok) return a;
  const operator = { action: 'reject' as const, ...(user ? { user } : {}) };
  if (a.what.gate === 'plan') {
    return { ok: true, event: { type: 'ProposalRejected', data: { callId: a.what.callId, rule: 'operator', reason: `rejected by an operator: ${reason}`, operator, graphRevision: state.graphRevision } } };
  }
  if (a.what.rejected) return { ok: false, reason: `${describeGate(a.what)} is rejected already; \`longbuild approve\` accepts it after all` };
  return { ok: true, event: { type: 'HeadReviewed', data: { ...reviewed(state, a.what), approved: false, reason, operator } } };
}

function reviewed(state: BuildState, g: HeadGate): Omit<DataOf<'HeadReviewed'>, 'approved' | 'operator' | 'reason'> {
  return { gate: g.gate, ...(g.milestoneId !== undefined ? { milestoneId: g.milestoneId } : {}), head: g.head, horizonRevision: state.horizon?.revision ?? 0, graphRevision: state.graphRevision };
}
