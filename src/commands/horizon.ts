import { z } from 'zod';
import { canonicalSha256 } from '../events/hash.js';
import { compareCodePoints } from '../events/canonical.js';
import { formatZodError, MilestoneRefSchema, PlannedNodeSchema, type MilestoneRef, type PlannedNode } from '../events/catalogue.js';
import type { BuildState } from '../projections/build-state.js';
import { summaryLookups } from '../projections/summaries.js';
import { refuse, type Refusal } from './refusal.js';
import { RESERVED_IDS, reservedIdReason, SUMMARY_ID_PREFIX, summaryPrefixReason } from '../events/ids.js';

/** A proposal as a planner must shape it (parsed where its bytes enter, R-28). */
export const ProposalSchema = z.strictObject({
  detailed: z.array(MilestoneRefSchema.extend({ nodes: z.array(PlannedNodeSchema.omit({ milestone: true })) })),
  coarse: z.array(MilestoneRefSchema),
});
export type Proposal = z.infer<typeof ProposalSchema>;

/** What a planner may propose (R-55): a proposal without acceptance or decisions, which only a blueprint may carry. */
export const PlannerProposalSchema = z.strictObject({
  detailed: z.array(MilestoneRefSchema.extend({ nodes: z.array(PlannedNodeSchema.omit({ milestone: true, accepted: true, decision: true })) })),
  coarse: z.array(MilestoneRefSchema),
});

/** A validated plan: milestones and nodes with their milestone filled in. */
export interface ValidPlan {
  readonly detailed: MilestoneRef[];
  readonly coarse: MilestoneRef[];
  readonly nodes: PlannedNode[];
  readonly planSha256: string;
}

export type PlanVerdict = { ok: true; plan: ValidPlan } | Refusal;

export const MAX_COARSE = 12;


/** Why the proposal names a reserved id (a milestone, then each detailed node and its dependencies), or undefined. */
function reservedIdIn(milestoneIds: readonly string[], detailed: Proposal['detailed']): string | undefined {
  for (const id of milestoneIds) if (RESERVED_IDS.has(id)) return `milestone ${reservedIdReason(id)}`;
  for (const m of detailed) {
    for (const n of m.nodes) {
      if (RESERVED_IDS.has(n.id)) return `node ${reservedIdReason(n.id)}`;
      for (const d of n.deps) if (RESERVED_IDS.has(d)) return `dependency ${reservedIdReason(d)}`;
    }
  }
  return undefined;
}

/**
 * Validate a planner's proposal against R-13 and the current graph: 1–2 detailed milestones,
 * ≤ 12 coarse, unique ids, each node in exactly one milestone, no unfinished dependency omitted
 * or placed in a later milestone than its consumer, no cycle.
 */
export function validateProposal(raw: unknown, state: Pick<BuildState, 'nodes' | 'checkpoints'> & Partial<Pick<BuildState, 'summaries' | 'build'>>): PlanVerdict {
  const note = hostNote(raw);
  if (note !== null) return refuse(note.rule, note.reason);
  const parsed = ProposalSchema.safeParse(raw);
  if (!parsed.success) return refuse('R-28', `proposal is malformed: ${formatZodError(parsed.error)}`);
  const p = parsed.data;
  if (p.detailed.length < 1 || p.detailed.length > 2) {
    return refuse('R-13', `a horizon holds one or two detailed milestones, the proposal has ${p.detailed.length}${p.detailed.length ? ` (${p.detailed.map((m) => m.id).join(', ')})` : ''}`);
  }
  if (p.coarse.length > MAX_COARSE) {
    return refuse('R-13', `a horizon holds at most ${MAX_COARSE} coarse milestones, the proposal has ${p.coarse.length} (${p.coarse.slice(MAX_COARSE).map((m) => m.id).join(', ')} over the limit)`);
  }
  // R-55: the host holds the planner to the build's own windows, and to planning only.
  const settings = state.build?.settings;
  if (settings !== undefined && p.detailed.length > settings.detailedWindow) {
    return refuse('R-55', `this build's detailedWindow is ${settings.detailedWindow}, the proposal has ${p.detailed.length} detailed milestones (${p.detailed.map((m) => m.id).join(', ')})`);
  }
  if (settings !== undefined && p.coarse.length > settings.coarseWindow) {
    return refuse('R-55', `this build's coarseWindow is ${settings.coarseWindow}, the proposal has ${p.coarse.length} coarse milestones (${p.coarse.slice(settings.coarseWindow).map((m) => m.id).join(', ')} over it)`);
  }
  // Only the user's own blueprint may start a node accepted, with its decision: a planner decides nothing.
  if (state.build?.driver.kind === 'command') {
    for (const m of p.detailed) {
      for (const n of m.nodes) {
        const decided = (['accepted', 'decision'] as const).filter((f) => n[f] !== undefined);
        if (decided.length > 0) return refuse('R-55', `node '${n.id}' carries ${decided.map((f) => `'${f}'`).join(' and ')}: a planner proposes work, the host decides acceptance and records decisions; leave ${decided.length > 1 ? 'them' : 'it'} out`);
      }
    }
  }
  const milestoneIds = [...p.detailed, ...p.coarse].map((m) => m.id);
  const reserved = reservedIdIn(milestoneIds, p.detailed);
  if (reserved) return refuse('R-8', reserved);
  const dupMilestone = firstDuplicate(milestoneIds);
  if (dupMilestone) return refuse('R-13', `milestone '${dupMilestone}' appears more than once in the proposal`);
  const done = milestoneIds.find((id) => state.checkpoints[id]);
  if (done) return refuse('R-13', `milestone '${done}' is already checkpointed and cannot be planned again`);

  const milestoneIndex = new Map<string, number>();
  p.detailed.forEach((m, i) => milestoneIndex.set(m.id, i));
  const nodes: PlannedNode[] = [];
  const seen = new Map<string, string>();
  const summaries = state.summaries ? summaryLookups(state.summaries) : undefined;
  for (const m of p.detailed) {
    for (const n of m.nodes) {
      const other = seen.get(n.id);
      if (other !== undefined) {
        return refuse('R-13', `node '${n.id}' belongs to more than one milestone ('${other}' and '${m.id}')`);
      }
      if (state.nodes[n.id]) return refuse('R-13', `node '${n.id}' already exists in the graph (milestone '${state.nodes[n.id]!.milestone}')`);
      const compacted = summaries?.compactedInto(n.id);
      if (compacted !== undefined) return refuse('R-13', `node '${n.id}' already exists: it was accepted and compacted into ${compacted}`);
      if (n.id.startsWith(SUMMARY_ID_PREFIX)) return refuse('R-8', `node ${summaryPrefixReason(n.id)}`);
      if (n.accepted && n.kind !== 'read-only') return refuse('R-8', `node '${n.id}' is writable and cannot start accepted: a writable node is accepted only with an integration receipt`);
      if (n.deps.includes(n.id)) return refuse('R-13', `node '${n.id}' depends on itself`);
      seen.set(n.id, m.id);
      nodes.push({ ...n, deps: [...n.deps], milestone: m.id });
    }
  }
  for (const n of nodes) {
    for (const dep of n.deps) {
      const existing = state.nodes[dep];
      if (existing?.state === 'canceled') return refuse('R-13', `node '${n.id}' depends on '${dep}', which an operator canceled`);
      if (existing) continue; // already in the graph: accepted or carried from an earlier window
      if (summaries?.liveSummaryOf(dep) !== undefined) continue; // accepted, compacted (R-21)
      const depMilestone = seen.get(dep);
      if (depMilestone === undefined) {
        const coarse = p.coarse.find((c) => c.id === dep);
        return refuse('R-13', `node '${n.id}' depends on '${dep}', which is neither in the graph nor in the detailed milestones of the proposal${coarse ? '' : ' (an unfinished dependency cannot be omitted)'}`);
      }
      if (milestoneIndex.get(depMilestone)! > milestoneIndex.get(n.milestone)!) {
        return refuse('R-13', `node '${n.id}' (milestone '${n.milestone}') depends on '${dep}' in the later milestone '${depMilestone}'`);
      }
    }
  }
  const cycle = findCycle(nodes);
  if (cycle) return refuse('R-13', `dependency cycle: ${cycle.join(' -> ')}`);
  const plan = planOf(p);
  return { ok: true, plan: { ...plan, planSha256: canonicalSha256(plan) } };
}

/**
 * A note the host put in place of an answer it would not read (command-planner.ts): not JSON
 * (R-28), or JSON refused by R-55 (a key named twice, nesting past the bound). Null otherwise.
 */
function hostNote(raw: unknown): { rule: string; reason: string } | null {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const { invalid, rule } = raw as { invalid?: unknown; rule?: unknown };
  if (typeof invalid !== 'string') return null;
  return { rule: rule === 'R-55' ? 'R-55' : 'R-28', reason: invalid };
}

/** The plan a parsed proposal describes: milestone refs, and nodes with their milestone filled in. */
function planOf(p: Proposal): Omit<ValidPlan, 'planSha256'> {
  const nodes = p.detailed.flatMap((m) => m.nodes.map((n) => ({ ...n, deps: [...n.deps], milestone: m.id })));
  const detailed = p.detailed.map(({ nodes: _nodes, ...ref }) => ref);
  return { detailed, coarse: p.coarse, nodes };
}

export type RenewalDecision =
  | { ok: true; noop: false; plan: ValidPlan }
  | { ok: true; noop: true }
  | Refusal;

/**
 * R-16 as one decision over the folded state: an exact replay of the renewal that produced the
 * current horizon (from `expectedRevision`, same plan) is a no-op; otherwise the proposal must be a
 * valid plan (R-13) and an exact prefix promotion against the expected revision (compare-and-set).
 */
export function decideRenewal(
  state: Pick<BuildState, 'horizon' | 'nodes' | 'checkpoints'> & Partial<Pick<BuildState, 'summaries'>>,
  expectedRevision: number,
  raw: unknown,
): RenewalDecision {
  const current = state.horizon;
  if (!current) return { ok: false, rule: 'R-16', reason: 'no sealed horizon to renew' };
  if (replaysHorizon(current, expectedRevision, raw)) return { ok: true, noop: true };
  const verdict = validateProposal(raw, state);
  if (!verdict.ok) return verdict;
  const renewal = validateRenewal(current, expectedRevision, verdict.plan);
  return renewal.ok ? { ok: true, noop: false, plan: verdict.plan } : renewal;
}

/** True when `raw` is the plan that made the horizon in force from `expectedRevision`: an exact replay (R-15, R-16). */
function replaysHorizon(current: { readonly revision: number; readonly planSha256: string }, expectedRevision: number, raw: unknown): boolean {
  const parsed = ProposalSchema.safeParse(raw);
  return parsed.success && current.revision === expectedRevision + 1 && canonicalSha256(planOf(parsed.data)) === current.planSha256;
}

/**
 * A repair window: asked for when acceptance fails on what would be the build's result
 * and no coarse milestone is left. Like any plan it holds one or two new detailed milestones
 * (R-13); it adds no coarse work, and it renews the horizon in force (compare-and-set on its
 * revision, R-16); an exact replay of the repair that made the horizon is a no-op.
 */
export function decideRepair(
  state: Pick<BuildState, 'horizon' | 'nodes' | 'checkpoints'> & Partial<Pick<BuildState, 'summaries'>>,
  expectedRevision: number,
  raw: unknown,
): RenewalDecision {
  const current = state.horizon;
  if (!current) return { ok: false, rule: 'R-16', reason: 'no sealed horizon to repair' };
  if (replaysHorizon(current, expectedRevision, raw)) return { ok: true, noop: true };
  if (expectedRevision !== current.revision) {
    return { ok: false, rule: 'R-16', reason: `stale horizon revision: expected ${expectedRevision}, the horizon is at revision ${current.revision}` };
  }
  const verdict = validateProposal(raw, state);
  if (!verdict.ok) return verdict;
  if (current.coarse.length > 0) return { ok: false, rule: 'R-16', reason: `a repair window is planned only once no coarse milestone is left (${current.coarse.length} remain)` };
  if (verdict.plan.coarse.length > 0) {
    return { ok: false, rule: 'R-16', reason: `a repair window adds no coarse milestones (the proposal has ${verdict.plan.coarse.map((m) => m.id).join(', ')})` };
  }
  const again = verdict.plan.detailed.find((m) => current.detailed.some((d) => d.id === m.id));
  if (again !== undefined) return { ok: false, rule: 'R-13', reason: `milestone '${again.id}' is already in the horizon; a repair window plans new milestones` };
  return { ok: true, noop: false, plan: verdict.plan };
}

/**
 * R-16: a renewal must promote exactly the first one or two coarse milestones (same ids, same
 * order) and keep the remaining coarse suffix untouched at the start of the new coarse list.
 */
export function validateRenewal(
  current: { revision: number; coarse: readonly MilestoneRef[] },
  expectedRevision: number,
  plan: ValidPlan,
): { ok: true } | Refusal {
  if (expectedRevision !== current.revision) {
    return { ok: false, rule: 'R-16', reason: `stale horizon revision: expected ${expectedRevision}, the horizon is at revision ${current.revision}` };
  }
  // validateProposal already refuses duplicates; checked here too so this rule stands on its own.
  const repeated = firstDuplicate([...plan.detailed, ...plan.coarse].map((m) => m.id));
  if (repeated) return { ok: false, rule: 'R-16', reason: `renewal repeats milestone '${repeated}'` };
  const k = plan.detailed.length;
  if (k > current.coarse.length) {
    return { ok: false, rule: 'R-16', reason: `the renewal promotes ${k} milestones but only ${current.coarse.length} coarse remain` };
  }
  const expectedPromoted = current.coarse.slice(0, k);
  for (let i = 0; i < k; i++) {
    const got = plan.detailed[i]!;
    const want = expectedPromoted[i]!;
    if (got.id !== want.id) {
      const where = current.coarse.findIndex((c) => c.id === got.id);
      const why = where === -1 ? `renames or invents '${got.id}' in place of '${want.id}'`
        : where < k ? `reorders '${got.id}' before '${want.id}'`
          : `skips '${want.id}' (promotes '${got.id}')`;
      return { ok: false, rule: 'R-16', reason: `renewal must promote the first coarse milestones in order (${expectedPromoted.map((m) => m.id).join(', ')}); it ${why}` };
    }
  }
  const suffix = current.coarse.slice(k);
  for (let i = 0; i < suffix.length; i++) {
    const want = suffix[i]!;
    const got = plan.coarse[i];
    if (!got) return { ok: false, rule: 'R-16', reason: `renewal loses coarse milestone '${want.id}'` };
    if (got.id !== want.id || got.title !== want.title || got.intent !== want.intent) {
      return { ok: false, rule: 'R-16', reason: `renewal must keep the coarse suffix untouched: position ${i} should be '${want.id}' ("${want.title}"), got '${got.id}' ("${got.title}")` };
    }
  }
  if (plan.coarse.length > MAX_COARSE) return { ok: false, rule: 'R-16', reason: `at most ${MAX_COARSE} coarse milestones, got ${plan.coarse.length}` };
  return { ok: true };
}

function firstDuplicate(ids: readonly string[]): string | null {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) return id;
    seen.add(id);
  }
  return null;
}

function findCycle(nodes: readonly PlannedNode[]): string[] | null {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const color = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (id: string): string[] | null => {
    color.set(id, 1);
    stack.push(id);
    for (const dep of [...(byId.get(id)?.deps ?? [])].sort(compareCodePoints)) {
      if (!byId.has(dep)) continue;
      const c = color.get(dep);
      if (c === 1) return [...stack.slice(stack.indexOf(dep)), dep];
      if (c === undefined) {
        const found = visit(dep);
        if (found) return found;
      }
    }
    stack.pop();
    color.set(id, 2);
    return null;
  };
  for (const n of [...nodes].sort((a, b) => compareCodePoints(a.id, b.id))) {
    if (!color.has(n.id)) {
      const found = visit(n.id);
      if (found) return found;
    }
  }
  return null;
}
