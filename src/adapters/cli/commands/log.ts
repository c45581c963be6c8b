import { canonicalJson } from '../../../events/canonical.js';
import { SCHEMA_VERSIONS } from '../../../events/catalogue.js';
import { UsageError } from '../../../events/errors.js';
import type { StoredEvent } from '../../../events/envelope.js';
import { readPages } from '../../log/paging.js';
import { SqliteLogReader } from '../../log/sqlite-log-reader.js';
import { openBuildLog } from '../../build-dir.js';
import { pathsOf } from '../../app/context.js';
import type { CommandContext, FlagSpec } from '../types.js';
import type { EventLog } from '../../../events/event-log.js';
import { pause } from '../../interrupt.js';

export const flags: Record<string, FlagSpec> = { from: { type: 'int' }, type: { type: 'string', repeatable: true }, follow: { type: 'boolean' }, limit: { type: 'int' }, tail: { type: 'int' } };

/** How often `--follow` looks for new events. */
const FOLLOW_POLL_MS = 250;

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
  // Opened for reading: `log` changes nothing, and works on a full disk (issue 45).
  const log = await openBuildLog(pathsOf(ctx), { reading: true });
  const from = typeof ctx.flags.from === 'number' ? Math.max(1, ctx.flags.from) : 1;
  if (ctx.flags.follow === true) return follow(ctx, log, from, types);
  const read = await readMatching(log, from, types);
  return { events: limit !== null ? firstOf(read, limit) : tail !== null ? lastOf(read, tail) : read };
}

/** The first `n` events. */
function* firstOf(events: Iterable<StoredEvent>, n: number): Generator<StoredEvent> {
  if (n === 0) return;
  let i = 0;
  for (const e of events) {
    yield e;
    if (++i >= n) return;
  }
}

/** The last `n` events (read through, keeping at most 2n at a time). */
function lastOf(events: Iterable<StoredEvent>, n: number): StoredEvent[] {
  let kept: StoredEvent[] = [];
  for (const e of events) {
    kept.push(e);
    if (kept.length >= 2 * n + 1) kept = kept.slice(-n);
  }
  return n === 0 ? [] : kept.slice(-n);
}

/** The events from `from` of the `types` (all: null), lazily on the embedded log. */
async function readMatching(log: Awaited<ReturnType<typeof openBuildLog>>, from: number, types: Set<string> | null): Promise<Iterable<StoredEvent>> {
  if (!(log instanceof SqliteLogReader)) {
    // Renderers are synchronous: a remote log is read through the port, page by page, up front.
    const events: StoredEvent[] = [];
    try {
      for await (const page of readPages(log, from)) for (const e of page) if (!types || types.has(e.type)) events.push(e);
    } finally {
      await log.close();
    }
    return events;
  }
  // The embedded log streams lazily while printing, so a long log never sits in memory.
  const sqlite = log;
  function* events(): Generator<StoredEvent> {
    try {
      for (const e of sqlite.iterateAll(from)) if (!types || types.has(e.type)) yield e;
    } finally {
      void sqlite.close();
    }
  }
  return events();
}

/**
 * `--follow`: print what is there, then each event as it is appended (read through the port, page
 * by page), until the build completes (BuildCompleted printed) or an interrupt; exit 0 either way.
 */
async function follow(ctx: CommandContext, log: EventLog, from: number, types: Set<string> | null): Promise<LogOutput> {
  const line = ctx.json ? jsonLine : textLine;
  let next = from;
  try {
    for (;;) {
      let done = false;
      for await (const page of readPages(log, next)) {
        let out = '';
        for (const e of page) {
          if (!types || types.has(e.type)) out += line(e);
          if (e.type === 'BuildCompleted') done = true;
          next = e.position + 1;
        }
        if (out !== '') ctx.stdout(out);
      }
      if (done || !(await pause(FOLLOW_POLL_MS))) break;
    }
  } finally {
    await log.close();
  }
  return { events: [] };
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
