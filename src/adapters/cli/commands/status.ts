import { describeBudget } from '../../../commands/spend.js';
import { statusOf, type StatusOutput } from '../../app/build-status.js';
import { withReading } from '../../app/reading.js';
import { pause } from '../../interrupt.js';
import { shortList } from '../short-list.js';
import { acceptanceLine, criticalPathLine, spendLine, testsStatusLines } from '../status-lines.js';
import type { CommandContext, FlagSpec } from '../types.js';

export { statusOf, type StatusOutput };

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
