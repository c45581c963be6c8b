import { budgetOf, nextAction } from '../../commands/next-action.js';
import { ledgerJson, spendJson, type LedgerJson, type SpendJson } from '../../commands/spend.js';
import { hasAcceptance, latestAcceptance } from '../../commands/acceptance.js';
import type { Budget, SandboxSettings } from '../../events/catalogue.js';
import { compareCodePoints } from '../../events/canonical.js';
import type { BuildState } from '../../projections/build-state.js';
import { activeMilestone, graphSha256, inFlightNodes, rankReadyWave } from '../../projections/graph.js';
import { criticalPath, type CriticalPath } from '../../projections/critical-path.js';
import { compactedCount } from '../../projections/view.js';

export interface StatusOutput {
  /** Planned nodes accepted so far, compacted ones included (`nodes` counts the live graph, where a summary stands for them). */
  readonly work: { readonly planned: number; readonly accepted: number; readonly compacted: number };
  readonly graphRevision: number;
  readonly graphSha256: string;
  readonly integrationHead: string | null;
  /** Where the result lives in the repository (`longbuild land` merges it into a branch). */
  readonly integrationRef: string | null;
  readonly horizon: { id: string; revision: number; detailed: string[]; coarse: string[] } | null;
  readonly activeMilestone: string | null;
  readonly ready: string[];
  readonly inFlight: string[];
  readonly checkpoints: string[];
  readonly summaries: string[];
  /** Planner and worker calls recorded (a fork's prefix included), and how many of them a fork adopted from its parent (R-41). */
  readonly calls: { planner: number; worker: number; reused?: { planner: number; worker: number } };
  /** The build this one was forked from (R-41): its directory, the point, and the ForkedFrom event's position. */
  readonly fork?: { readonly buildId: string; readonly dir: string; readonly position: number; readonly at: number };
  readonly position: number;
  readonly completed: boolean;
  readonly blocked: string | null;
  readonly nodes: Record<string, number>;
  /** How untrusted processes run (R-30): "bwrap (bubblewrap 0.8.0)", or "off (reason)". */
  readonly sandbox: string;
  /** The longest chain of unfinished planned work and its estimated remaining time. */
  readonly criticalPath: CriticalPath;
  /**
   * What candidates' tests are judged by (R-48..R-51): the verification surface, the policy, each
   * command's report, the head's tests; null for a build from before test policies.
   */
  readonly tests: StatusTests | null;
  /** What the build's calls used (R-58): the total, the planner's, each milestone's and each node's. */
  readonly spend: LedgerJson & { readonly nodes: Readonly<Record<string, SpendJson>> };
  /** The budget in force (R-59), or null. */
  readonly budget: Budget | null;
  /** Why the build is paused on its budget (R-59), or null. */
  readonly paused: string | null;
  /** What awaits an operator's approval (R-60), or null. */
  readonly awaitingApproval: string | null;
  /** The notification outbox (R-61): triggers not notified yet, notifications delivered and failed; null without notifiers. */
  readonly notifications: { readonly pending: number; readonly delivered: number; readonly failed: number } | null;
  /** System-level acceptance: null when the build has no acceptance commands. */
  readonly acceptance: {
    readonly runs: number;
    readonly latest: { readonly runId: string; readonly milestoneId: string | null; readonly head: string; readonly passed: boolean; readonly reason?: string } | null;
    readonly inFlight: string | null;
    readonly requested: boolean;
  } | null;
}

export interface StatusTests {
  readonly surface: { readonly files: readonly string[]; readonly tests: readonly string[]; readonly ecosystems: readonly string[]; readonly source: 'detected' | 'config' };
  readonly testChanges: 'strict' | 'review' | 'record';
  readonly holdout: 'declared' | 'always';
  /** Each verification command and how its report is read (null: exit code only, its tests not ratcheted). */
  readonly commands: readonly { readonly argv: readonly string[]; readonly report: string | null }[];
  /** The integration head's tests as last measured (null: none known, or no command reported any there). */
  readonly head: { readonly passed: number; readonly failed: number; readonly skipped: number } | null;
  readonly retired: number;
}

function testsOf(st: BuildState): StatusTests | null {
  const t = st.build?.tests;
  if (t === undefined) return null;
  const counts = st.headTests?.head === st.integrationHead ? st.headTests?.counts ?? null : null;
  return {
    surface: t.surface, testChanges: t.testChanges, holdout: t.holdout,
    commands: st.build!.verify.map((argv, i) => {
      const r = t.reports[i] ?? null;
      return { argv, report: r === null ? null : `${r.format}${r.file !== undefined ? ` (${r.file})` : ''}` };
    }),
    head: counts === null ? null : { passed: counts.passed, failed: counts.failed, skipped: counts.skipped },
    retired: st.retiredTests ?? 0,
  };
}

/** Where the build stands, from the folded log. */
export function statusOf(st: BuildState): StatusOutput {
  // Why the build is blocked without a BuildBlocked event, or waits on an operator (R-59, R-60): the decider says, once.
  const next = st.build ? nextAction(st) : null;
  const why = (kind: 'blocked' | 'paused' | 'awaiting_approval'): string | null => (next !== null && next.kind === kind ? (next as { reason: string }).reason : null);
  const counts: Record<string, number> = {};
  for (const n of Object.values(st.nodes)) counts[n.state] = (counts[n.state] ?? 0) + 1;
  // The planned work, compacted nodes included (the live graph holds their summaries instead).
  const live = Object.values(st.nodes).filter((n) => n.summary !== true);
  const compacted = Object.values(st.summaries).filter((r) => r.absorbedBy === null).reduce((k, r) => k + compactedCount(st, r.summaryId), 0);
  const work = { planned: live.length + compacted, accepted: live.filter((n) => n.state === 'accepted').length + compacted, compacted };
  return {
    graphRevision: st.graphRevision,
    graphSha256: graphSha256(st.nodes),
    integrationHead: st.integrationHead,
    integrationRef: st.build?.integrationRef ?? null,
    horizon: st.horizon ? { id: st.horizon.horizonId, revision: st.horizon.revision, detailed: st.horizon.detailed.map((m) => m.id), coarse: st.horizon.coarse.map((m) => m.id) } : null,
    activeMilestone: activeMilestone(st),
    ready: rankReadyWave(st),
    inFlight: inFlightNodes(st),
    checkpoints: Object.entries(st.checkpoints).sort((a, b) => a[1].position - b[1].position).map(([id]) => id),
    summaries: Object.keys(st.nodes).filter((id) => st.nodes[id]!.summary === true).sort(compareCodePoints),
    calls: { planner: st.calls.planner, worker: st.calls.worker, ...(st.reused !== undefined ? { reused: { ...st.reused } } : {}) },
    ...(st.fork !== undefined ? { fork: { buildId: st.fork.buildId, dir: st.fork.dir, position: st.fork.position, at: st.fork.at } } : {}),
    position: st.position,
    completed: st.completed,
    // A refused proposal blocks the build without a BuildBlocked event: ask the decider.
    blocked: st.blocked?.reason ?? why('blocked'),
    nodes: counts,
    work,
    sandbox: sandboxLine(st),
    criticalPath: criticalPath(st),
    tests: testsOf(st),
    acceptance: acceptanceOf(st),
    spend: { ...ledgerJson(st.spend), nodes: Object.fromEntries(Object.entries(st.nodes).filter(([, n]) => n.spent !== undefined).map(([id, n]) => [id, spendJson(n.spent!)])) },
    budget: budgetOf(st) ?? null,
    paused: why('paused'),
    awaitingApproval: why('awaiting_approval'),
    notifications: st.build?.settings.notify === undefined ? null : { pending: st.notify?.pending.length ?? 0, delivered: st.notify?.delivered ?? 0, failed: st.notify?.failed ?? 0 },
  };
}

function acceptanceOf(st: BuildState): StatusOutput['acceptance'] {
  if (!hasAcceptance(st)) return null;
  const last = latestAcceptance(st);
  return {
    runs: st.acceptance?.count ?? 0,
    latest: last === null ? null : { runId: last.runId, milestoneId: last.milestoneId, head: last.head, passed: last.status === 'passed', ...(last.reason !== undefined ? { reason: last.reason } : {}) },
    inFlight: st.acceptance?.open ?? null,
    requested: st.acceptance?.requested ?? false,
  };
}

function sandboxLine(st: BuildState): string {
  const sb = st.build?.sandbox;
  if (!sb) return 'off (a build from before the sandbox)';
  const limits = limitsOf(sb.limits);
  if (sb.mode === 'off') return `off — planner, worker and verification run unsandboxed${sb.reason ? ` (${sb.reason})` : ''}${limits}`;
  const net = [...(['planner', 'worker', 'verify'] as const).map((r) => `${r} ${sb.network[r] ? 'on' : 'off'}`), ...(sb.network.setup !== undefined ? [`setup ${sb.network.setup ? 'on' : 'off'}`] : [])].join(', ');
  return `bwrap (${sb.bwrapVersion ?? 'bubblewrap'}; network: ${net}${limits})`;
}

/** `; limits: worker cpu 600 s, verify memory 2048 MiB`, or nothing. */
function limitsOf(limits: SandboxSettings['limits']): string {
  if (limits === undefined) return '';
  const parts = (['planner', 'worker', 'verify'] as const).flatMap((role) => {
    const l = limits[role];
    if (l === undefined) return [];
    const what = [...(l.memoryMb !== undefined ? [`memory ${l.memoryMb} MiB`] : []), ...(l.cpuSeconds !== undefined ? [`cpu ${l.cpuSeconds} s`] : []), ...(l.processes !== undefined ? [`processes ${l.processes}`] : [])];
    return what.length > 0 ? [`${role} ${what.join(' ')}`] : [];
  });
  return parts.length > 0 ? `; limits: ${parts.join(', ')}` : '';
}
