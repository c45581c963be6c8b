import { resolve } from 'node:path';
import { UsageError } from '../../../events/errors.js';
import { exportBundle, installedVerifier, verifyBundleDir, type AuditOutput } from '../../app/audit-bundle.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { to: { type: 'string' }, key: { type: 'string' }, expect: { type: 'string' }, witness: { type: 'string', repeatable: true }, 'allow-unsigned-tail': { type: 'boolean' } };
export const positionals = { min: 1, max: 2 };

export async function run(ctx: CommandContext): Promise<AuditOutput> {
  const action = ctx.positionals[0];
  const f = ctx.flags;
  if (action === 'export') {
    if (ctx.positionals.length > 1) throw new UsageError('audit export: takes --to DIR, no positional directory');
    if (typeof f.to !== 'string') throw new UsageError('audit export: --to DIR is required (a new or empty directory)');
    return exportBundle(ctx, resolve(ctx.cwd, f.to));
  }
  if (action === 'verify') {
    const dir = ctx.positionals[1];
    if (dir === undefined) throw new UsageError('audit verify: give the bundle directory (audit verify DIR)');
    return verifyBundleDir(resolve(ctx.cwd, dir), {
      ...(typeof f.key === 'string' ? { key: f.key } : {}),
      ...(typeof f.expect === 'string' ? { expect: resolve(ctx.cwd, f.expect) } : {}),
      ...(f['allow-unsigned-tail'] === true ? { allowUnsignedTail: true } : {}),
      witnesses: Array.isArray(f.witness) ? f.witness : [],
    });
  }
  if (action === 'verifier') {
    if (ctx.positionals.length > 1) throw new UsageError('audit verifier: takes no directory');
    return installedVerifier();
  }
  throw new UsageError(`audit: unknown action '${action}' (expected: export, verify, verifier)`);
}

export function render(d: AuditOutput): string {
  if (d.action === 'export') {
    return `exported ${d.events} events, ${d.checkpoints} signed checkpoints, ${d.evidence} evidence files, ${d.commits} commits and ${d.attestations} attestations (${Math.round(d.bytes / 1024)} KiB) to ${d.to}\n`
      + (d.unnoted > 0 ? `note: ${d.unnoted} attestation${d.unnoted === 1 ? '' : 's'} the log records ${d.unnoted === 1 ? 'has' : 'have'} no note in the repository (removed?): \`longbuild provenance publish\` writes them again; then export again\n` : '')
      + (d.unvouched > 0 ? `note: the last ${d.unvouched} events are after the last signed checkpoint (a run was interrupted): an auditor must pass --allow-unsigned-tail; \`longbuild step\` signs them, then export again\n` : '')
      + `an auditor checks it with their own longbuild: longbuild audit verify ${d.to} --key VKEY\n`;
  }
  if (d.action === 'verifier') return `${d.sha256}  ${d.path}\nlongbuild ${d.version}'s audit verifier: a bundle's verify.mjs with another SHA-256 is not this verifier\n`;
  const note = d.verifier.bundled === null ? 'note: the bundle carries no verify.mjs; checked with this install\'s verifier\n'
    : d.verifier.same ? '' : `note: the bundle's verify.mjs (sha256 ${d.verifier.bundled.slice(0, 16)}…) is not this install's verifier (${d.verifier.sha256.slice(0, 16)}…): do not run it; these checks are this install's\n`;
  return note + d.checks.map((c) => `ok ${c.check}: ${c.detail}\n`).join('') + (d.failure ? `FAILED ${d.failure.check}${d.failure.position !== undefined ? ` at position ${d.failure.position}` : ''}: ${d.failure.problem}\n` : 'verified: every check passed\n');
}

export function failure(d: AuditOutput): string | undefined {
  if (d.action !== 'verify' || !d.failure) return undefined;
  return `audit verify failed${d.failure.position !== undefined ? ` at position ${d.failure.position}` : ''} (${d.failure.check}): ${d.failure.problem}`;
}
