import type { StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/event-log.js';
import { readPages } from '../log/paging.js';
import { SqliteLogReader } from '../log/sqlite-log-reader.js';
import { openBuildLog } from '../build-dir.js';
import { pause } from '../interrupt.js';
import { pathsOf, type AppContext } from './context.js';

/** How often following the log looks for new events. */
const FOLLOW_POLL_MS = 250;
/** Events read at a time from the log's end by `--tail N --type T` (decision 0053). */
const TAIL_PAGE = 500;

export interface LogQuery {
  readonly from: number;
  /** Only these event types (null: all). */
  readonly types: ReadonlySet<string> | null;
  /** The first N matching events, or the last N (not both). */
  readonly limit?: number;
  readonly tail?: number;
}

/** The build's log opened for reading: `log` changes nothing, and works on a full disk. */
export function openLogForReading(ctx: AppContext): Promise<EventLog> {
  return openBuildLog(pathsOf(ctx), { reading: true });
}

/** The events a query asks for, read lazily on the embedded log (the log closes when the iteration ends). */
export async function readLogEvents(log: EventLog, q: LogQuery, tailPage = TAIL_PAGE): Promise<Iterable<StoredEvent>> {
  if (q.tail !== undefined) return lastOf(log, q.from, q.types, q.tail, tailPage);
  const read = await readMatching(log, q.from, q.types);
  return q.limit !== undefined ? firstOf(read, q.limit) : read;
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

/**
 * The last `n` events at or after `from` of the `types` (all: null), read from the log's end
 * backwards: `n` events when every type counts, pages of `pageSize` until `n` match otherwise. The
 * cost is that of what is printed, not of the log's length (decision 0053: `--tail 5` read a
 * 100,000-event log through). The log is closed when they are read.
 */
async function lastOf(log: EventLog, from: number, types: ReadonlySet<string> | null, n: number, pageSize: number): Promise<StoredEvent[]> {
  const kept: StoredEvent[] = [];
  try {
    let before = Number.MAX_SAFE_INTEGER;
    while (kept.length < n && before >= from) {
      const limit = types === null ? Math.min(n - kept.length, pageSize) : pageSize;
      const page = await log.readAll({ from: before, limit, direction: 'backwards' });
      for (const e of page) {
        if (e.position < from || kept.length === n) break;
        if (types === null || types.has(e.type)) kept.push(e);
      }
      if (page.length < limit) break;
      before = page[page.length - 1]!.position - 1;
    }
  } finally {
    await log.close();
  }
  return kept.reverse();
}

/** The events from `from` of the `types` (all: null), lazily on the embedded log. */
async function readMatching(log: EventLog, from: number, types: ReadonlySet<string> | null): Promise<Iterable<StoredEvent>> {
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
export async function followLog(log: EventLog, from: number, types: ReadonlySet<string> | null, print: (events: readonly StoredEvent[]) => void): Promise<void> {
  let next = from;
  try {
    for (;;) {
      let done = false;
      for await (const page of readPages(log, next)) {
        const shown: StoredEvent[] = [];
        for (const e of page) {
          if (!types || types.has(e.type)) shown.push(e);
          if (e.type === 'BuildCompleted') done = true;
          next = e.position + 1;
        }
        if (shown.length > 0) print(shown);
      }
      if (done || !(await pause(FOLLOW_POLL_MS))) break;
    }
  } finally {
    await log.close();
  }
}

