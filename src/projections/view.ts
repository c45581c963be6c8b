/**
 * What a time traveller sees at one point of the log, and what changed between two points (issue
 * 18): one pure function for each, shared by `show`, `diff` and the web viewer (`longbuild ui`), so
 * the three never disagree. Nothing here reads the log or the clock; the state comes from
 * `stateAt`.
 */
import { ledgerJson, spendJson, type LedgerJson, type SpendJson } from './spend-ledger.js';
import { compareCodePoints } from '../events/canonical.js';
import type { BuildState } from './build-state.js';
import { activeMilestone, graphSha256, rankReadyWave } from './graph.js';

export interface NodeView {
  readonly id: string;
  readonly kind: string;
  readonly state: string;
  readonly milestone: string;
  readonly deps: readonly string[];
  /** Attempts started for the node so far. */
  readonly attempts: number;
  readonly title?: string;
  /** What of the verification surface its plan lets it change, and the tests it may retire. */
  readonly changes?: readonly string[];
  readonly retires?: readonly string[];
  /** What its worker calls used, once one was made. */
  readonly spent?: SpendJson;
  /**
   * A summary node: the milestone it compacted, the nodes it compacted, the earlier summaries it
   * absorbed, and everything it stands for now (those, and what the absorbed ones stood for).
   */
  readonly summary?: { readonly milestoneId: string; readonly compacted: readonly string[]; readonly absorbed: readonly string[]; readonly holds: readonly string[] };
}

export type MilestoneStatus = 'checkpointed' | 'active' | 'planned';

export interface HorizonView {
  readonly horizonId: string;
  readonly revision: number;
  readonly detailed: readonly { readonly id: string; readonly title: string; readonly status: MilestoneStatus }[];
  readonly coarse: readonly { readonly id: string; readonly title: string }[];
}

export interface GraphView {
  readonly position: number;
  readonly graphRevision: number;
  readonly graphSha256: string;
  readonly integrationHead: string | null;
  /** Nodes of the live graph, sorted by id. */
  readonly nodes: readonly NodeView[];
  /** The ready wave, ranked. */
  readonly ready: readonly string[];
  readonly horizon: HorizonView | null;
  /** Milestones checkpointed so far, in the order they were. */
  readonly checkpoints: readonly string[];
  readonly completed: boolean;
  readonly blocked: string | null;
  /** What the build's calls used up to this point. */
  readonly spend: LedgerJson;
}

/**
 * Everything a summary stands for, each id handed to `visit` in turn: its nodes, the summaries it
 * absorbed and, through them, theirs (depth first: a summary's nodes, then each absorbed summary
 * followed by what it holds). Iterative: a long build's live summary absorbed the one before it at
 * every compaction, a chain as deep as the build has milestones (2,500 at 50,000 nodes), which
 * recursion could not follow.
 */
function eachHolding(st: BuildState, summaryId: string, visit: (id: string) => void): void {
  const seen = new Set<string>();
  // Work to do, last first: 'expand' lists a summary's holdings, 'emit' lists an absorbed id itself.
  const todo: [op: 'expand' | 'emit', id: string][] = [['expand', summaryId]];
  for (let item = todo.pop(); item !== undefined; item = todo.pop()) {
    const [op, id] = item;
    if (op === 'emit') {
      visit(id);
      continue;
    }
    const s = Object.hasOwn(st.summaries, id) ? st.summaries[id]!.summary : undefined;
    if (s === undefined || seen.has(id)) continue;
    seen.add(id);
    for (const n of s.compactedNodeIds) visit(n);
    for (let i = s.absorbedSummaryIds.length - 1; i >= 0; i--) todo.push(['expand', s.absorbedSummaryIds[i]!], ['emit', s.absorbedSummaryIds[i]!]);
  }
}

/** Everything a summary stands for, in the order of `eachHolding`. */
export function holdings(st: BuildState, summaryId: string): string[] {
  const out: string[] = [];
  eachHolding(st, summaryId, (id) => out.push(id));
  return out;
}

/**
 * How many planned nodes a summary stands for: the ids it holds that are not summaries, each once,
 * counted without listing them (`status` on a long build: 50,000 ids through 2,500 summaries).
 */
export function compactedCount(st: BuildState, summaryId: string): number {
  const counted = new Set<string>();
  eachHolding(st, summaryId, (id) => {
    if (!Object.hasOwn(st.summaries, id)) counted.add(id);
  });
  return counted.size;
}

/** The view of the build at the state's position. */
export function viewOf(st: BuildState): GraphView {
  const active = activeMilestone(st);
  const h = st.horizon;
  return {
    position: st.position,
    graphRevision: st.graphRevision,
    graphSha256: graphSha256(st.nodes),
    integrationHead: st.integrationHead,
    nodes: Object.keys(st.nodes).sort(compareCodePoints).map((id) => {
      const n = st.nodes[id]!;
      const s = st.summaries[id]?.summary;
      return {
        id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...n.deps], attempts: n.attempts,
        ...(n.title !== undefined ? { title: n.title } : {}),
        ...(n.changes !== undefined ? { changes: [...n.changes] } : {}),
        ...(n.retires !== undefined ? { retires: [...n.retires] } : {}),
        ...(n.spent !== undefined ? { spent: spendJson(n.spent) } : {}),
        ...(s !== undefined ? { summary: { milestoneId: s.milestoneId, compacted: [...s.compactedNodeIds], absorbed: [...s.absorbedSummaryIds], holds: [...new Set(holdings(st, id))].sort(compareCodePoints) } } : {}),
      };
    }),
    ready: rankReadyWave(st),
    horizon: h === null ? null : {
      horizonId: h.horizonId,
      revision: h.revision,
      detailed: h.detailed.map((m) => ({ id: m.id, title: m.title, status: st.checkpoints[m.id] ? 'checkpointed' : m.id === active ? 'active' : 'planned' })),
      coarse: h.coarse.map((m) => ({ id: m.id, title: m.title })),
    },
    checkpoints: Object.entries(st.checkpoints).sort(([, a], [, b]) => a.position - b.position).map(([id]) => id),
    completed: st.completed,
    blocked: st.blocked?.reason ?? null,
    spend: ledgerJson(st.spend),
  };
}

export interface ViewDiff {
  readonly from: { readonly position: number; readonly graphRevision: number; readonly integrationHead: string | null };
  readonly to: { readonly position: number; readonly graphRevision: number; readonly integrationHead: string | null };
  /** Nodes that appear (summaries included). */
  readonly added: readonly string[];
  /** Nodes that disappear without being compacted (a replan dropped them). */
  readonly removed: readonly string[];
  /** Nodes that disappear into a summary that appears, by summary. */
  readonly compacted: readonly { readonly summary: string; readonly milestone: string; readonly nodes: readonly string[] }[];
  /** State changes of nodes on both sides. */
  readonly changed: readonly { readonly id: string; readonly from: string; readonly to: string }[];
  /** Dependency changes of nodes on both sides: what they now depend on and no longer do. */
  readonly rewired: readonly { readonly id: string; readonly added: readonly string[]; readonly removed: readonly string[] }[];
  /** Attempt counts that moved. */
  readonly attempts: readonly { readonly id: string; readonly from: number; readonly to: number }[];
  /** The ranked ready wave on each side, when it differs (order included). */
  readonly ready: { readonly from: readonly string[]; readonly to: readonly string[] } | null;
  /** The horizon on each side, when it differs (a renewal, a milestone checkpointed or activated). */
  readonly horizon: {
    readonly from: string | null;
    readonly to: string | null;
    readonly milestones: readonly { readonly id: string; readonly from: MilestoneStatus | 'coarse' | null; readonly to: MilestoneStatus | 'coarse' | null }[];
  } | null;
  /** Milestones checkpointed between the two points. */
  readonly checkpointed: readonly string[];
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

function milestoneStatuses(v: GraphView): Map<string, MilestoneStatus | 'coarse'> {
  const m = new Map<string, MilestoneStatus | 'coarse'>();
  for (const d of v.horizon?.detailed ?? []) m.set(d.id, d.status);
  for (const c of v.horizon?.coarse ?? []) if (!m.has(c.id)) m.set(c.id, 'coarse');
  return m;
}

/** Everything that differs between two views (`a` before `b` or not: the diff is from `a` to `b`). */
export function diffViews(a: GraphView, b: GraphView): ViewDiff {
  const before = new Map(a.nodes.map((n) => [n.id, n]));
  const after = new Map(b.nodes.map((n) => [n.id, n]));
  const added = b.nodes.filter((n) => !before.has(n.id)).map((n) => n.id);
  // A node gone into a summary that is on the far side (directly, or through a summary it absorbed).
  const into = new Map<string, { summary: string; milestone: string }>();
  for (const n of b.nodes) {
    if (n.summary === undefined || before.has(n.id)) continue;
    for (const id of n.summary.holds) into.set(id, { summary: n.id, milestone: n.summary.milestoneId });
  }
  const removed: string[] = [];
  const compacted = new Map<string, { summary: string; milestone: string; nodes: string[] }>();
  for (const n of a.nodes) {
    if (after.has(n.id)) continue;
    const s = into.get(n.id);
    if (s === undefined) {
      removed.push(n.id);
      continue;
    }
    const entry = compacted.get(s.summary) ?? { ...s, nodes: [] };
    entry.nodes.push(n.id);
    compacted.set(s.summary, entry);
  }
  const changed: { id: string; from: string; to: string }[] = [];
  const rewired: { id: string; added: string[]; removed: string[] }[] = [];
  const attempts: { id: string; from: number; to: number }[] = [];
  for (const x of a.nodes) {
    const y = after.get(x.id);
    if (y === undefined) continue;
    if (x.state !== y.state) changed.push({ id: x.id, from: x.state, to: y.state });
    const plus = y.deps.filter((d) => !x.deps.includes(d));
    const minus = x.deps.filter((d) => !y.deps.includes(d));
    if (plus.length > 0 || minus.length > 0) rewired.push({ id: x.id, added: [...plus].sort(compareCodePoints), removed: [...minus].sort(compareCodePoints) });
    if (x.attempts !== y.attempts) attempts.push({ id: x.id, from: x.attempts, to: y.attempts });
  }
  const sa = milestoneStatuses(a);
  const sb = milestoneStatuses(b);
  const milestones = [...new Set([...sa.keys(), ...sb.keys()])]
    .filter((id) => sa.get(id) !== sb.get(id))
    .map((id) => ({ id, from: sa.get(id) ?? null, to: sb.get(id) ?? null }));
  const ha = a.horizon?.horizonId ?? null;
  const hb = b.horizon?.horizonId ?? null;
  return {
    from: { position: a.position, graphRevision: a.graphRevision, integrationHead: a.integrationHead },
    to: { position: b.position, graphRevision: b.graphRevision, integrationHead: b.integrationHead },
    added,
    removed,
    compacted: [...compacted.values()].map((c) => ({ ...c, nodes: c.nodes.sort(compareCodePoints) })).sort((x, y) => compareCodePoints(x.summary, y.summary)),
    changed,
    rewired,
    attempts,
    ready: sameList(a.ready, b.ready) ? null : { from: [...a.ready], to: [...b.ready] },
    horizon: ha === hb && milestones.length === 0 ? null : { from: ha, to: hb, milestones },
    checkpointed: b.checkpoints.filter((c) => !a.checkpoints.includes(c)),
  };
}
