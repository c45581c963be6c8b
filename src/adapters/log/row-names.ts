/**
 * Stream ids and event types stored by key (decision 0034). A compact row of codec 2 stores its
 * `stream_id` and `type` columns as a short BLOB, a key into the `row_names` table, instead of
 * the text (`build-b-1b04660c42c2ce97` in every row of a build, and again in the
 * `(stream_id, revision)` index). A text column is the name itself, as every row before codec 2
 * stores it: a BLOB never equals a text in SQLite, so the two forms cannot be confused.
 */
import type Database from 'better-sqlite3';

export const ROW_NAMES_SCHEMA = 'CREATE TABLE IF NOT EXISTS row_names (name TEXT PRIMARY KEY, id INTEGER NOT NULL) WITHOUT ROWID;';

/** Keys are 1 to 6 bytes, big-endian, no leading zero byte; key ids start at 1. */
const MAX_KEY_BYTES = 6;

/** The BLOB key of id `id`. */
export function keyBytes(id: number): Buffer {
  const bytes: number[] = [];
  for (let v = id; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from(bytes);
}

/** The id a stored key names, or null when the bytes are not a key. */
export function keyId(key: Buffer): number | null {
  if (key.length === 0 || key.length > MAX_KEY_BYTES || key[0] === 0) return null;
  return key.readUIntBE(0, key.length);
}

/** The names of one log file, read from `row_names` when a key is met that is not known yet. */
export class RowNames {
  private byId = new Map<number, string>();
  private byName = new Map<string, Buffer>();
  private maxId = 0;
  /** The statement reading the table, prepared on first use (a log from before codec 2 has no table until a writer opens it). */
  private all: Database.Statement | undefined;

  constructor(private readonly db: Database.Database) {}

  /** The name a stored `stream_id` or `type` column holds, or why it names none. */
  nameOf(stored: string | Buffer): string | { readonly problem: string } {
    if (typeof stored === 'string') return stored;
    const id = Buffer.isBuffer(stored) ? keyId(stored) : null;
    if (id === null) return { problem: 'stored name key is not a key (edited or damaged)' };
    let name = this.byId.get(id);
    if (name === undefined) {
      this.load();
      name = this.byId.get(id);
    }
    return name ?? { problem: `stored name key ${id} is not in row_names (edited or damaged)` };
  }

  /** The key of `name`, if the log has one (reading: a name without a key is stored as text only). */
  keyOf(name: string): Buffer | null {
    const key = this.byName.get(name);
    if (key !== undefined) return key;
    this.load();
    return this.byName.get(name) ?? null;
  }

  /**
   * The key of `name`, added to `row_names` if it has none: inside the caller's write
   * transaction. If that transaction rolls back, call `forget`.
   */
  keyFor(name: string): Buffer {
    const known = this.keyOf(name);
    if (known !== null) return known;
    const id = this.maxId + 1;
    this.db.prepare('INSERT INTO row_names (name, id) VALUES (?, ?)').run(name, id);
    this.remember(name, id);
    return this.byName.get(name)!;
  }

  /** Drop what is known: a write transaction that may have added names rolled back. */
  forget(): void {
    this.byId = new Map();
    this.byName = new Map();
    this.maxId = 0;
  }

  private load(): void {
    if (this.all === undefined) {
      if (this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'row_names'").get() === undefined) return;
      this.all = this.db.prepare('SELECT name, id FROM row_names');
    }
    for (const r of this.all.all() as { name: string; id: number }[]) this.remember(r.name, r.id);
  }

  private remember(name: string, id: number): void {
    this.byId.set(id, name);
    this.byName.set(name, keyBytes(id));
    if (id > this.maxId) this.maxId = id;
  }
}
