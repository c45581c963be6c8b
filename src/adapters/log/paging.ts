import type { StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/event-log.js';
import type { ProjectionStore } from '../../projections/engine.js';

/**
 * Reading a whole log through the async port, whatever the backend: keyset pages by
 * global position. 5000 events a page keeps a remote round trip per page cheap relative to the
 * rows it carries, and SQLite pages cost no more than its iterator did.
 */
export const PAGE_SIZE = 5000;

/** The log's events from `from` on (up to `to`, inclusive, when given), one page at a time. */
export async function* readPages(log: EventLog, from = 1, to = Number.POSITIVE_INFINITY, pageSize = PAGE_SIZE): AsyncGenerator<StoredEvent[]> {
  let next = Math.max(1, from);
  while (next <= to) {
    const limit = Number.isFinite(to) ? Math.min(pageSize, to - next + 1) : pageSize;
    const page = await log.readAll({ from: next, limit });
    if (page.length === 0) return;
    yield page;
    if (page.length < limit) return;
    next = page[page.length - 1]!.position + 1;
  }
}

/** Every event from `from` on, in memory (for folds that must run in one synchronous transaction). */
export async function readEventsFrom(log: EventLog, from = 1): Promise<StoredEvent[]> {
  const all: StoredEvent[] = [];
  for await (const page of readPages(log, from)) for (const e of page) all.push(e);
  return all;
}

/** Bring local projections up to the log's head, a page (one transaction per batch) at a time. */
export async function catchUpFromLog(store: ProjectionStore, log: EventLog, pageSize = PAGE_SIZE): Promise<number> {
  let count = 0;
  // Whether the log ends before what the tables reflect is known after the last page only: a store
  // whose newest snapshot is more than a page behind its tables (a long build's state, snapshotted
  // one interval per MiB) was refused as truncated after its first page.
  for await (const page of readPages(log, store.resumeFrom(), Number.POSITIVE_INFINITY, pageSize)) count += store.catchUp(page, undefined, true);
  store.assertNotTruncated();
  return count;
}
