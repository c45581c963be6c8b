import type Database from 'better-sqlite3';
import { CorruptLogError } from '../events/errors.js';
import { GENESIS_HASH } from '../events/hash.js';
import type { StoredEvent } from '../events/envelope.js';
import { marksOf, nodesOf, spendOf, textOf, type IndexRow, type Mark, type SpendPoint } from './event-index-rows.js';

/**
 * The event index in projections.db (decision 0051): a row per event of what the viewer lists
 * (event-index-rows.ts), the timeline's marks, the cumulative spend at each call that recorded
 * usage, and the event types seen. Append-only, written by the projection store in the
 * transactions that write the projections, with its position and the hash of the event there in
 * `projection_positions` (row `event-index`) — nothing of it is held in memory. The viewer reads it
 * instead of the log, so it starts in a time that does not grow with the build.
 */
export const EVENT_INDEX = 'event-index';
/** Changes when the tables or what a row holds change: an index of another layout is dropped and written again. */
const FINGERPRINT = 'event-index 3';
export const EVENT_INDEX_TABLES: readonly string[] = ['event_index', 'event_marks', 'event_spend', 'event_types'];

const SCHEMA = `
CREATE TABLE IF NOT EXISTS event_index (position INTEGER PRIMARY KEY, type_id INTEGER NOT NULL, at NOT NULL, nodes TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS event_marks (position INTEGER NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY (position, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS event_spend (position INTEGER PRIMARY KEY, usd REAL NOT NULL, tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS event_types (id INTEGER PRIMARY KEY, type TEXT NOT NULL UNIQUE);
`;

interface Position {
  readonly position: number;
  readonly hash: string;
}

/**
 * A row's time as stored: the milliseconds when the recorded text is what `toISOString` writes for
 * them (every time the host records), else the text as recorded (the column has no type).
 */
function storedTime(at: string): number | string {
  const ms = Date.parse(at);
  return Number.isFinite(ms) && new Date(ms).toISOString() === at ? ms : at;
}

/** A stored time as the event recorded it. */
function recordedTime(at: number | string): string {
  return typeof at === 'number' ? new Date(at).toISOString() : at;
}

/** The statement reading the index's row of `projection_positions`, prepared once per database. */
const positionReaders = new WeakMap<Database.Database, Database.Statement>();

/** The index's position as `projection_positions` records it (null: no row, or another layout's). */
function recorded(db: Database.Database): Position | null {
  let read = positionReaders.get(db);
  if (read === undefined) positionReaders.set(db, (read = db.prepare('SELECT position, hash, fingerprint FROM projection_positions WHERE name = ?')));
  const row = read.get(EVENT_INDEX) as { position: number; hash: string; fingerprint: string } | undefined;
  return row === undefined || row.fingerprint !== FINGERPRINT ? null : { position: row.position, hash: row.hash };
}

/** Writes the index; every method runs inside the caller's write transaction. */
export class EventIndexWriter {
  private readonly insert;
  private readonly insertMark;
  private readonly insertSpend;
  private readonly insertType;
  private readonly typeId;
  private readonly lastSpend;
  private readonly setPosition;
  /** The id of each type written in the batch being appended (read once a batch; a batch rolled back takes them with it). */
  private readonly typeIds = new Map<string, number>();

  /** The index was made (or made again) empty by this open: the next catch-up writes it from the first event. */
  readonly made: boolean;

  /** Create the tables when missing; an index of another layout is dropped (it is written again from the log). */
  constructor(private readonly db: Database.Database) {
    const stale = db.prepare('SELECT fingerprint FROM projection_positions WHERE name = ?').pluck(true).get(EVENT_INDEX) as string | undefined;
    this.made = stale !== FINGERPRINT;
    db.transaction(() => {
      if (stale !== undefined && stale !== FINGERPRINT) for (const t of EVENT_INDEX_TABLES) db.exec(`DROP TABLE IF EXISTS ${t}`);
      db.exec(SCHEMA);
      if (stale !== FINGERPRINT) db.prepare('INSERT OR REPLACE INTO projection_positions (name, position, hash, fingerprint) VALUES (?,?,?,?)').run(EVENT_INDEX, 0, GENESIS_HASH, FINGERPRINT);
    })();
    this.insert = db.prepare('INSERT INTO event_index (position, type_id, at, nodes, text) VALUES (?,?,?,?,?)');
    this.insertMark = db.prepare('INSERT INTO event_marks (position, seq, kind, label) VALUES (?,?,?,?)');
    this.insertSpend = db.prepare('INSERT INTO event_spend (position, usd, tokens) VALUES (?,?,?)');
    this.insertType = db.prepare('INSERT OR IGNORE INTO event_types (type) VALUES (?)');
    this.typeId = db.prepare('SELECT id FROM event_types WHERE type = ?').pluck(true);
    this.lastSpend = db.prepare('SELECT usd, tokens FROM event_spend ORDER BY position DESC LIMIT 1');
    this.setPosition = db.prepare(`INSERT OR REPLACE INTO projection_positions (name, position, hash, fingerprint) VALUES (?, ?, ?, '${FINGERPRINT}')`);
  }

  /** The position the index reflects, as the file says now (another process may have written it). */
  position(): number {
    return recorded(this.db)?.position ?? 0;
  }

  /**
   * Append the events of `batch` past the index's position. A batch that starts beyond the next
   * position leaves the index as it is (the next catch-up starts from it); one that does not follow
   * the event the index saw is a different log.
   */
  append(batch: readonly StoredEvent[]): void {
    const at = recorded(this.db) ?? { position: 0, hash: GENESIS_HASH };
    let { position, hash } = at;
    const from = batch.findIndex((e) => e.position > position);
    if (from < 0 || batch[from]!.position !== position + 1) return;
    let spent: { usd: number; tokens: number } | undefined | null = null; // null: not read yet
    this.typeIds.clear();
    for (let i = from; i < batch.length; i++) {
      const e = batch[i]!;
      if (e.position !== position + 1 || e.prevHash !== hash) {
        throw new CorruptLogError(e.position, `the event index was built from a different log (event ${e.position} does not follow the one it saw); run \`longbuild rebuild\``);
      }
      let typeId = this.typeIds.get(e.type);
      if (typeId === undefined) {
        this.insertType.run(e.type);
        typeId = this.typeId.get(e.type) as number;
        this.typeIds.set(e.type, typeId);
      }
      const nodes = nodesOf(e);
      this.insert.run(e.position, typeId, storedTime(e.metadata.recordedAt), JSON.stringify(nodes), textOf(e, nodes));
      marksOf(e).forEach((m, seq) => this.insertMark.run(m.position, seq, m.kind, m.label));
      const s = spendOf(e);
      if (s !== null) {
        if (spent === null) spent = this.lastSpend.get() as { usd: number; tokens: number } | undefined;
        spent = { usd: (spent?.usd ?? 0) + s.usd, tokens: (spent?.tokens ?? 0) + s.tokens };
        this.insertSpend.run(e.position, spent.usd, spent.tokens);
      }
      position = e.position;
      hash = e.hash;
    }
    this.setPosition.run(EVENT_INDEX, position, hash);
  }

  /** Every row of the index, a JSON line each, tables in order and rows by key (what `verify` compares with a rebuild's). */
  dump(): string {
    const keys: Record<string, string> = { event_index: 'position', event_marks: 'position, seq', event_spend: 'position', event_types: 'id' };
    const lines = EVENT_INDEX_TABLES.flatMap((t) => (this.db.prepare(`SELECT * FROM ${t} ORDER BY ${keys[t]}`).all() as object[]).map((r) => `${t} ${JSON.stringify(r)}`));
    return lines.join('\n');
  }

  /** Empty the index (a rebuild writes it again from the first event). */
  clear(): void {
    for (const t of EVENT_INDEX_TABLES) this.db.exec(`DELETE FROM ${t}`);
    this.setPosition.run(EVENT_INDEX, 0, GENESIS_HASH);
  }
}

/** What the viewer asks of the list: events of a type, about a node, whose text holds `q` (lower case). */
export interface IndexFilter {
  readonly type: string | null;
  readonly node: string | null;
  readonly q: string;
}

/** Whether `row` passes `filter` (the same test the reader's SQL makes). */
export function passes(row: IndexRow, filter: IndexFilter): boolean {
  return (filter.type === null || row.type === filter.type) && (filter.node === null || row.nodes.includes(filter.node))
    && (filter.q === '' || `${row.type} ${row.text}`.toLowerCase().includes(filter.q));
}

/** Reads the index of a projections database opened read-only; every query stops at `upTo`. */
export class EventIndexReader {
  private constructor(private readonly db: Database.Database) {
    // The list's search is JavaScript's lower case (SQLite's lower() folds ASCII only).
    db.function('longbuild_lower', { deterministic: true }, (s: unknown) => String(s).toLowerCase());
  }

  /** The index in `db`, or null when it has none (a database of an older longbuild, or one not written yet). */
  static of(db: Database.Database): EventIndexReader | null {
    const has = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('projection_positions', 'event_index', 'event_marks', 'event_spend', 'event_types')").pluck(true).get() as number;
    return has === 5 && recorded(db) !== null ? new EventIndexReader(db) : null;
  }

  position(): Position {
    return recorded(this.db) ?? { position: 0, hash: GENESIS_HASH };
  }

  /** The rows that pass `filter` up to `upTo`: how many, and `limit` of them from `offset`. */
  rows(filter: IndexFilter, upTo: number, offset: number, limit: number): { total: number; rows: IndexRow[] } {
    const where = ['position <= ?'];
    const params: unknown[] = [upTo];
    if (filter.type !== null) {
      where.push('type_id = (SELECT id FROM event_types WHERE type = ?)');
      params.push(filter.type);
    }
    if (filter.node !== null) {
      where.push('EXISTS (SELECT 1 FROM json_each(event_index.nodes) WHERE value = ?)');
      params.push(filter.node);
    }
    if (filter.q !== '') {
      where.push("instr(longbuild_lower(event_types.type || ' ' || text), ?) > 0");
      params.push(filter.q);
    }
    const sql = `FROM event_index JOIN event_types ON event_types.id = event_index.type_id WHERE ${where.join(' AND ')}`;
    // Counted without the types unless the search reads them (a count of the whole index then walks the table alone).
    const total = this.db.prepare(`SELECT count(*) ${filter.q === '' ? `FROM event_index WHERE ${where.join(' AND ')}` : sql}`).pluck(true).get(...params) as number;
    const rows = limit <= 0 ? [] : (this.db.prepare(`SELECT position, event_types.type AS type, at, nodes, text ${sql} ORDER BY position LIMIT ? OFFSET ?`).all(...params, limit, offset) as { position: number; type: string; at: number | string; nodes: string; text: string }[])
      .map((r) => ({ position: r.position, type: r.type, at: recordedTime(r.at), nodes: JSON.parse(r.nodes) as string[], text: r.text }));
    return { total, rows };
  }

  /** How many marks and spend points there are up to `upTo`. */
  counts(upTo: number): { marks: number; spend: number } {
    return {
      marks: this.db.prepare('SELECT count(*) FROM event_marks WHERE position <= ?').pluck(true).get(upTo) as number,
      spend: this.db.prepare('SELECT count(*) FROM event_spend WHERE position <= ?').pluck(true).get(upTo) as number,
    };
  }

  /** The first mark of each kind in each bucket of `width` positions, up to `upTo` (the viewer's sampleMarks, in SQL). */
  sampledMarks(upTo: number, width: number): Mark[] {
    return (this.db.prepare('SELECT min(position) AS position, seq, kind, label FROM event_marks WHERE position <= ? GROUP BY kind, CAST(position / ? AS INTEGER) ORDER BY position, seq').all(upTo, width) as (Mark & { seq?: number })[])
      .map(({ position, kind, label }) => ({ position, kind, label }));
  }

  /** The last spend point of each bucket of `width` positions, up to `upTo` (the viewer's sampleSpend, in SQL). */
  sampledSpend(upTo: number, width: number): SpendPoint[] {
    return this.db.prepare('SELECT max(position) AS position, usd, tokens FROM event_spend WHERE position <= ? GROUP BY CAST(position / ? AS INTEGER) ORDER BY position').all(upTo, width) as SpendPoint[];
  }

  /** The cumulative spend at `upTo` (its last point at or before it; none: nothing spent). */
  spentAt(upTo: number): { usd: number; tokens: number } {
    const row = this.db.prepare('SELECT usd, tokens FROM event_spend WHERE position <= ? ORDER BY position DESC LIMIT 1').get(upTo) as { usd: number; tokens: number } | undefined;
    return row ?? { usd: 0, tokens: 0 };
  }

  marks(upTo: number): Mark[] {
    return this.db.prepare('SELECT position, kind, label FROM event_marks WHERE position <= ? ORDER BY position, seq').all(upTo) as Mark[];
  }

  spend(upTo: number): SpendPoint[] {
    return this.db.prepare('SELECT position, usd, tokens FROM event_spend WHERE position <= ? ORDER BY position').all(upTo) as SpendPoint[];
  }

  /** The event types seen (up to the index's position at least; a superset of those up to `upTo` while a run appends). */
  types(): string[] {
    return this.db.prepare('SELECT type FROM event_types').pluck(true).all() as string[];
  }

  /** Whether a BuildCompleted is at or before `upTo`. */
  completed(upTo: number): boolean {
    // Read from the end: a completed build's BuildCompleted is among its last events.
    return this.types().includes('BuildCompleted')
      && this.db.prepare("SELECT 1 FROM event_index WHERE position <= ? AND type_id = (SELECT id FROM event_types WHERE type = 'BuildCompleted') ORDER BY position DESC LIMIT 1").get(upTo) !== undefined;
  }
}
