import { UsageError } from '../../../events/errors.js';
import { PROVENANCE_NOTES_REF } from '../../../commands/provenance-statement.js';
import { publishAll, showProvenance, verifyProvenance, type ProvenanceOutput } from '../../app/commit-provenance.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { key: { type: 'string' }, 'signing-key': { type: 'string' } };
export const positionals = { min: 1, max: 2 };

/**
 * `longbuild provenance COMMIT [--json]` (R-62): the statement of an integrated commit,
 * derived from the log, and the envelope its note carries. `provenance verify COMMIT [--key VKEY]`:
 * the note's signature (the build's key, or the one given) and its statement against the log.
 * `provenance publish`: sign and write the notes of every integrated commit that has none.
 */
export async function run(ctx: CommandContext): Promise<ProvenanceOutput> {
  const [first, second] = ctx.positionals;
  if (first === 'publish') {
    if (second !== undefined) throw new UsageError('provenance publish: takes no commit');
    return publishAll(ctx);
  }
  if (first === 'verify') {
    if (second === undefined) throw new UsageError('provenance verify: give the commit (provenance verify COMMIT [--key VKEY])');
    return verifyProvenance(ctx, second, typeof ctx.flags.key === 'string' ? ctx.flags.key : undefined);
  }
  if (second !== undefined) throw new UsageError(`provenance: unknown action '${first}' (expected: COMMIT, verify COMMIT, publish)`);
  return showProvenance(ctx, first!);
}

export function render(d: ProvenanceOutput): string {
  if (d.action === 'publish') return `${d.written} provenance note${d.written === 1 ? '' : 's'} written, ${d.recorded} attestation${d.recorded === 1 ? '' : 's'} recorded in the log (${d.commits} integrated commit${d.commits === 1 ? '' : 's'}; ${d.ref})\nsee: git log --notes=longbuild/provenance\n`;
  const s = d.summary;
  const lines = [
    `${d.commit}: node ${s.nodeId}${s.milestoneId !== null ? ` (milestone ${s.milestoneId})` : ''}, attempt ${s.attemptId}, ${s.model !== null ? `model ${s.model}, ` : ''}driver ${s.driver}`,
    `  verified by ${s.jobId}: ${s.verification.map((v) => `${v.argv.join(' ')} → ${v.exitCode}`).join('; ') || '(no command)'}${s.tests !== null ? `; tests ${s.tests.passed} passed, ${s.tests.failed} failed` : ''}`,
    `  log: attempt started at ${s.positions.attemptStarted}, promoted at ${s.positions.promoted}`,
  ];
  if (d.action === 'verify') {
    return `${lines.join('\n')}\nprovenance verified: signed by key ${d.keyId}, statement matches the log, the note is the one recorded at position ${d.record.position}, proved in the checkpoint signed at size ${d.inclusion.checkpointSize}\n`;
  }
  const recorded = d.record !== null ? `  recorded at position ${d.record.position}: sha256 ${d.record.envelopeSha256}${d.inclusion !== null ? ` (inclusion proof against the checkpoint signed at size ${d.inclusion.checkpointSize}: --json)` : ' (no signed checkpoint covers it yet)'}\n` : '  not recorded in the log yet: `longbuild provenance publish` records it\n';
  return `${lines.join('\n')}\n${recorded}${d.envelope !== null ? `envelope (${PROVENANCE_NOTES_REF}):\n${JSON.stringify(d.envelope)}` : 'no provenance note yet: `longbuild provenance publish` writes it'}\n`;
}
