/**
 * The scripted planner (route "scripted:blueprint"): proposes exactly what the blueprint and its
 * two windows say — including invalid plans, which the host must refuse. Read-only: it
 * gets data only and never touches the repository.
 */
import type { MilestoneRef, PlannedNode } from '../../events/catalogue.js';
import { EffectError } from '../../events/errors.js';
import type { Planner, PlannerInput, ProposalShape } from '../../commands/ports.js';
import type { Blueprint, BlueprintMilestone, BlueprintNode } from './blueprint.js';
import { appendLedger, ledgerPathFrom } from './effects-ledger.js';

export const SCRIPTED_PLANNER_ROUTE = 'scripted:blueprint';

type ProposedMilestone = ProposalShape['detailed'][number];

/** A blueprint node as a planner proposes it: blueprint-only fields (files, failAttempts, ...) dropped. */
export function proposedNode(n: BlueprintNode): Omit<PlannedNode, 'milestone'> {
  return {
    id: n.id,
    kind: n.kind,
    deps: [...n.deps],
    ...(n.title === undefined ? {} : { title: n.title }),
    ...(n.accepted === undefined ? {} : { accepted: n.accepted }),
    ...(n.contract === undefined ? {} : { contract: n.contract }),
    ...(n.foundation === undefined ? {} : { foundation: n.foundation }),
    ...(n.decision === undefined ? {} : { decision: n.decision }),
    ...(n.changes === undefined ? {} : { changes: [...n.changes] }),
    ...(n.retires === undefined ? {} : { retires: [...n.retires] }),
  };
}

function ref(m: BlueprintMilestone): MilestoneRef {
  return { id: m.id, title: m.title, ...(m.intent === undefined ? {} : { intent: m.intent }) };
}

function detailed(m: BlueprintMilestone): ProposedMilestone {
  return { ...ref(m), nodes: m.nodes.map(proposedNode) };
}

/**
 * The proposal for `input` (pure). seal: the first detailedWindow milestones in detail, the next
 * coarseWindow as coarse. renew: the first min(detailedWindow, |coarse|) milestones of the current
 * coarse list (located in the blueprint by the first coarse id) in detail, then the following
 * blueprint milestones, up to coarseWindow, as coarse. repair: the blueprint's next repair window
 * (the one after the repair the horizon in force holds), nothing when none is left.
 */
export function scriptedProposal(blueprint: Blueprint, input: Pick<PlannerInput, 'purpose' | 'horizon' | 'callId'>): ProposalShape {
  const ms = blueprint.milestones;
  const dw = blueprint.detailedWindow;
  const cw = blueprint.coarseWindow;
  if (input.purpose === 'repair') {
    // The blueprint's repair windows in order: the one after the repair the horizon in force holds.
    const repairs = blueprint.repairs ?? [];
    const current = repairs.findIndex((r) => input.horizon?.detailed.some((m) => m.id === r.id) ?? false);
    const next = repairs[current + 1];
    return { detailed: next === undefined ? [] : [detailed(next)], coarse: [] };
  }
  if (input.purpose === 'seal' || input.horizon === null) {
    return { detailed: ms.slice(0, dw).map(detailed), coarse: ms.slice(dw, dw + cw).map(ref) };
  }
  const coarse = input.horizon.coarse;
  const first = coarse[0];
  if (first === undefined) return { detailed: [], coarse: [] };
  const start = ms.findIndex((m) => m.id === first.id);
  if (start < 0) throw new EffectError(`scripted planner: coarse milestone '${first.id}' of horizon ${input.horizon.horizonId} is not in the blueprint`);
  const k = Math.min(dw, coarse.length);
  return { detailed: ms.slice(start, start + k).map(detailed), coarse: ms.slice(start + k, start + k + cw).map(ref) };
}

export class ScriptedPlanner implements Planner {
  readonly route = SCRIPTED_PLANNER_ROUTE;
  readonly #blueprint: Blueprint;
  readonly #ledgerPath: string | undefined;

  constructor(blueprint: Blueprint, opts: { ledgerPath?: string } = {}) {
    this.#blueprint = blueprint;
    this.#ledgerPath = opts.ledgerPath;
  }

  async propose(input: PlannerInput): Promise<unknown> {
    const ledger = ledgerPathFrom(this.#ledgerPath);
    if (ledger !== undefined) appendLedger(ledger, { kind: 'planner', key: input.callId, pid: process.pid });
    // Deep copy through JSON: the host owns what it gets and may keep it.
    return JSON.parse(JSON.stringify(scriptedProposal(this.#blueprint, input))) as unknown;
  }
}
