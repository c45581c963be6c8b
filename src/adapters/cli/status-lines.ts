import { formatCount, formatUsd, type SpendJson } from '../../commands/spend.js';
import { compareCodePoints } from '../../events/canonical.js';
import type { CriticalPath } from '../../projections/critical-path.js';
import type { StatusOutput, StatusTests } from '../app/build-status.js';
import { shortList } from './short-list.js';

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

/** The ledger in one line: the total, then the planner's and the costliest milestones'. */
export function spendLine(s: StatusOutput['spend']): string {
  if (s.calls === 0) return 'no calls yet';
  if (s.reported === 0) return `no call reported usage (${s.calls} call${s.calls === 1 ? '' : 's'}; commands report in LONGBUILD_USAGE_FILE)`;
  const one = (t: SpendJson) => `${t.usd !== null ? formatUsd(t.usd) : 'cost unknown'}, ${formatCount(t.inputTokens + t.outputTokens)} tokens`;
  const unknown = s.calls - s.reported;
  const milestones = Object.entries(s.milestones).sort((a, b) => (b[1].usd ?? 0) - (a[1].usd ?? 0) || compareCodePoints(a[0], b[0])).slice(0, 3);
  return `${one(s)} in ${s.calls} calls${unknown > 0 ? ` (${unknown} unknown${s.unknownReinvocations > 0 ? `, ${s.unknownReinvocations} of them made again after a crash` : ''})` : ''}; planner ${one(s.planner)}${milestones.map(([id, t]) => `; ${id} ${one(t)}`).join('')}`;
}

export function acceptanceLine(a: NonNullable<StatusOutput['acceptance']>): string {
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
