/**
 * A usage report as an agent or a command gave it, read strictly. Kept apart from
 * spend.ts: it builds the catalogue's schema, which reading commands never load (decision 0022).
 */
import { UsageSchema, type Usage } from '../events/catalogue.js';

/**
 * A command's usage file (`LONGBUILD_USAGE_FILE`), read strictly: `{ model?, inputTokens,
 * outputTokens, cachedTokens?, costUsd? }` — whole non-negative token counts, a finite cost.
 */
export function readUsageReport(raw: unknown): { ok: true; usage: Usage } | { ok: false; problem: string } {
  if (raw !== null && typeof raw === 'object' && 'costFrom' in raw) return { ok: false, problem: 'costFrom is the host\'s to say' };
  const r = UsageSchema.safeParse(raw);
  if (r.success) return { ok: true, usage: r.data };
  const issue = r.error.issues[0]!;
  return { ok: false, problem: `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}` };
}

