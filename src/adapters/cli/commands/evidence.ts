import { commandLabel } from '../status-lines.js';
import { evidenceOf, type EvidenceOutput, type EvidenceTests } from '../../app/recorded-evidence.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const positionals = { min: 1, max: 1 };
export const flags: Record<string, FlagSpec> = { raw: { type: 'boolean' } };

/** `--raw`: the recorded bytes as they are, control sequences included (for a pipe, not a terminal). */
export const rawOutput = (f: Readonly<Record<string, unknown>>): boolean => f.raw === true;

/** `longbuild evidence ATTEMPT|JOB|RUN`: the recorded stdout/stderr of an attempt, a job's verification commands or an acceptance run's commands. */
export function run(ctx: CommandContext): Promise<EvidenceOutput> {
  return evidenceOf(ctx, ctx.positionals[0]!);
}

/** The tests lines of a job's evidence (R-51): counts, what they were compared with, the hold-out, the verdict. */
export function testsLines(t: EvidenceTests): string[] {
  const base = t.base === null ? 'no tests known on the base head' : `base head ${t.base.head.slice(0, 12)}: ${t.base.passed} passed${t.base.measured ? ' (measured for this job)' : ''}`;
  const named = (ids: readonly string[], count: number) => (count === 0 ? 'none' : `${count} (${ids.slice(0, 5).map((x) => JSON.stringify(x)).join(', ')}${count > 5 ? ', …' : ''})`);
  const verdict = t.verdict.kind === 'promoted' ? `promoted${t.verdict.retired.length > 0 ? `, retiring ${named(t.verdict.retired, t.verdict.retired.length)}` : ''}`
    : t.verdict.kind === 'open' ? 'not decided yet' : `${t.verdict.kind === 'split' ? 'batch split' : 'refused'}: ${t.verdict.reason}`;
  return [
    `tests: ${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped; ${base}`,
    ...t.commands.map((c) => `  ${commandLabel(c.argv)}: ${c.report}`),
    `  base tests no longer passing: ${named(t.lost, t.lostCount)}`,
    ...(t.holdout !== undefined ? [`  hold-out (base tests on the candidates' code, tree ${t.holdout.tree.slice(0, 12)}): ${t.holdout.unreadable !== undefined ? `cannot name its failures: ${t.holdout.unreadable}` : `${t.holdout.passed ?? 0} passed; failing base tests: ${named(t.holdout.failing, t.holdout.failingCount)}`}`] : []),
    `  ratchet: ${verdict}`,
  ];
}

export function render(d: EvidenceOutput): string {
  const head = `${d.kind} ${d.id}: ${d.outcome}${d.reason !== undefined ? ` (${d.reason})` : ''}, recorded at position ${d.position}\n${d.tests !== undefined ? `${testsLines(d.tests).join('\n')}\n` : ''}`;
  return head + d.streams.map((s) => {
    const body = s.text === null ? `(file ${s.sha256} is missing from the evidence store)\n` : s.text.length === 0 ? '(empty)\n' : s.text.endsWith('\n') ? s.text : `${s.text}\n`;
    return `--- ${s.name} (${s.sha256.slice(0, 12)})\n${body}`;
  }).join('');
}
