import { canonicalJson } from '../../../events/canonical.js';
import { SCHEMA_VERSIONS } from '../../../events/schema-versions.js';
import { UsageError } from '../../../events/errors.js';
import type { StoredEvent } from '../../../events/envelope.js';
import { followLog, openLogForReading, readLogEvents } from '../../app/log-reading.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { from: { type: 'int' }, type: { type: 'string', repeatable: true }, follow: { type: 'boolean' }, limit: { type: 'int' }, tail: { type: 'int' } };

export interface LogOutput {
  /** Read lazily while printing; the log closes when the iteration ends. */
  readonly events: Iterable<StoredEvent>;
}

export async function run(ctx: CommandContext): Promise<LogOutput> {
  const types = Array.isArray(ctx.flags.type) ? new Set(ctx.flags.type) : null;
  // A type the catalogue does not know can match nothing: say so rather than print nothing.
  const unknown = [...(types ?? [])].filter((t) => !(t in SCHEMA_VERSIONS));
  if (unknown.length > 0) throw new UsageError(`log: unknown event type '${unknown[0]}' (known: ${Object.keys(SCHEMA_VERSIONS).sort().join(', ')})`);
  const limit = typeof ctx.flags.limit === 'number' ? ctx.flags.limit : null;
  const tail = typeof ctx.flags.tail === 'number' ? ctx.flags.tail : null;
  if (limit !== null && tail !== null) throw new UsageError('log: give --limit N (the first N) or --tail N (the last N), not both');
  if ((limit !== null || tail !== null) && ctx.flags.follow === true) throw new UsageError('log: --follow prints every event as it comes; --limit and --tail do not go with it');
  const log = await openLogForReading(ctx);
  const from = typeof ctx.flags.from === 'number' ? Math.max(1, ctx.flags.from) : 1;
  if (ctx.flags.follow === true) {
    const line = ctx.json ? jsonLine : textLine;
    await followLog(log, from, types, (events) => ctx.stdout(events.map(line).join('')));
    return { events: [] };
  }
  return { events: await readLogEvents(log, { from, types, ...(limit !== null ? { limit } : {}), ...(tail !== null ? { tail } : {}) }) };
}

const jsonLine = (e: StoredEvent): string =>
  `${canonicalJson({ position: e.position, type: e.type, revision: e.revision, streamId: e.streamId, schemaVersion: e.schemaVersion, data: e.data, metadata: e.metadata, hash: e.hash, prevHash: e.prevHash })}\n`;

function textLine(e: StoredEvent): string {
  const body = canonicalJson(e.data);
  return `${String(e.position).padStart(6)}  ${e.hash.slice(0, 12)}  ${e.streamId}@${e.revision}  ${e.type}  ${body.length > 160 ? `${body.slice(0, 159)}…` : body}\n`;
}

/** NDJSON: one object per event (docs/cli.md), in canonical JSON. */
export function* renderJson(data: LogOutput): Generator<string> {
  for (const e of data.events) yield jsonLine(e);
}

export function* render(data: LogOutput): Generator<string> {
  for (const e of data.events) yield textLine(e);
}
