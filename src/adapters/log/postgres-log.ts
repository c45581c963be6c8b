import pg from 'pg';
import type { PoolClient } from 'pg';
import { ConcurrencyError, ValidationError } from '../../events/errors.js';
import type { NewEvent, StoredEvent } from '../../events/envelope.js';
import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import type { AppendResult, ChainReport, EventLog, ExpectedRevision, LogHead, ReadOptions } from '../../events/event-log.js';
import { prepareNewEvents } from './prepare.js';
import { checkExpected, verifyRawRows, type RawEventRow } from './chain.js';
import { sealPrepared } from './seal.js';
import { prepareVerbatim, rawRowToEvent, type VerbatimImportable } from './verbatim.js';
import { inTransaction, outageLine, reconnectWindowMs, withReconnect, withSchema, type Reconnecting } from './pg-connection.js';
import { createLogTables, fromPg, insertOnTailSql, insertRows, isUniqueViolation, preparedName, readEveryRow, revisionOf, rowArrays, tailOf, type LogTables, type PgEventRow } from './pg-statements.js';

export interface PostgresLogOptions {
  /** postgres://user:password@host:port/database */
  readonly url: string;
  /** Schema holding this log's tables (created if missing); lets tests and builds share a database. */
  readonly schema?: string;
  readonly catalogue?: EventCatalogue;
  /** Connections in the pool (default 4). */
  readonly poolSize?: number;
  /** Checked inside every append transaction, after the expected revision (controller fencing). */
  readonly fence?: AppendFence;
  /** How long a lost server is waited for before an operation fails (default LONGBUILD_PG_RECONNECT_SECONDS, else 30 s). */
  readonly reconnectMs?: number;
  /** Told once per outage (default: one line on stderr). */
  readonly onOutage?: (detail: string) => void;
}

/**
 * A check run inside an append's transaction, after the writer lock and the expected-revision
 * check: throw (a ConcurrencyError) to refuse the append. The controller lease uses it to compare
 * its fencing token with the lease row, atomically with the write.
 */
export type AppendFence = ((client: PoolClient, schema: string) => Promise<void>) & {
  /**
   * The same check as a SELECT that returns a row when the append may go ahead (and locks what it
   * read, e.g. FOR SHARE), its parameters numbered from `$first`: lets `sync()` write a held batch
   * in one statement. Without it, held batches are written in a transaction that calls the fence.
   */
  readonly select?: (schema: string, first: number) => { readonly sql: string; readonly params: readonly unknown[] };
};

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The event log in PostgreSQL. Same rows and canonical texts as the SQLite log, so the same
 * verifier walks both. Global positions are not a sequence (sequences leave gaps and can commit
 * out of order): each append takes `LOCK TABLE events IN EXCLUSIVE MODE` — which blocks other
 * writers, not readers — reads the head and writes head+1.. in the same transaction. Commits are
 * therefore in position order, so any single read sees a contiguous prefix of the log, and two
 * writers in different processes can neither fork a stream nor leave a gap.
 */
export class PostgresEventLog implements EventLog, VerbatimImportable {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly catalogue: EventCatalogue;
  private readonly t: LogTables;
  private initialised: Promise<void> | undefined;
  private readonly fence: AppendFence | undefined;
  private readonly rc: Reconnecting;
  /** `hold()` was called and no `sync()` since: appends are sealed here and written at `sync()`. */
  private holding = false;
  /** Held appends (group commit, decision 0017), sealed on the tail as it was when the first was made. */
  private pending: Pending | null = null;
  /**
   * The tail this object's last sync wrote (null: not known): the next held batch is sealed on it
   * without reading it again — the sync that writes that batch checks it under the writer lock.
   */
  private known: { readonly head: LogHead | null; readonly revisions: ReadonlyMap<string, number> } | null = null;
  /** Held batches written, and how many of them in one statement (the rest: in the transaction of an append). */
  readonly held = { batches: 0, oneStatement: 0 };

  constructor(options: PostgresLogOptions) {
    this.fence = options.fence;
    // Messages name the log as the build records it: the server and the schema.
    const label = withSchema(options.url, options.schema ?? 'longbuild');
    const windowMs = options.reconnectMs ?? reconnectWindowMs();
    this.rc = { url: label, windowMs, onOutage: options.onOutage ?? ((detail) => void process.stderr.write(outageLine(label, windowMs, detail))) };
    const schema = options.schema ?? 'longbuild';
    if (!SCHEMA_NAME.test(schema)) throw new ValidationError(`invalid PostgreSQL schema name ${JSON.stringify(schema)} (lower-case letters, digits, _)`);
    this.schema = schema;
    this.catalogue = options.catalogue ?? domainCatalogue;
    this.pool = new pg.Pool({ connectionString: options.url, max: options.poolSize ?? 4, application_name: 'longbuild' });
    // An idle client's error (server restart) must not crash the process; the next query reports it.
    this.pool.on('error', () => {});
    this.t = { events: `"${schema}".events`, head: `"${schema}".chain_head` };
  }

  /** Open and create the schema if needed; fails fast when the server is unreachable. */
  static async open(options: PostgresLogOptions): Promise<PostgresEventLog> {
    const log = new PostgresEventLog(options);
    try {
      await log.ready();
    } catch (err) {
      await log.close();
      throw err;
    }
    return log;
  }

  private ready(): Promise<void> {
    this.initialised ??= withReconnect(this.rc, () => inTransaction(this.pool, (c) => createLogTables(c, this.schema, this.t))).catch((err: unknown) => {
      this.initialised = undefined;
      throw err;
    });
    return this.initialised;
  }

  /** A read through the pool, waiting out a lost server (reads are safe to repeat). */
  private async q<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    return withReconnect(this.rc, () => this.pool.query<R>(sql, params));
  }

  /**
   * Run an append-like transaction that writes `sealed()` events, surviving a lost connection: a
   * retry first looks for the events the lost attempt sealed, since its COMMIT may have landed
   * before the connection dropped — found (same hash at the same position), it is done; else it
   * is tried again from the top (re-reading the head, the expected revision and the fence).
   */
  private async appendOnce<T>(run: (seal: (events: readonly StoredEvent[]) => void) => Promise<T>, done: (events: readonly StoredEvent[]) => T): Promise<T> {
    let sealed: readonly StoredEvent[] | null = null;
    return withReconnect(this.rc, async (retry) => {
      if (retry > 0 && sealed !== null && sealed.length > 0) {
        const last = sealed[sealed.length - 1]!;
        const r = await this.pool.query<{ hash: string }>(`SELECT hash FROM ${this.t.events} WHERE position = $1`, [last.position]);
        if (r.rows[0]?.hash === last.hash) return done(sealed);
      }
      sealed = null;
      return run((events) => {
        sealed = events;
      });
    });
  }

  /**
   * What opens a writing transaction: BEGIN and the writer lock in one round trip (a simple query
   * may hold several statements). From here until COMMIT this transaction owns the log's tail.
   */
  private get beginWriting(): string {
    return `BEGIN; LOCK TABLE ${this.t.events} IN EXCLUSIVE MODE`;
  }

  /**
   * Group commit (decision 0017): until `sync()`, appends are sealed here, on the log's tail as it
   * was read when the first of them was made, visible to this object's reads and to no one else;
   * `sync()` writes them all in one statement — inserted only if the head row is still the one
   * they were sealed on and the fence's row is there (one round trip for every event of a step,
   * instead of five per append); when it writes nothing, the transaction of an append (the writer
   * lock, the tail, the fence) says why — R-3's ConcurrencyError, a lost lease — or writes them.
   * `close()` drops what was held and not synced, as a crash drops it.
   */
  hold(): void {
    this.holding = true;
  }

  async sync(): Promise<void> {
    this.holding = false;
    const p = this.pending;
    this.pending = null;
    if (p === null || p.rows.length === 0) return;
    const known = this.known;
    this.known = null;
    try {
      // One statement (autocommit): the rows go in only if the head is still the batch's base
      // (and the fence's row is there); else nothing is written, and the transaction below says why.
      const written = this.fence === undefined || this.fence.select !== undefined
        ? await this.appendOnce((seal) => {
          seal(p.events);
          return this.insertOnTail(p);
        }, () => true)
        : false;
      if (written) this.held.oneStatement += 1;
      else await this.appendOnce((seal) => inTransaction(this.pool, async (c) => {
        // Every append moves the head: an unmoved head means no stream moved either.
        const { streamId, revision: before } = p.base.first!;
        const { head, revision } = await tailOf(c, this.t, streamId);
        if (head?.position !== p.base.head?.position || head?.hash !== p.base.head?.hash) throw new ConcurrencyError(streamId, String(before), revision);
        if (this.fence) await this.fence(c, this.schema);
        seal(p.events);
        await insertRows(c, this.t, p.rows);
      }, this.beginWriting), () => undefined);
      this.held.batches += 1;
      // What this sync wrote is the tail the next held batch is sealed on (merged with what was known).
      this.known = { head: p.head, revisions: new Map([...(known?.revisions ?? []), ...p.revisions]) };
    } catch (err) {
      if (isUniqueViolation(err)) throw new ConcurrencyError(p.events[0]!.streamId, 'the log as it was', await this.streamRevision(p.events[0]!.streamId));
      throw err;
    }
  }

  /**
   * Write a held batch in one statement, only if the log's head row is still the batch's base
   * (a compare-and-set on that row: a concurrent writer waits on its lock, then finds it moved)
   * and the fence's row says the append may go ahead. Returns whether it was written.
   */
  private async insertOnTail(p: Pending): Promise<boolean> {
    const rows = p.rows;
    const last = rows[rows.length - 1]!;
    const fence = this.fence?.select?.(this.schema, 14) ?? { sql: 'SELECT 1', params: [] };
    const text = insertOnTailSql(this.t, fence.sql);
    // A named statement: each connection parses and plans it once, not at every sync (the text
    // is the same for every batch of this log; see preparedName).
    const r = await this.pool.query<{ inserted: string }>({
      name: preparedName(text),
      text,
      values: [...rowArrays(rows), last.position, last.hash, p.base.head?.position ?? null, p.base.head?.hash ?? null, ...fence.params],
    });
    return Number(r.rows[0]?.inserted ?? 0) === rows.length;
  }

  /** A held append: sealed on the tail the held batch began on (the last sync's, else read once without the lock) and kept for `sync()`. */
  private async appendHeld(streamId: string, prepared: ReturnType<typeof prepareNewEvents>, expected: ExpectedRevision): Promise<readonly StoredEvent[]> {
    let p = this.pending;
    let read: { head: LogHead | null; revision: number } | null = null;
    if (p === null) {
      // Through the pool (a checked-out client would need its own 'error' listener when the server goes away).
      if (this.known === null) read = await withReconnect(this.rc, () => tailOf(this.pool, this.t, streamId));
      const head = this.known !== null ? this.known.head : read!.head;
      p = this.pending = { base: { head, first: null }, head, revisions: new Map(), rows: [], events: [] };
    }
    if (!p.revisions.has(streamId)) {
      // The stream's revision before this batch: as read, as the last sync left it, or read now.
      const revision = read?.revision ?? this.known?.revisions.get(streamId) ?? await withReconnect(this.rc, () => revisionOf(this.pool, this.t, streamId));
      p.base.first ??= { streamId, revision };
      p.revisions.set(streamId, revision);
    }
    const current = p.revisions.get(streamId)!;
    checkExpected(streamId, expected, current);
    const { rows, events: stored } = sealPrepared(streamId, prepared, p.head, current);
    const last = stored[stored.length - 1]!;
    p.rows.push(...rows);
    p.events.push(...stored);
    p.head = { position: last.position, hash: last.hash };
    p.revisions.set(streamId, last.revision);
    return stored;
  }

  async append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const prepared = prepareNewEvents(streamId, events, this.catalogue);
    await this.ready();
    const result = (stored: readonly StoredEvent[]): AppendResult => {
      const last = stored[stored.length - 1]!;
      return { nextRevision: last.revision, position: last.position, events: [...stored] };
    };
    if (this.holding) return result(await this.appendHeld(streamId, prepared, expected));
    this.known = null;
    try {
      // Round trips: BEGIN and the lock; the head and the revision; the fence (with a lease); the rows and the head; COMMIT.
      return await this.appendOnce((seal) => inTransaction(this.pool, async (c) => {
        const { head, revision: current } = await tailOf(c, this.t, streamId);
        checkExpected(streamId, expected, current);
        if (this.fence) await this.fence(c, this.schema);
        const { rows, events: stored } = sealPrepared(streamId, prepared, head, current);
        seal(stored);
        await insertRows(c, this.t, rows);
        return result(stored);
      }, this.beginWriting), result);
    } catch (err) {
      // Only reachable if a writer bypasses the lock; still never a fork, and still R-3's error.
      if (isUniqueViolation(err)) throw new ConcurrencyError(streamId, String(expected), await this.streamRevision(streamId));
      throw err;
    }
  }

  async importVerbatim(events: readonly StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.ready();
    this.known = null;
    await this.appendOnce((seal) => inTransaction(this.pool, async (c) => {
      const { head } = await tailOf(c, this.t, null);
      const rows = prepareVerbatim(events, head);
      seal(events);
      await insertRows(c, this.t, rows);
    }, this.beginWriting), () => undefined);
  }

  async readAll(options: ReadOptions = {}): Promise<StoredEvent[]> {
    await this.ready();
    const backwards = options.direction === 'backwards';
    const from = options.from ?? (backwards ? Number.MAX_SAFE_INTEGER : 1);
    const r = await this.q<PgEventRow>(
      `SELECT * FROM ${this.t.events} WHERE position ${backwards ? '<=' : '>='} $1 ORDER BY position ${backwards ? 'DESC' : 'ASC'} LIMIT $2`,
      [from, options.limit ?? null],
    );
    return withHeld(r.rows.map((row) => rawRowToEvent(fromPg(row))), this.pending?.events ?? [], (e) => (backwards ? e.position <= from : e.position >= from), backwards, options.limit);
  }

  async anchor(): Promise<LogHead | null> {
    await this.ready();
    if (this.pending !== null && this.pending.events.length > 0) return this.pending.head;
    const a = await this.q<{ position: string; hash: string }>(`SELECT position, hash FROM ${this.t.head} WHERE id = 1`);
    const row = a.rows[0];
    return row ? { position: Number(row.position), hash: row.hash } : null;
  }

  async readHashes(from: number, limit: number): Promise<string[]> {
    await this.ready();
    const r = await this.q<{ hash: string }>(`SELECT hash FROM ${this.t.events} WHERE position >= $1 ORDER BY position ASC LIMIT $2`, [from, limit]);
    return withHeld(r.rows, this.pending?.events ?? [], (e) => e.position >= from, false, limit).map((e) => e.hash);
  }

  async readStream(streamId: string, options: ReadOptions = {}): Promise<StoredEvent[]> {
    await this.ready();
    const backwards = options.direction === 'backwards';
    const from = options.from ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    const r = await this.q<PgEventRow>(
      `SELECT * FROM ${this.t.events} WHERE stream_id = $1 AND revision ${backwards ? '<=' : '>='} $2 ORDER BY revision ${backwards ? 'DESC' : 'ASC'} LIMIT $3`,
      [streamId, from, options.limit ?? null],
    );
    const held = (e: StoredEvent): boolean => e.streamId === streamId && (backwards ? e.revision <= from : e.revision >= from);
    return withHeld(r.rows.map((row) => rawRowToEvent(fromPg(row))), this.pending?.events ?? [], held, backwards, options.limit);
  }

  async head(): Promise<LogHead | null> {
    await this.ready();
    if (this.pending !== null && this.pending.events.length > 0) return this.pending.head;
    const r = await this.q<{ position: string; hash: string }>(`SELECT position, hash FROM ${this.t.events} ORDER BY position DESC LIMIT 1`);
    const row = r.rows[0];
    return row ? { position: Number(row.position), hash: row.hash } : null;
  }

  async streamRevision(streamId: string): Promise<number> {
    await this.ready();
    const held = this.pending?.revisions.get(streamId);
    if (held !== undefined) return held;
    return withReconnect(this.rc, () => revisionOf(this.pool, this.t, streamId));
  }

  /**
   * One REPEATABLE READ snapshot, read in keyset pages, walked by the shared verifier.
   * verifyRawRows takes a synchronous iterable, so the rows are held in memory for the walk.
   */
  async verifyChain(): Promise<ChainReport> {
    await this.ready();
    const { rows, anchor } = await withReconnect(this.rc, () => inTransaction(this.pool, (c) => readEveryRow(c, this.t), 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY'));
    return verifyRawRows(rows, anchor);
  }

  /** Drop a log's schema and everything in it, on its own connection (tests; `longbuild` never calls it). */
  static async dropSchema(url: string, schema: string): Promise<void> {
    if (!SCHEMA_NAME.test(schema)) throw new ValidationError(`invalid PostgreSQL schema name ${JSON.stringify(schema)}`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end();
    }
  }

  /** Run SQL against this log's schema (tests use it to tamper with rows). */
  async query(sql: string, params: unknown[] = []): Promise<unknown[]> {
    await this.ready();
    const c = await this.pool.connect();
    try {
      await c.query(`SET search_path TO "${this.schema}"`);
      return (await c.query(sql, params)).rows;
    } finally {
      await c.query('RESET search_path').catch(() => {});
      c.release();
    }
  }

  async close(): Promise<void> {
    // What was held and not synced is dropped, as a crash would drop it (the controller syncs first).
    this.pending = null;
    this.holding = false;
    if (!this.pool.ended) await this.pool.end();
  }
}

/** Appends held for `sync()`: their rows, their events, the tail they were sealed on, and the tail after them. */
interface Pending {
  /** The tail the batch was sealed on, and the first stream it appends to with that stream's revision then (for R-3's message). */
  readonly base: { readonly head: LogHead | null; first: { readonly streamId: string; readonly revision: number } | null };
  head: LogHead | null;
  readonly revisions: Map<string, number>;
  readonly rows: RawEventRow[];
  readonly events: StoredEvent[];
}

/**
 * A read's committed rows with the held events it covers (all after the committed ones), in the
 * read's order and within its limit.
 */
function withHeld<T>(committed: T[], held: readonly StoredEvent[], wanted: (e: StoredEvent) => boolean, backwards: boolean, limit: number | undefined): T[] {
  const extra = held.filter(wanted) as unknown as T[];
  if (extra.length === 0) return committed;
  // Held events are never committed while held (sync takes them out first): no overlap to remove.
  const all = backwards ? [...[...extra].reverse(), ...committed] : [...committed, ...extra];
  return limit === undefined ? all : all.slice(0, limit);
}

