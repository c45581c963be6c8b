import { StorageError } from '../../events/errors.js';
import { ChainSealer, type NewEvent, type StoredEvent } from '../../events/envelope.js';
import { domainCatalogue, type EventCatalogue } from '../../events/catalogue.js';
import type { AppendResult, ChainReport, ExpectedRevision, LogHead } from '../../events/event-log.js';
import { checkExpected, verifyRawRows } from './chain.js';
import { HEAD_SQL, SqliteLogReader, STREAM_REVISION_SQL, type SqliteReaderOptions } from './sqlite-log-reader.js';
import { checkAppendShape, newBatchMemo, prepareNewEvent } from './prepare.js';
import { BatchWriterError, SqliteBatchWriter } from './sqlite-batch-writer.js';
import { prepareVerbatim } from './verbatim.js';
import { CODEC_DEFLATE_DICT_2, encodeBody, hashBytes } from './row-codec.js';
import { ROW_NAMES_SCHEMA } from './row-names.js';
import { assertWritable, formatBytes, PAGE_CACHE_PRAGMA } from '../../projections/storage-guard.js';

export interface SqliteLogOptions extends SqliteReaderOptions {
  /** FULL (default) fsyncs every commit; NORMAL may lose the last commits on power loss (never corrupts). */
  readonly synchronous?: 'FULL' | 'NORMAL';
  readonly catalogue?: EventCatalogue;
  /**
   * Batches of at least this many events are stored by a second thread while this one
   * validates and hashes (default 2048; `false`: always in-thread). File logs only.
   */
  readonly parallelAppend?: number | false;
  /** Store appends of fewer than 64 events in the compact row form (default true; decision 0024). `false`: text rows only. */
  readonly compactRows?: boolean;
}

/** Columns of an event row, in insert order. */
const COLUMNS = 9;
/** Rows per multi-row INSERT in a batch append (9 parameters each; SQLite allows 32 766). */
const ROWS_PER_INSERT = 64;
/** Rows per hand-over to the writer thread: big enough that messaging is noise, small enough to overlap. */
const ROWS_PER_HANDOFF = 1024;
/** Times a writer-thread batch is sealed again after another writer committed first. */
const STALE_ATTEMPTS = 3;
/** Batches of at least this many events go through the writer thread by default. */
const PARALLEL_MIN_EVENTS = 2048;
/**
 * Appends of fewer events (a controller step's) are stored in the compact row form (decision
 * 0024: ~4x fewer bytes); bulk appends stay text, where deflating each row would halve throughput.
 */
const COMPACT_MAX_EVENTS = ROWS_PER_INSERT - 1;

const INSERT_SQL = 'INSERT INTO events (position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)';
const INSERT_MANY_SQL = `INSERT INTO events (position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash) VALUES ${Array.from({ length: ROWS_PER_INSERT }, () => '(?,?,?,?,?,?,?,?,?)').join(',')}`;
const SET_ANCHOR_SQL = 'INSERT INTO chain_head (id, position, hash) VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET position = excluded.position, hash = excluded.hash';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position       INTEGER PRIMARY KEY,
  stream_id      TEXT    NOT NULL,
  revision       INTEGER NOT NULL,
  type           TEXT    NOT NULL,
  schema_version INTEGER NOT NULL,
  data           TEXT    NOT NULL,
  metadata       TEXT    NOT NULL,
  prev_hash      TEXT    NOT NULL,
  hash           TEXT    NOT NULL,
  UNIQUE (stream_id, revision)
);
CREATE TABLE IF NOT EXISTS chain_head (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  position INTEGER NOT NULL,
  hash     TEXT    NOT NULL
);
${ROW_NAMES_SCHEMA}
`;

/** A compact row's previous hash: empty, the hash of the row before it (decision 0034). */
const PREVIOUS_ROW = Buffer.alloc(0);

/**
 * The embedded event log: one SQLite file, WAL, synchronous=FULL by default.
 * better-sqlite3 is synchronous; the async port methods resolve immediately.
 * A `chain_head` row, written in the same transaction as every append, anchors
 * the tail so a truncated log is detected.
 */
export class SqliteEventLog extends SqliteLogReader {
  private readonly catalogue: EventCatalogue;
  private readonly stmts;
  private readonly path: string;
  private readonly synchronous: 'FULL' | 'NORMAL';
  private readonly parallelMin: number;
  private readonly compactMax: number;
  private writer: SqliteBatchWriter | undefined;
  private writerUnavailable: string | undefined;
  /** A transaction opened by `hold()` and not yet synced. */
  private held = false;

  constructor(options: SqliteLogOptions) {
    const synchronous = options.synchronous ?? 'FULL';
    super(options, (db) => {
      if (!options.readonly) {
        db.pragma('journal_mode = WAL');
        db.exec(SCHEMA);
      }
      db.pragma(`synchronous = ${synchronous}`);
    });
    this.catalogue = options.catalogue ?? domainCatalogue;
    this.path = options.path;
    this.synchronous = synchronous;
    const inMemory = options.path === ':memory:' || options.path === '';
    this.parallelMin = options.parallelAppend === false || options.readonly || inMemory ? Infinity : options.parallelAppend ?? PARALLEL_MIN_EVENTS;
    this.compactMax = options.compactRows === false ? 0 : COMPACT_MAX_EVENTS;
    this.stmts = {
      insertMany: this.db.prepare(INSERT_MANY_SQL),
      insert: this.db.prepare(INSERT_SQL),
      setAnchor: this.db.prepare(SET_ANCHOR_SQL),
    };
  }

  /**
   * Hold the appends that follow in one open write transaction (BEGIN IMMEDIATE: the write lock
   * is taken now), durable together at `sync()`: the controller's group commit (decision 0017).
   */
  hold(): void {
    if (this.held || this.db.inTransaction) return;
    assertWritable(this.path);
    this.db.exec('BEGIN IMMEDIATE');
    this.held = true;
  }

  /** Commit what `hold()` held (one fsync); on failure it is rolled back and the error thrown. */
  sync(): void {
    if (!this.held) return;
    this.held = false;
    try {
      assertWritable(this.path);
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.names.forget(); // names the rolled-back appends added are gone
      throw err;
    }
  }

  /** Synchronous append, used by the async port method and by hot paths. */
  appendSync(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): AppendResult {
    checkAppendShape(streamId, events);
    if (!this.held) assertWritable(this.path); // held: checked when the transaction began, and again at its commit
    const writer = events.length >= this.parallelMin && !this.db.inTransaction ? this.batchWriter() : undefined;
    if (writer !== undefined) {
      const result = this.appendThroughWriter(writer, streamId, events, expected);
      if (result !== undefined) return result;
    }
    try {
      return this.appendInTransaction.immediate(streamId, events, expected);
    } catch (err) {
      this.names.forget(); // names it added rolled back with it
      throw err;
    }
  }

  /**
   * The append's transaction, made once (better-sqlite3 builds a wrapper and its three variants
   * for every `transaction()`, ~5 µs of a single durable append). Each event is validated and
   * canonicalised right before its insert, inside it: a bad event throws, the transaction rolls
   * back and nothing is written, and a big batch never holds a second array of prepared
   * copies.
   */
  private readonly appendInTransaction = this.db.transaction((streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): AppendResult => {
    const current = this.streamRevisionSync(streamId);
    checkExpected(streamId, expected, current);
    const result = this.seal(streamId, events, this.headSync(), current, ROWS_PER_INSERT, (params) => this.insertRows(params), events.length <= this.compactMax);
    this.stmts.setAnchor.run(result.position, result.events[result.events.length - 1]!.hash);
    return result;
  });

  /**
   * A big batch goes through the writer thread: it stores each chunk of sealed rows while this
   * thread seals the next. The head and the stream revision are read here without the lock
   * (one committed state; a refusal is decided at that read) and the thread checks them under
   * its write lock: if another writer committed in between, nothing is written and the batch
   * is sealed again. Returns undefined when the thread cannot start (append in-thread then).
   */
  private appendThroughWriter(writer: SqliteBatchWriter, streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): AppendResult | undefined {
    for (let attempt = 0; attempt < STALE_ATTEMPTS; attempt++) {
      const current = this.streamRevisionSync(streamId);
      checkExpected(streamId, expected, current);
      const head = this.headSync();
      let result: AppendResult;
      try {
        writer.begin(streamId, this.names.keyOf(streamId) ?? streamId, current, head);
        // A bulk append: text rows (seal is not asked for the compact form), so the params are strings and numbers.
        result = this.seal(streamId, events, head, current, ROWS_PER_HANDOFF, (params) => writer.rows(params as (string | number)[]));
      } catch (err) {
        try { writer.rollback(); } catch { /* the batch is not committed either way */ }
        if (this.writerFailedToStart(err)) return undefined;
        throw err;
      }
      let outcome: ReturnType<SqliteBatchWriter['commit']>;
      try {
        outcome = writer.commit({ position: result.position, hash: result.events[result.events.length - 1]!.hash });
      } catch (err) {
        if (this.writerFailedToStart(err)) return undefined;
        throw err;
      }
      if (outcome === 'committed') return result;
    }
    return undefined; // lost the race every time: the in-thread path takes the lock first
  }

  /** A writer thread that could not start is given up for this log (nothing was written). */
  private writerFailedToStart(err: unknown): boolean {
    if (!(err instanceof BatchWriterError) || !err.startup) return false;
    this.dropWriter(err.message);
    return true;
  }

  /** Stop using the writer thread: later big batches are appended in-thread. */
  private dropWriter(reason: string): void {
    this.writerUnavailable = reason;
    void this.writer?.close();
    this.writer = undefined;
  }

  /**
   * Validate, canonicalise and seal `events` after `head`, handing the rows to
   * `store` `chunkRows` at a time (`compact`: in the compact row form); returns what the append
   * will have stored once committed.
   */
  private seal(
    streamId: string, events: readonly NewEvent[], head: LogHead | null, current: number,
    chunkRows: number, store: (params: (string | number | Buffer)[]) => void, compact = false,
  ): AppendResult {
    const sealer = new ChainSealer(streamId, head, current);
    const streamKey = compact ? this.names.keyFor(streamId) : undefined;
    const memo = newBatchMemo();
    const stored: StoredEvent[] = new Array(events.length);
    const chunk = chunkRows * COLUMNS;
    let params: (string | number | Buffer)[] = [];
    for (let i = 0; i < events.length; i++) {
      const p = prepareNewEvent(events[i]!, i, this.catalogue, memo);
      const prevHash = sealer.hash;
      const hash = sealer.next(p.type, p.schemaVersion, p.dataJson, p.metadataJson);
      const { position, revision } = sealer;
      if (streamKey !== undefined) {
        params.push(position, streamKey, revision, this.names.keyFor(p.type), p.schemaVersion, encodeBody(p.dataJson, p.metadataJson, streamId, CODEC_DEFLATE_DICT_2), '', position > 1 ? PREVIOUS_ROW : hashBytes(prevHash), hashBytes(hash));
      } else params.push(position, streamId, revision, p.type, p.schemaVersion, p.dataJson, p.metadataJson, prevHash, hash);
      if (params.length === chunk) {
        store(params);
        params = [];
      }
      stored[i] = { position, streamId, revision, type: p.type, schemaVersion: p.schemaVersion, data: p.data, metadata: p.metadata, prevHash, hash };
    }
    if (params.length > 0) store(params);
    return { nextRevision: sealer.revision, position: sealer.position, events: stored };
  }

  /** Rows go to SQLite ROWS_PER_INSERT at a time (one multi-row INSERT), the rest one by one. */
  private insertRows(params: (string | number | Buffer)[]): void {
    if (params.length === ROWS_PER_INSERT * COLUMNS) {
      this.stmts.insertMany.run(params);
      return;
    }
    for (let k = 0; k < params.length; k += COLUMNS) this.stmts.insert.run(params.slice(k, k + COLUMNS));
  }

  /**
   * The writer thread, started on the first big batch; undefined where it cannot run. A thread
   * that failed (could not start, or stopped answering) is not used again: later batches are
   * appended in-thread, under the lock, from the head as it is.
   */
  private batchWriter(): SqliteBatchWriter | undefined {
    if (this.writer?.failure !== undefined) this.dropWriter(this.writer.failure);
    if (this.writerUnavailable !== undefined) return undefined;
    this.writer ??= new SqliteBatchWriter({
      path: this.path,
      busyTimeoutMs: this.busyTimeoutMs,
      synchronous: this.synchronous,
      pageCache: PAGE_CACHE_PRAGMA,
      sql: { streamRevision: STREAM_REVISION_SQL, head: HEAD_SQL, insertMany: INSERT_MANY_SQL, insertOne: INSERT_SQL, setAnchor: SET_ANCHOR_SQL },
      rowsPerInsert: ROWS_PER_INSERT,
      columns: COLUMNS,
    });
    return this.writer;
  }

  /** Why big batches are appended in-thread (the writer thread could not start), if they are. */
  get batchWriterUnavailable(): string | undefined {
    return this.writerUnavailable;
  }

  override async append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    try {
      return this.appendSync(streamId, events, expected);
    } catch (err) {
      if (!(err instanceof StorageError) || err.problem !== 'full') throw err;
      // The space it needs: the events' bytes, in pages, twice (WAL frames, then the database), plus index pages.
      const bytes = events.reduce((n, e) => n + JSON.stringify(e.data).length + JSON.stringify(e.metadata ?? {}).length + 256, 0);
      const need = 2 * (Math.ceil(bytes / 4096) + 3) * 4096;
      throw new StorageError(err.path, 'full', `${err.detail}; appending ${events.length} event(s) needs about ${formatBytes(need)}`);
    }
  }

  verifyChainSync(): ChainReport {
    return this.checkChain(verifyRawRows);
  }

  override async verifyChain(): Promise<ChainReport> {
    return this.verifyChainSync();
  }

  override async close(): Promise<void> {
    const writer = this.writer;
    this.writer = undefined;
    if (writer !== undefined) await writer.close();
    // What was held and not synced is dropped, as a crash would drop it (the controller syncs first).
    if (this.held && this.db.open && this.db.inTransaction) {
      try { this.db.exec('ROLLBACK'); } catch { /* closing rolls it back as well */ }
    }
    this.held = false;
    await super.close();
  }

  /** Export/import: store already-sealed events verbatim after the head; see verbatim.ts. */
  override async importVerbatim(events: readonly StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    this.db.transaction(() => {
      const rows = prepareVerbatim(events, this.headSync());
      for (const r of rows) this.stmts.insert.run(r.position, r.streamId, r.revision, r.type, r.schemaVersion, r.dataJson, r.metadataJson, r.prevHash, r.hash);
      const last = rows[rows.length - 1]!;
      this.stmts.setAnchor.run(last.position, last.hash);
    }).immediate();
  }
}

