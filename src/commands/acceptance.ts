/**
 * System-level acceptance, pure. A build may name trusted acceptance commands: they
 * run on the integration head of every milestone checkpoint (sandboxed and cached like
 * verification), and the build completes only when they pass on its final head. A failing run
 * does not stop the work in flight: the planner gets it as evidence at its next call (a renewal,
 * whose window may repair it) and, once no coarse milestone is left, is asked for a repair window
 * (`purpose: "repair"`, at most `acceptanceRepairs` of them); an operator may run it again
 * (`longbuild accept`, AcceptanceRequested).
 */
import { compareCodePoints } from '../events/canonical.js';
import type { AcceptanceRun, BuildState } from '../projections/build-state.js';
import { recordEntries } from '../projections/record-table.js';

/** True when the build names acceptance commands. */
export function hasAcceptance(state: Pick<BuildState, 'build'>): boolean {
  return (state.build?.acceptance?.length ?? 0) > 0;
}

/** Repair windows the planner may plan for a failing acceptance (settings.acceptanceRepairs; absent: 2). */
export function acceptanceRepairsOf(state: Pick<BuildState, 'build'>): number {
  return state.build?.settings.acceptanceRepairs ?? 2;
}

/**
 * The acceptance run to start now, or null: an operator's request (on the head as it is), else
 * the first checkpointed milestone, in checkpoint order, that has had no run (on the head its
 * checkpoint names) and whose head no run has passed on.
 */
export function acceptanceDue(state: BuildState): { milestoneId: string | null; head: string } | null {
  if (!hasAcceptance(state) || state.acceptance?.open != null) return null;
  if (state.acceptance?.requested === true) return { milestoneId: null, head: state.integrationHead! };
  // A checkpoint on a head a run already passed (an empty milestone) needs no run of its own; after
  // a failure it runs again (a repair may have fixed what the code does not hold).
  const runs = Object.values(state.acceptance?.runs ?? {});
  const checked = new Set(runs.map((r) => r.milestoneId));
  const heads = new Set(runs.filter((r) => r.status === 'passed').map((r) => r.head));
  const due = recordEntries(state.checkpoints)
    .filter(([m, c]) => !checked.has(m) && !heads.has(c.checkpoint.integrationHead))
    .sort(([a, x], [b, y]) => x.position - y.position || compareCodePoints(a, b))[0];
  return due === undefined ? null : { milestoneId: due[0], head: due[1].checkpoint.integrationHead };
}

/** The newest finished run (what renewal and completion go by), or null when none has finished. */
export function latestAcceptance(state: Pick<BuildState, 'acceptance'>): AcceptanceRun | null {
  const id = state.acceptance?.latest;
  return id == null ? null : state.acceptance!.runs[id] ?? null;
}

/** Repair windows planned so far: repair asks whose proposal was accepted. */
export function repairsPlanned(state: Pick<BuildState, 'plannerCalls'>): number {
  return recordEntries(state.plannerCalls).filter(([, c]) => c.purpose === 'repair' && c.status === 'returned').length;
}

/** The runs a planner is told about: those of the window in force's milestones, and the newest run, oldest first. */
export function acceptanceForPlanner(state: BuildState): AcceptanceRun[] {
  const window = new Set((state.horizon?.detailed ?? []).map((m) => m.id));
  const latest = latestAcceptance(state);
  return Object.values(state.acceptance?.runs ?? {})
    .filter((r) => r.status !== 'started' && ((r.milestoneId !== null && window.has(r.milestoneId)) || r === latest))
    .sort((a, b) => (a.position ?? 0) - (b.position ?? 0));
}
