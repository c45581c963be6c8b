import { canonicalJson } from '../../../events/canonical.js';
import type { StoredEvent } from '../../../events/envelope.js';
import { openBuildLog, pathsOf } from '../open-build.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { from: { type: 'int' }, type: { type: 'string', repeatable: true } };

export interface LogOutput {
  /** Read lazily while printing; the log closes when the iteration ends. */
  readonly events: Iterable<StoredEvent>;
}

export async function run(ctx: CommandContext): Promise<LogOutput> {
  const log = openBuildLog(pathsOf(ctx));
  const from = typeof ctx.flags.from === 'number' ? Math.max(1, ctx.flags.from) : 1;
  const types = Array.isArray(ctx.flags.type) ? new Set(ctx.flags.type) : null;
  function* events(): Generator<StoredEvent> {
    try {
      for (const e of log.iterateAll(from)) if (!types || types.has(e.type)) yield e;
    } finally {
      void log.close();
    }
  }
  return { events: events() };
}

/** NDJSON: one object per event (CLI.md), in canonical JSON. */
export function* renderJson(data: LogOutput): Generator<string> {
  for (const e of data.events) {
    yield `${canonicalJson({ position: e.position, type: e.type, revision: e.revision, streamId: e.streamId, schemaVersion: e.schemaVersion, data: e.data, metadata: e.metadata, hash: e.hash, prevHash: e.prevHash })}\n`;
  }
}

export function* render(data: LogOutput): Generator<string> {
  for (const e of data.events) {
    const body = canonicalJson(e.data);
    yield `${String(e.position).padStart(6)}  ${e.hash.slice(0, 12)}  ${e.streamId}@${e.revision}  ${e.type}  ${body.length > 160 ? `${body.slice(0, 159)}…` : body}\n`;
  }
}
