import {
  BACKWARDS, END, EventStoreDBClient, FORWARDS, NO_STREAM, START, StreamNotFoundError, WrongExpectedVersionError, binaryEvent,
  type EventData, type ResolvedEvent,
} from '@eventstore/db-client';
import { canonicalJson } from '../../events/canonical.js';
import { ConcurrencyError, CorruptLogError, ValidationError } from '../../events/errors.js';
import type { NewEvent, StoredEvent } from '../../events/envelope.js';
import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import type { AppendResult, ChainReport, EventLog, ExpectedRevision, LogHead, ReadOptions } from '../../events/event-log.js';
import { prepareNewEvents } from './prepare.js';
import { checkExpected, verifyRawRows, type RawEventRow } from './chain.js';
import { sealPrepared } from './seal.js';
import { prepareVerbatim, rawRowToEvent, type VerbatimImportable } from './verbatim.js';

/*
 * Mapping. A longbuild log is ONE EventStoreDB stream (default `longbuild-log`; one per
 * build). Its ESDB revision r holds the log's global position r+1, so positions are contiguous
 * and an ESDB append with expectedRevision = head-1 is a compare-and-set on the whole log: two
 * writers can never both extend it, and nothing can be skipped. Logical streams (the EventLog's
 * streamId/revision) are carried in each event's envelope, not as separate ESDB streams: ESDB has
 * no atomic append across streams, so one ESDB stream per logical stream could not give one
 * contiguous, hash-chained global order.
 *
 *   ESDB event type      = event type
 *   ESDB data            = the canonical JSON bytes of `data` (binary content type: the exact bytes
 *                          the hash covers survive; a JSON content type would be re-serialised)
 *   ESDB custom metadata = the envelope: { longbuild: 1, position, streamId, revision,
 *                          schemaVersion, metadataJson (canonical text), prevHash, hash }
 *   ESDB event id        = a UUID taken from the event's hash (a retried identical append is
 *                          idempotent on the server)
 *
 * A logical stream's expected revision is checked against an index of the log this client builds
 * by catching up; if the ESDB compare-and-set then fails (another writer appended anything), the
 * client catches up and re-checks: a real conflict on the logical stream is a ConcurrencyError,
 * an append to another stream is retried at the new head.
 */

/** Loads the client package now (the CLI's bundle loads it on first use): throws MODULE_NOT_FOUND when it is not installed. */
export function loadEventStoreClient(): string {
  return typeof START;
}

export interface EventStoreLogOptions {
  /** EventStoreDB connection string, e.g. esdb://localhost:2113?tls=false */
  readonly url?: string;
  /** A client to use instead of `url` (the caller keeps ownership unless `ownsClient`). */
  readonly client?: EventStoreDBClient;
  /** The ESDB stream that holds the whole log (one per build). */
  readonly stream?: string;
  readonly catalogue?: EventCatalogue;
  /** Events per read request when walking the log. */
  readonly pageSize?: number;
}

interface Envelope {
  longbuild: 1;
  position: number;
  streamId: string;
  revision: number;
  schemaVersion: number;
  metadataJson: string;
  prevHash: string;
  hash: string;
}

export interface LogSubscription {
  /** Stop following; resolves once no more events will be delivered. */
  close(): Promise<void>;
  /** Settles when the subscription ends: resolves on close(), rejects on a broken chain or server error. */
  readonly done: Promise<void>;
}

const MAX_APPEND_RETRIES = 50;
const IMPORT_CHUNK_BYTES = 512 * 1024;
const STREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export class EventStoreEventLog implements EventLog, VerbatimImportable {
  readonly stream: string;
  private readonly client: EventStoreDBClient;
  private readonly ownsClient: boolean;
  private readonly catalogue: EventCatalogue;
  private readonly pageSize: number;
  /** What this client knows of the log: the head it has read up to, and each stream's positions. */
  private known: { head: LogHead | null; streams: Map<string, number[]> } = { head: null, streams: new Map() };
  private queue: Promise<unknown> = Promise.resolve();

  constructor(options: EventStoreLogOptions) {
    const stream = options.stream ?? 'longbuild-log';
    if (!STREAM_NAME.test(stream)) throw new ValidationError(`invalid EventStoreDB stream name ${JSON.stringify(stream)}`);
    this.stream = stream;
    if (options.client) {
      this.client = options.client;
      this.ownsClient = false;
    } else if (options.url) {
      this.client = EventStoreDBClient.connectionString(options.url);
      this.ownsClient = true;
    } else {
      throw new ValidationError('EventStoreDB log needs a url or a client');
    }
    this.catalogue = options.catalogue ?? domainCatalogue;
    this.pageSize = options.pageSize ?? 512;
  }

  /** Run `task` after every earlier append/catch-up of this instance (the index is shared state). */
  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Read what other writers appended since this client last looked, into the index. */
  private async catchUp(): Promise<void> {
    for (;;) {
      const from = this.known.head?.position ?? 0;
      const rows = await this.readRaw(BigInt(from), 'forwards', this.pageSize);
      for (const row of rows) this.index(row);
      if (rows.length < this.pageSize) return;
    }
  }

  private index(row: RawEventRow): void {
    const expected = (this.known.head?.position ?? 0) + 1;
    if (row.position !== expected) throw new CorruptLogError(expected, `expected position ${expected}, found ${row.position}`);
    const positions = this.known.streams.get(row.streamId) ?? [];
    if (row.revision !== positions.length) throw new CorruptLogError(row.position, `stream '${row.streamId}' revision ${row.revision}, expected ${positions.length}`);
    positions.push(row.position);
    this.known.streams.set(row.streamId, positions);
    this.known.head = { position: row.position, hash: row.hash };
  }

  private revisionOf(streamId: string): number {
    return (this.known.streams.get(streamId)?.length ?? 0) - 1;
  }

  /** Append sealed rows at the known head; false when another writer moved the head first. */
  private async appendRows(rows: readonly RawEventRow[]): Promise<boolean> {
    const head = this.known.head;
    try {
      await this.client.appendToStream(this.stream, rows.map(toEsdbEvent), { expectedRevision: head ? BigInt(head.position - 1) : NO_STREAM });
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) return false;
      throw err;
    }
    for (const row of rows) this.index(row);
    return true;
  }

  async append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const prepared = prepareNewEvents(streamId, events, this.catalogue);
    return this.serial(async () => {
      for (let attempt = 0; attempt < MAX_APPEND_RETRIES; attempt++) {
        await this.catchUp();
        const current = this.revisionOf(streamId);
        checkExpected(streamId, expected, current);
        const { rows, events: stored } = sealPrepared(streamId, prepared, this.known.head, current);
        if (await this.appendRows(rows)) {
          const last = stored[stored.length - 1]!;
          return { nextRevision: last.revision, position: last.position, events: stored };
        }
      }
      throw new ConcurrencyError(streamId, String(expected), this.revisionOf(streamId));
    });
  }

  async importVerbatim(events: readonly StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.serial(async () => {
      await this.catchUp();
      const rows = prepareVerbatim(events, this.known.head);
      // The server refuses appends over its max append size (1 MiB by default): import in chunks,
      // each a compare-and-set on the previous one's head.
      for (const chunk of chunkBySize(rows, IMPORT_CHUNK_BYTES)) {
        if (!(await this.appendRows(chunk))) throw new ConcurrencyError(this.stream, String(chunk[0]!.position - 1), this.known.head?.position ?? -1);
      }
    });
  }

  async readAll(options: ReadOptions = {}): Promise<StoredEvent[]> {
    if (options.limit === 0) return [];
    const backwards = options.direction === 'backwards';
    const from = options.from;
    if (from !== undefined && from < 1) return backwards ? [] : this.readAll({ ...options, from: 1 });
    const rows = await this.readRaw(from === undefined ? (backwards ? END : START) : BigInt(from - 1), backwards ? 'backwards' : 'forwards', options.limit);
    return rows.map(rawRowToEvent);
  }

  async readStream(streamId: string, options: ReadOptions = {}): Promise<StoredEvent[]> {
    await this.serial(() => this.catchUp());
    const positions = this.known.streams.get(streamId) ?? [];
    const limit = options.limit ?? Number.MAX_SAFE_INTEGER;
    let wanted: number[];
    if (options.direction === 'backwards') {
      const start = Math.min(options.from ?? positions.length - 1, positions.length - 1);
      wanted = start < 0 ? [] : positions.slice(Math.max(0, start - limit + 1), start + 1).reverse();
    } else {
      const start = Math.max(options.from ?? 0, 0);
      wanted = positions.slice(start, start + limit);
    }
    if (wanted.length === 0) return [];
    // One read over the span, filtered: the log interleaves streams, and one request beats many.
    const lo = Math.min(...wanted);
    const hi = Math.max(...wanted);
    const want = new Set(wanted);
    const rows = (await this.readRaw(BigInt(lo - 1), 'forwards', hi - lo + 1)).filter((r) => want.has(r.position));
    const events = rows.map(rawRowToEvent);
    return options.direction === 'backwards' ? events.reverse() : events;
  }

  async head(): Promise<LogHead | null> {
    const [last] = await this.readRaw(END, 'backwards', 1);
    return last ? { position: last.position, hash: last.hash } : null;
  }

  /** The server's own last revision is the anchor (an ESDB stream cannot be cut from below us). */
  async anchor(): Promise<LogHead | null> {
    return this.head();
  }

  async readHashes(from: number, limit: number): Promise<string[]> {
    return (await this.readAll({ from, limit })).map((e) => e.hash);
  }

  async streamRevision(streamId: string): Promise<number> {
    await this.serial(() => this.catchUp());
    return this.revisionOf(streamId);
  }

  /**
   * Walk the whole ESDB stream with the shared verifier. The anchor is the server's own
   * last revision: ESDB streams are append-only, so the tail cannot be cut without the revision
   * numbers showing it.
   */
  async verifyChain(): Promise<ChainReport> {
    const rows: RawEventRow[] = [];
    let undecodable: { position: number; problem: string } | undefined;
    let lastRevision = -1n;
    let lastHash = '';
    outer: for (let next = 0n; ; ) {
      const page = await this.readResolved(next, 'forwards', this.pageSize);
      for (const resolved of page) {
        const revision = resolved.event!.revision;
        try {
          const row = fromResolved(resolved);
          rows.push(row);
          lastRevision = revision;
          lastHash = row.hash;
        } catch (err) {
          undecodable = { position: Number(revision) + 1, problem: (err as Error).message };
          break outer;
        }
      }
      if (page.length < this.pageSize) break;
      next = lastRevision + 1n;
    }
    const anchor = lastRevision >= 0n ? { position: Number(lastRevision) + 1, hash: lastHash } : undefined;
    // With an undecodable event, walk the decodable prefix (anchored at its own end) first, so an
    // earlier bad link is still the one reported; otherwise the undecodable event is the first.
    const report = verifyRawRows(rows, anchor);
    if (!report.ok || !undecodable) return report;
    return { ok: false, events: report.events, headHash: report.headHash, problems: [undecodable] };
  }

  /**
   * Follow the log from `fromPosition` (inclusive) as it grows: a catch-up subscription for
   * projections. Events arrive in position order; `onEvent` is awaited before the next one.
   */
  subscribe(fromPosition: number, onEvent: (event: StoredEvent) => void | Promise<void>): LogSubscription {
    // ESDB subscriptions start *after* the given revision; position p lives at revision p-1.
    const subscription = this.client.subscribeToStream(this.stream, { fromRevision: fromPosition <= 1 ? START : BigInt(fromPosition - 2) });
    let closing = false;
    const done = (async () => {
      let expected = Math.max(fromPosition, 1);
      try {
        for await (const resolved of subscription) {
          if (!resolved.event) continue;
          const row = fromResolved(resolved);
          if (row.position !== expected) throw new CorruptLogError(expected, `subscription expected position ${expected}, received ${row.position}`);
          expected += 1;
          await onEvent(rawRowToEvent(row));
        }
      } catch (err) {
        if (!closing) throw err;
      } finally {
        await subscription.unsubscribe().catch(() => undefined);
      }
    })();
    done.catch(() => undefined); // the caller observes failures through `done`
    return {
      done,
      close: async () => {
        closing = true;
        await subscription.unsubscribe();
        await done.catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    await this.queue;
    if (this.ownsClient) await this.client.dispose();
  }

  private async readResolved(from: bigint | typeof START | typeof END, direction: 'forwards' | 'backwards', limit: number | undefined): Promise<ResolvedEvent[]> {
    const out: ResolvedEvent[] = [];
    try {
      const read = this.client.readStream(this.stream, {
        fromRevision: from,
        direction: direction === 'backwards' ? BACKWARDS : FORWARDS,
        maxCount: BigInt(limit ?? Number.MAX_SAFE_INTEGER),
      });
      for await (const resolved of read) if (resolved.event) out.push(resolved);
    } catch (err) {
      if (err instanceof StreamNotFoundError) return [];
      throw err;
    }
    return out;
  }

  private async readRaw(from: bigint | typeof START | typeof END, direction: 'forwards' | 'backwards', limit: number | undefined): Promise<RawEventRow[]> {
    return (await this.readResolved(from, direction, limit)).map(fromResolved);
  }
}

function toEsdbEvent(row: RawEventRow): EventData {
  const envelope: Envelope = {
    longbuild: 1,
    position: row.position,
    streamId: row.streamId,
    revision: row.revision,
    schemaVersion: row.schemaVersion,
    metadataJson: row.metadataJson,
    prevHash: row.prevHash,
    hash: row.hash,
  };
  return binaryEvent({
    id: uuidFromHash(row.hash),
    type: row.type,
    data: Buffer.from(row.dataJson, 'utf8'),
    metadata: Buffer.from(canonicalJson(envelope), 'utf8'),
  });
}

/** Decode one ESDB event into a stored row; anything that is not our envelope is corrupt. */
function fromResolved(resolved: ResolvedEvent): RawEventRow {
  const e = resolved.event!;
  const position = Number(e.revision) + 1;
  const env = (e.metadata instanceof Uint8Array ? safeJson(Buffer.from(e.metadata).toString('utf8')) : e.metadata) as Partial<Envelope> | undefined;
  if (!env || env.longbuild !== 1 || typeof env.position !== 'number' || typeof env.streamId !== 'string' || typeof env.revision !== 'number'
    || typeof env.schemaVersion !== 'number' || typeof env.metadataJson !== 'string' || typeof env.prevHash !== 'string' || typeof env.hash !== 'string') {
    throw new CorruptLogError(position, 'EventStoreDB event has no longbuild envelope in its metadata');
  }
  if (!(e.data instanceof Uint8Array)) throw new CorruptLogError(position, 'EventStoreDB event data is not the binary canonical JSON longbuild writes');
  return {
    position: env.position,
    streamId: env.streamId,
    revision: env.revision,
    type: e.type,
    schemaVersion: env.schemaVersion,
    dataJson: Buffer.from(e.data).toString('utf8'),
    metadataJson: env.metadataJson,
    prevHash: env.prevHash,
    hash: env.hash,
  };
}

function chunkBySize(rows: readonly RawEventRow[], maxBytes: number): RawEventRow[][] {
  const chunks: RawEventRow[][] = [];
  let current: RawEventRow[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = row.dataJson.length + row.metadataJson.length + 400;
    if (current.length > 0 && bytes + size > maxBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(row);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** A valid (version 5 layout) UUID from the first 128 bits of a SHA-256 hex hash. */
function uuidFromHash(hash: string): string {
  const h = hash.slice(0, 32).split('');
  h[12] = '5';
  h[16] = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}
