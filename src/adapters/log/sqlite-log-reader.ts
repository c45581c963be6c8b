/**
 * The embedded event log's reading side (decision 0022): the SQLite file opened, its events read.
 * Reading commands (`status`, `show`, `diff`, the viewer) open the log through this class alone,
 * so they load neither the event schemas (zod, ~40 ms of module loading) nor the append path;
 * `SqliteEventLog` extends it with appends. Appending here is refused; `verifyChain` loads the
 * chain checks when asked.
 */
import Database from 'better-sqlite3';
import type { JsonValue } from '../../events/canonical.js';
import { CorruptLogError, UsageError } from '../../events/errors.js';
import { storedLine, type NewEvent, type StoredEvent } from '../../events/envelope.js';
import type { AppendResult, ChainReport, ExpectedRevision, LogHead, RawStoredEvent, ReadOptions } from '../../events/event-log.js';
import type { RawEventRow } from './chain.js';
import type { TransferableEventLog } from './verbatim.js';
import { decodeTexts, hexOf, hexSql, readTexts } from './row-codec.js';
import { RowNames } from './row-names.js';
import { closeDatabase, openDatabase, openDatabaseToRead } from '../../projections/storage-guard.js';

export interface SqliteReaderOptions {
  /** File path, or ':memory:'. */
  readonly path: string;
  /** How long a writer waits for another process's lock, ms. */
  readonly busyTimeoutMs?: number;
  readonly readonly?: boolean;
}

function readOnly(): Error {
  return new UsageError('this event log was opened for reading (a reading command); open it with openEventLog without `reading` to append');
}

export const HEAD_SQL = `SELECT position, ${hexSql('hash')} AS hash FROM events ORDER BY position DESC LIMIT 1`;
/** A stream's rows store its id as text or as its key (decision 0034): both are asked for (the name twice when it has no key). */
export const STREAM_REVISION_SQL = 'SELECT MAX(revision) AS r FROM events WHERE stream_id IN (?, ?)';
/** The columns of a row, as stored: text, or a compact row's BLOBs (decision 0024), decoded by the reader. */
const COLUMNS_SQL = 'position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash';

export class SqliteLogReader implements TransferableEventLog {
  readonly db: Database.Database;
  protected readonly reads;
  /** Stream ids and types stored by key (decision 0034). */
  protected readonly names: RowNames;
  /** How long a writer waits for another process's lock, ms. */
  protected readonly busyTimeoutMs: number;

  /** Opens the file as it is (a reader changes nothing: no schema, no journal mode). */
  constructor(options: SqliteReaderOptions, prepare?: (db: Database.Database) => void) {
    const inMemory = options.path === ':memory:' || options.path === '';
    this.db = inMemory ? new Database(options.path) : options.readonly === true ? openDatabase(options.path, { readonly: true }) : openDatabaseToRead(options.path);
    this.busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
    if (prepare !== undefined) prepare(this.db);
    else this.checkTables(options.path);
    this.names = new RowNames(this.db);
    this.reads = {
      hashAt: this.db.prepare('SELECT hash FROM events WHERE position = ?').pluck(true),
      head: this.db.prepare(HEAD_SQL),
      anchor: this.db.prepare('SELECT position, hash FROM chain_head WHERE id = 1'),
      streamRev: this.db.prepare(STREAM_REVISION_SQL),
      allFwd: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events WHERE position >= ? ORDER BY position ASC LIMIT ?`).raw(true),
      allBwd: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events WHERE position <= ? ORDER BY position DESC LIMIT ?`).raw(true),
      streamFwd: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events WHERE stream_id IN (?, ?) AND revision >= ? ORDER BY revision ASC LIMIT ?`).raw(true),
      streamBwd: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events WHERE stream_id IN (?, ?) AND revision <= ? ORDER BY revision DESC LIMIT ?`).raw(true),
      iterate: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events ORDER BY position ASC`).raw(true),
      hashes: this.db.prepare(`SELECT ${hexSql('hash')} FROM events WHERE position >= ? ORDER BY position ASC LIMIT ?`).pluck(true),
      // Raw rows (arrays) in a fixed column order: the replay path builds no intermediate objects.
      replay: this.db.prepare(`SELECT ${COLUMNS_SQL} FROM events WHERE position >= ? ORDER BY position ASC`).raw(true),
    };
  }

  /** A reader creates nothing: a file without the log's tables is refused in one line. */
  private checkTables(path: string): void {
    const have = new Set(this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('events', 'chain_head')").pluck(true).all() as string[]);
    const missing = ['events', 'chain_head'].filter((t) => !have.has(t));
    if (missing.length === 0) return;
    closeDatabase(this.db);
    throw new CorruptLogError(0, `${path} has no ${missing.join(' or ')} table (not a longbuild event log, or a damaged one); run \`longbuild verify\``);
  }

  /** Refused: this log was opened for reading (a reading command never appends). */
  async append(_streamId: string, _events: readonly NewEvent[], _expected: ExpectedRevision): Promise<AppendResult> {
    throw readOnly();
  }

  /** Refused, as `append`. */
  async importVerbatim(_events: readonly StoredEvent[]): Promise<void> {
    throw readOnly();
  }

  readAllSync(options: ReadOptions = {}): StoredEvent[] {
    const limit = options.limit ?? -1;
    const backwards = options.direction === 'backwards';
    const rows = (backwards
      ? this.reads.allBwd.all(options.from ?? Number.MAX_SAFE_INTEGER, limit)
      : this.reads.allFwd.all(options.from ?? 1, limit)) as RawRow[];
    return toEvents(this.resolvedAll(rows, backwards));
  }

  async readAll(options: ReadOptions = {}): Promise<StoredEvent[]> {
    return this.readAllSync(options);
  }

  async readStoredRows(from: number, limit: number): Promise<RawStoredEvent[]> {
    return this.resolvedAll(this.reads.allFwd.all(from, limit) as RawRow[], false).map(([position, streamId, revision, type, schemaVersion, data, metadata, prevHash, hash]) => {
      const [dataJson, metadataJson] = decodeTexts(data, metadata, streamId, position);
      return { position, streamId, revision, type, schemaVersion, dataJson, metadataJson, prevHash: hexOf(prevHash), hash: hexOf(hash) };
    });
  }

  /** Stream events one at a time without holding them all in memory. */
  *iterateAll(from = 1): Generator<StoredEvent> {
    const memo: MetadataReadMemo = { text: undefined, value: undefined };
    const link = newLink();
    for (const r of this.reads.replay.iterate(from) as Iterable<RawRow>) yield rawToEvent(this.resolved(r, link), memo);
  }

  async readStream(streamId: string, options: ReadOptions = {}): Promise<StoredEvent[]> {
    const limit = options.limit ?? -1;
    const backwards = options.direction === 'backwards';
    const key = this.names.keyOf(streamId) ?? streamId;
    const rows = (backwards
      ? this.reads.streamBwd.all(streamId, key, options.from ?? Number.MAX_SAFE_INTEGER, limit)
      : this.reads.streamFwd.all(streamId, key, options.from ?? 0, limit)) as RawRow[];
    return toEvents(this.resolvedAll(rows, backwards));
  }

  headSync(): LogHead | null {
    const head = this.reads.head.get() as LogHead | undefined;
    return head ?? null;
  }

  async head(): Promise<LogHead | null> {
    return this.headSync();
  }

  streamRevisionSync(streamId: string): number {
    return (this.reads.streamRev.get(streamId, this.names.keyOf(streamId) ?? streamId) as { r: number | null }).r ?? -1;
  }

  async streamRevision(streamId: string): Promise<number> {
    return this.streamRevisionSync(streamId);
  }

  anchorSync(): LogHead | null {
    return (this.reads.anchor.get() as LogHead | undefined) ?? null;
  }

  async anchor(): Promise<LogHead | null> {
    return this.anchorSync();
  }

  readHashesSync(from: number, limit: number): string[] {
    return this.reads.hashes.all(from, limit) as string[];
  }

  async readHashes(from: number, limit: number): Promise<string[]> {
    return this.readHashesSync(from, limit);
  }

  async readStoredLines(from: number, limit: number): Promise<{ type: string; line: string }[]> {
    return (await this.readStoredRows(from, limit)).map((row) => ({ type: row.type, line: storedLine(row) }));
  }

  /** The chain walked end to end, the chain checks loaded on first use. */
  async verifyChain(): Promise<ChainReport> {
    return this.checkChain((await import('./chain.js')).verifyRawRows);
  }

  /** The anchor and the rows are read in one read transaction: one snapshot, even while another process appends. */
  protected checkChain(verify: (rows: Iterable<RawEventRow>, anchor: LogHead | undefined) => ChainReport): ChainReport {
    return this.db.transaction(() => verify(this.chainRows(), this.reads.anchor.get() as LogHead | undefined))();
  }

  /** Rows as the chain checks take them: a row whose keys or body cannot be read is reported as such. */
  private *chainRows(): Generator<RawEventRow> {
    const link = newLink();
    for (const r of this.reads.iterate.iterate() as Iterable<RawRow>) {
      const unresolved = this.resolve(r, link);
      const read = unresolved ?? readTexts(r[5], r[6], r[1] as string);
      const texts: [string, string] = typeof read === 'string' ? ['', ''] : read;
      const undecodable = typeof read === 'string' ? read : undefined;
      yield {
        position: r[0],
        streamId: typeof r[1] === 'string' ? r[1] : '',
        revision: r[2],
        type: typeof r[3] === 'string' ? r[3] : '',
        schemaVersion: r[4],
        dataJson: texts[0],
        metadataJson: texts[1],
        prevHash: hexOf(r[7]),
        hash: hexOf(r[8]),
        ...(undecodable === undefined ? {} : { undecodable }),
      };
    }
  }

  /**
   * Resolve a stored row in place (decision 0034): an empty previous hash becomes the hash of the
   * row before (from `link`, the row read just before it, or looked up), and a stream id or type
   * stored by key becomes its name. Returns why the row cannot be resolved, or undefined.
   */
  private resolve(r: RawRow, link: Link): string | undefined {
    const prev = r[7];
    if (typeof prev !== 'string' && prev.length === 0) {
      const before = r[0] - 1 === link.position ? link.hash : (this.reads.hashAt.get(r[0] - 1) as string | Buffer | undefined);
      if (before === undefined) return 'the row before it, whose hash its previous hash is, is missing (edited or damaged)';
      r[7] = before;
    }
    link.position = r[0];
    link.hash = r[8];
    if (typeof r[1] !== 'string') {
      const name = this.names.nameOf(r[1]);
      if (typeof name !== 'string') return name.problem;
      r[1] = name;
    }
    if (typeof r[3] !== 'string') {
      const name = this.names.nameOf(r[3]);
      if (typeof name !== 'string') return name.problem;
      r[3] = name;
    }
    return undefined;
  }

  /** As `resolve`, a row that cannot be resolved being a corrupt log at its position. */
  private resolved(r: RawRow, link: Link): ResolvedRow {
    const problem = this.resolve(r, link);
    if (problem !== undefined) throw new CorruptLogError(r[0], `${problem}; run \`longbuild verify\``);
    return r as ResolvedRow;
  }

  /** Rows of one read resolved in position order (`descending`: the rows are in reverse). */
  private resolvedAll(rows: RawRow[], descending: boolean): ResolvedRow[] {
    const link = newLink();
    if (descending) for (let i = rows.length - 1; i >= 0; i--) this.resolved(rows[i]!, link);
    else for (const r of rows) this.resolved(r, link);
    return rows as ResolvedRow[];
  }

  async close(): Promise<void> {
    closeDatabase(this.db);
  }
}

/**
 * A row as an array, in the column order of the read statements: as stored (a stream id or type
 * may be a key, a previous hash empty), then resolved in place (see `resolve`).
 */
export type RawRow = [number, string | Buffer, number, string | Buffer, number, string | Buffer, string, string | Buffer, string | Buffer];
/** A resolved row: names as text. */
type ResolvedRow = [number, string, number, string, number, string | Buffer, string, string | Buffer, string | Buffer];

/** The row a read gave just before: its position and stored hash. */
interface Link {
  position: number;
  hash: string | Buffer | undefined;
}

function newLink(): Link {
  return { position: -1, hash: undefined };
}

/**
 * The previous row's metadata text and its parsed value, for one read: consecutive events of one
 * append share their metadata bytes, and then share one frozen object instead of a parse each.
 */
interface MetadataReadMemo {
  text: string | undefined;
  value: StoredEvent['metadata'] | undefined;
}

function toEvents(rows: readonly ResolvedRow[]): StoredEvent[] {
  const memo: MetadataReadMemo = { text: undefined, value: undefined };
  const out: StoredEvent[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = rawToEvent(rows[i]!, memo);
  return out;
}

function rawToEvent(r: ResolvedRow, memo: MetadataReadMemo): StoredEvent {
  const [dataJson, metadataJson] = decodeTexts(r[5], r[6], r[1], r[0]);
  if (metadataJson !== memo.text) {
    memo.value = Object.freeze(parseStored(metadataJson, r[0], 'metadata') as StoredEvent['metadata']);
    memo.text = metadataJson;
  }
  return {
    position: r[0],
    streamId: r[1],
    revision: r[2],
    type: r[3],
    schemaVersion: r[4],
    data: parseStored(dataJson, r[0], 'data') as JsonValue,
    metadata: memo.value!,
    prevHash: hexOf(r[7]),
    hash: hexOf(r[8]),
  };
}

function parseStored(text: string, position: number, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CorruptLogError(position, `${field} is not valid JSON`);
  }
}
