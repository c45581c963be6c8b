import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { EffectError, UsageError } from '../../../events/errors.js';
import { traceOfLog, type OtlpTraces } from '../../../commands/otel-trace.js';
import { postTraces } from '../../otel/stream.js';
import { readEventsFrom } from '../../log/paging.js';
import { packageVersion } from '../../package-files.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { to: { type: 'string' }, endpoint: { type: 'string' }, 'timeout-seconds': { type: 'int' } };
export const positionals = { min: 1, max: 1 };

export interface OtelOutput {
  readonly action: 'export';
  readonly spans: number;
  readonly traceId: string | null;
  /** The file written, or the endpoint posted to, or null (the traces on stdout). */
  readonly to: string | null;
  readonly endpoint: string | null;
  /** With neither --to nor --endpoint: the OTLP/JSON request itself. */
  readonly traces?: OtlpTraces;
}

/**
 * `longbuild otel export [--to FILE | --endpoint URL]`: the build as OTLP traces
 * derived from the log: written as OTLP/JSON to FILE (stdout without either flag), or posted to an
 * OTLP/HTTP collector (`/v1/traces` added when the URL has no path). Deterministic: the same log
 * gives the same bytes.
 */
export async function run(ctx: CommandContext): Promise<OtelOutput> {
  if (ctx.positionals[0] !== 'export') throw new UsageError(`otel: unknown action '${ctx.positionals[0]}' (expected: export)`);
  const to = typeof ctx.flags.to === 'string' ? resolve(ctx.cwd, ctx.flags.to) : null;
  const endpoint = typeof ctx.flags.endpoint === 'string' ? tracesUrl(ctx.flags.endpoint, 'otel export: --endpoint') : null;
  if (to !== null && endpoint !== null) throw new UsageError('otel export: give --to FILE or --endpoint URL, not both');
  const log = await openBuildLog(pathsOf(ctx));
  let traces: OtlpTraces;
  try {
    traces = traceOfLog(await readEventsFrom(log), packageVersion());
  } finally {
    await log.close();
  }
  const spans = traces.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
  const traceId = spans[0]?.traceId ?? null;
  const body = `${JSON.stringify(traces)}\n`;
  if (to !== null) writeFileSync(to, body);
  if (endpoint !== null) await post(endpoint, body, (typeof ctx.flags['timeout-seconds'] === 'number' ? ctx.flags['timeout-seconds'] : 10) * 1000);
  return { action: 'export', spans: spans.length, traceId, to, endpoint: endpoint?.href ?? null, ...(to === null && endpoint === null ? { traces } : {}) };
}

/** The collector's traces URL: `/v1/traces` on a URL given without a path (OTLP/HTTP's default). */
export function tracesUrl(text: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${what} '${text}' is not a URL (e.g. http://localhost:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${what} must be http:// or https://, not ${url.protocol}`);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1/traces';
  return url;
}

/** POST the traces (OTLP/HTTP, JSON encoding); a refusal or a timeout is one line naming the collector. */
async function post(url: URL, body: string, timeoutMs: number): Promise<void> {
  const r = await postTraces(url, body, timeoutMs);
  if (r.kind === 'unreachable') throw new EffectError(`otel export: the collector at ${url.href} could not be reached (${r.why}); is it running?`);
  if (r.kind === 'refused') throw new EffectError(`otel export: the collector at ${url.href} refused the traces (HTTP ${r.status}${r.text !== '' ? `: ${r.text.slice(0, 200)}` : ''})`);
}

export function render(d: OtelOutput): string {
  if (d.traces !== undefined) return `${JSON.stringify(d.traces)}\n`;
  return `exported ${d.spans} span${d.spans === 1 ? '' : 's'} of trace ${d.traceId ?? '(none)'} to ${d.to ?? d.endpoint}\n`;
}
