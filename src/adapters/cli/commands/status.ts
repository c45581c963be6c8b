import { describeBudget, formatUsd, ledgerJson, spendJson, type LedgerJson, type SpendJson } from '../../../commands/spend.js';
import type { Budget } from '../../../events/catalogue.js';
import { budgetOf } from '../../../commands/next-action.js';
import { compareCodePoints } from '../../../events/canonical.js';
import { shortList } from '../short-list.js';
import type { BuildState } from '../../../projections/build-state.js';
import type { SandboxSettings } from '../../../events/catalogue.js';
import { nextAction } from '../../../commands/next-action.js';
import { activeMilestone, graphSha256, inFlightNodes, rankReadyWave } from '../../../projections/graph.js';
import { criticalPath, type CriticalPath } from '../../../projections/critical-path.js';
import { compactedCount } from '../../../projections/view.js';
import { hasAcceptance, latestAcceptance } from '../../../commands/acceptance.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { pause } from '../../interrupt.js';
import { withReading } from '../with-reading.js';

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
  /** The longest chain of unfinished planned work and its estimated remaining time (issue 16). */
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
  /** System-level acceptance (issue 16): null when the build has no acceptance commands. */
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

/** A command as one short label (a long `node -e …` cut at 60 characters). */
export function commandLabel(argv: readonly string[]): string {
  const text = argv.join(' ');
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** The status lines of a build's test policy (R-48..R-51). */
export function testsStatusLines(t: StatusTests): string[] {
  const files = t.surface.files.length === 0 ? 'nothing' : shortList([...t.surface.files]);
  const tests = t.surface.tests.length === 0 ? 'none (no test files are protected: set "tests" in the config)' : shortList([...t.surface.tests]);
  const from = t.surface.source === 'config' ? 'configured' : t.surface.ecosystems.length > 0 ? `detected: ${t.surface.ecosystems.join(', ')}` : 'no ecosystem detected';
  const unratcheted = t.commands.filter((c) => c.report === null).map((c) => commandLabel(c.argv));
  return [
    `verification surface (${from}): ${files}`,
    `tests: ${tests}; declared test changes: ${t.testChanges}; hold-out: ${t.holdout === 'always' ? 'every candidate' : 'when declared'}`,
    `test reports: ${t.commands.map((c) => `${commandLabel(c.argv)} -> ${c.report ?? 'none'}`).join('; ') || '-'}${unratcheted.length > 0 ? ` (not ratcheted: ${unratcheted.join('; ')})` : ''}`,
    `head's tests: ${t.head === null ? 'none reported yet (its tests are not ratcheted until a report is read)' : `${t.head.passed} passed, ${t.head.failed} failed, ${t.head.skipped} skipped`}${t.retired > 0 ? `; ${t.retired} retired by plan so far` : ''}`,
  ];
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

/** The ledger in one line: the total, then the planner's and the costliest milestones'. */
function spendLine(s: StatusOutput['spend']): string {
  if (s.calls === 0) return 'no calls yet';
  if (s.reported === 0) return `no call reported usage (${s.calls} call${s.calls === 1 ? '' : 's'}; commands report in LONGBUILD_USAGE_FILE)`;
  const one = (t: SpendJson) => `${t.usd !== null ? formatUsd(t.usd) : 'cost unknown'}, ${(t.inputTokens + t.outputTokens).toLocaleString('en-US')} tokens`;
  const unknown = s.calls - s.reported;
  const milestones = Object.entries(s.milestones).sort((a, b) => (b[1].usd ?? 0) - (a[1].usd ?? 0) || compareCodePoints(a[0], b[0])).slice(0, 3);
  return `${one(s)} in ${s.calls} calls${unknown > 0 ? ` (${unknown} unknown${s.unknownReinvocations > 0 ? `, ${s.unknownReinvocations} of them made again after a crash` : ''})` : ''}; planner ${one(s.planner)}${milestones.map(([id, t]) => `; ${id} ${one(t)}`).join('')}`;
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

function acceptanceLine(a: NonNullable<StatusOutput['acceptance']>): string {
  const last = a.latest === null ? 'no run finished yet'
    : `${a.latest.runId} ${a.latest.passed ? 'passed' : `FAILED (${a.latest.reason ?? 'a command failed'}; \`longbuild evidence ${a.latest.runId}\`)`} on ${a.latest.head.slice(0, 12)}${a.latest.milestoneId !== null ? ` (milestone ${a.latest.milestoneId})` : ''}`;
  return `${last}${a.inFlight !== null ? `; ${a.inFlight} running` : ''}${a.requested ? '; a run is asked for' : ''}`;
}

/** `a -> b -> c (3 nodes; about 12 min left, from 4 worker calls of 2.5 min and 3 verifications of 40 s on average)`. */
export function criticalPathLine(c: CriticalPath): string {
  if (c.nodes.length === 0) return '-';
  const shown = c.nodes.length > 8 ? [...c.nodes.slice(0, 4), '…', ...c.nodes.slice(-3)] : c.nodes;
  const count = `${c.nodes.length} node${c.nodes.length === 1 ? '' : 's'}`;
  if (c.remainingMs === null) return `${shown.join(' -> ')} (${count}; no recorded call durations to estimate from)`;
  const b = c.basis;
  const from = [
    ...(b.workerMeanMs !== null ? [`${b.workerCalls} worker call${b.workerCalls === 1 ? '' : 's'} of ${duration(b.workerMeanMs)}`] : []),
    ...(b.verifyMeanMs !== null ? [`${b.verifications} verification${b.verifications === 1 ? '' : 's'} of ${duration(b.verifyMeanMs)}`] : []),
  ].join(' and ');
  return `${shown.join(' -> ')} (${count}; about ${duration(c.remainingMs)} left, from ${from} on average)`;
}

function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
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

export const flags: Record<string, FlagSpec> = { watch: { type: 'boolean' } };

/** How often `--watch` reads the log again. */
const WATCH_POLL_MS = 1000;

export async function run(ctx: CommandContext): Promise<StatusOutput> {
  const once = () => withReading(ctx, async (s) => statusOf(s.state));
  if (ctx.flags.watch !== true) return once();
  // --watch: print the status each time the log moves, until the build completes or an interrupt.
  const tty = !ctx.json && process.stdout.isTTY === true;
  let last = await once();
  for (;;) {
    ctx.stdout(ctx.json ? `${JSON.stringify(last)}\n` : `${tty ? '\x1b[H\x1b[2J' : ''}${new Date().toISOString()}\n${render(last)}${tty ? '' : '\n'}`);
    if (last.completed) return last;
    let next = last;
    while (next.position === last.position) {
      if (!(await pause(WATCH_POLL_MS))) return last;
      next = await once();
    }
    last = next;
  }
}

/** With `--watch` every status was printed as it came: nothing more at the end. */
export function renderJson(d: StatusOutput, ctx: CommandContext): string {
  return ctx.flags.watch === true ? '' : `${JSON.stringify(d)}\n`;
}

export function render(d: StatusOutput, ctx?: CommandContext): string {
  if (ctx?.flags.watch === true) return '';
  const lines = [
    `build: ${d.completed ? 'complete' : d.blocked ? `blocked — ${d.blocked}` : d.paused ? `paused — ${d.paused}` : d.awaitingApproval ? `awaiting approval — ${d.awaitingApproval}` : 'in progress'} at position ${d.position}`,
    `sandbox: ${d.sandbox}`,
    `graph: revision ${d.graphRevision}, sha256 ${d.graphSha256.slice(0, 16)}…, nodes ${Object.entries(d.nodes).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`,
    `work: ${d.work.accepted} of ${d.work.planned} planned nodes accepted${d.work.compacted > 0 ? ` (${d.work.compacted} of them compacted into summaries)` : ''}`,
    `integration head: ${d.integrationHead ?? '-'}${d.integrationHead && d.integrationRef ? ` (${d.integrationRef}; \`longbuild land\` brings it into your branch)` : ''}`,
    d.horizon ? `horizon: ${d.horizon.id} r${d.horizon.revision}; detailed ${d.horizon.detailed.join(', ')}; coarse ${d.horizon.coarse.join(', ') || '(none)'}` : 'horizon: not sealed yet',
    `active milestone: ${d.activeMilestone ?? '-'}`,
    `ready (ranked): ${shortList(d.ready)}`,
    `in flight: ${d.inFlight.join(', ') || '-'}`,
    `critical path: ${criticalPathLine(d.criticalPath)}`,
    ...(d.tests !== null ? testsStatusLines(d.tests) : []),
    ...(d.acceptance !== null ? [`acceptance: ${acceptanceLine(d.acceptance)}`] : []),
    `checkpoints: ${shortList(d.checkpoints)}`,
    `summaries: ${shortList(d.summaries)}`,
    `calls: planner ${d.calls.planner}, worker ${d.calls.worker}${d.calls.reused !== undefined ? ` (adopted from a parent build: ${d.calls.reused.planner} planner, ${d.calls.reused.worker} worker results)` : ''}`,
    ...(d.notifications !== null ? [`notifications: ${d.notifications.delivered} delivered, ${d.notifications.failed} failed, ${d.notifications.pending} pending (\`longbuild run\` delivers them)`] : []),
    `spend: ${spendLine(d.spend)}${d.budget !== null ? `; budget ${describeBudget(d.budget)}` : ''}`,
    ...(d.fork !== undefined ? [`fork: of ${d.fork.dir} at position ${d.fork.position} (ForkedFrom at ${d.fork.at}); \`longbuild verify\` checks the link`] : []),
  ];
  return `${lines.join('\n')}\n`;
}
