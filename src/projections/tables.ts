import type Database from 'better-sqlite3';
import { canonicalJson } from '../events/canonical.js';
import { ValidationError } from '../events/errors.js';
import type { TableSpec } from './projection.js';
import { changedTableLeaves } from './record-table.js';
import { changedLeaves, shardEntries, type Sharded } from './sharded.js';
import type { StoredEvent } from '../events/envelope.js';
import { indexAfter } from './projection-runtime.js';

export type RowValue = string | number | null;

/** Identifiers reach SQL text, so only plain names are allowed. */
const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Quote a table or column name after checking it is a plain identifier. */
export function quoteIdent(name: string): string {
  if (!IDENT.test(name)) throw new ValidationError(`invalid projection table or column name '${name}'`, 'R-5');
  return `"${name}"`;
}

/** Iterate an entity collection (Map or plain record) as [key, entity] pairs. */
export function entriesOf(c: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>): Iterable<[string, unknown]> {
  return c instanceof Map ? (c as ReadonlyMap<string, unknown>).entries() : Object.entries(c);
}

function lookup(c: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>, key: string): unknown {
  if (c instanceof Map) return (c as ReadonlyMap<string, unknown>).get(key);
  return Object.hasOwn(c, key) ? (c as Record<string, unknown>)[key] : undefined;
}

function contains(c: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>, key: string): boolean {
  return c instanceof Map ? (c as ReadonlyMap<string, unknown>).has(key) : Object.hasOwn(c, key);
}

/** Prepared statements for one projection table. */
const EMPTY: Readonly<Record<string, never>> = {};

export class TableWriter<S> {
  readonly spec: TableSpec<S>;
  private readonly upsert: Database.Statement;
  private readonly remove: Database.Statement;

  constructor(private readonly db: Database.Database, spec: TableSpec<S>) {
    this.spec = spec;
    const t = quoteIdent(spec.name);
    const cols = spec.columns.map(quoteIdent);
    const keys = cols.slice(0, spec.keyColumns);
    this.upsert = db.prepare(`INSERT OR REPLACE INTO ${t} (${cols.join(',')}) VALUES (${cols.map(() => '?').join(',')})`);
    this.remove = db.prepare(`DELETE FROM ${t} WHERE ${keys.map((k) => `${k} = ?`).join(' AND ')}`);
  }

  /**
   * Write the rows that differ between two states. Collections and entities are compared by
   * reference (immer structural sharing), so an unchanged collection costs one comparison.
   */
  /** Whether the table is kept from events (`TableSpec.fromEvent`) rather than from the state. */
  get fromEvents(): boolean {
    return this.spec.fromEvent !== undefined;
  }

  /** Apply events to an event-kept table, in log order (a no-op for a table kept from the state). */
  applyEvents(events: Iterable<StoredEvent>): void {
    const fromEvent = this.spec.fromEvent;
    if (fromEvent === undefined) return;
    for (const e of events) {
      const change = fromEvent(e);
      if (change === null) continue;
      if ('put' in change) {
        if (change.put.length !== this.spec.columns.length) throw new ValidationError(`projection table ${this.spec.name}: an event's row has ${change.put.length} values for ${this.spec.columns.length} columns`, 'R-5');
        this.upsert.run(...change.put.map(stored));
      } else {
        const columns = Object.keys(change.set);
        this.updateOf(columns).run(...columns.map((c) => stored(change.set[c]!)), ...change.key.map(stored));
      }
    }
  }

  /** Put the rows of every entity the state holds (an event-kept table whose events do not reach back to what it holds). */
  putAll(state: S): void {
    this.diffCollections(EMPTY, this.spec.sharded ? Object.fromEntries(shardEntries(this.spec.entities(state) as Sharded<unknown>)) : this.spec.entities(state) as Readonly<Record<string, unknown>>);
  }

  private readonly updates = new Map<string, Database.Statement>();
  private updateOf(columns: readonly string[]): Database.Statement {
    const k = columns.join(',');
    let st = this.updates.get(k);
    if (st === undefined) {
      const keys = this.spec.columns.slice(0, this.spec.keyColumns).map(quoteIdent);
      st = this.db.prepare(`UPDATE ${quoteIdent(this.spec.name)} SET ${columns.map((c) => `${quoteIdent(c)} = ?`).join(', ')} WHERE ${keys.map((c) => `${c} = ?`).join(' AND ')}`);
      this.updates.set(k, st);
    }
    return st;
  }

  /** Write what changed from `before` to `after`; `before` null: the table is empty, write every row. A table kept from events is not written here. */
  writeDiff(before: S | null, after: S): void {
    if (this.spec.fromEvent !== undefined) return;
    const a = before === null ? EMPTY : this.spec.entities(before);
    const b = this.spec.entities(after);
    if (a === b) return;
    if (this.spec.sharded) {
      for (const [x, y] of changedLeaves((before === null ? [] : a) as Sharded<unknown>, b as Sharded<unknown>)) this.diffCollections(x, y);
      return;
    }
    const x = a as ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>;
    const y = b as ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>;
    // Two tables of a record (record-table.ts): only the leaves that differ are compared.
    const leaves = changedTableLeaves(x, y);
    if (leaves !== null) for (const [lx, ly] of leaves) this.diffCollections(lx, ly);
    else this.diffCollections(x, y);
  }

  private diffCollections(a: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>, b: ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>): void {
    for (const [key, entity] of entriesOf(a)) {
      if (!contains(b, key)) this.remove.run(...this.row(key, entity).slice(0, this.spec.keyColumns));
    }
    for (const [key, entity] of entriesOf(b)) {
      if (lookup(a, key) !== entity || !contains(a, key)) this.upsert.run(...this.row(key, entity).map(stored));
    }
  }

  private row(key: string, entity: unknown): RowValue[] {
    const row = this.spec.toRow(key, entity);
    if (row.length !== this.spec.columns.length) {
      throw new ValidationError(`projection table ${this.spec.name}: toRow gave ${row.length} values for ${this.spec.columns.length} columns`, 'R-5');
    }
    return row as RowValue[];
  }
}

/**
 * Bring a projection's event-kept tables (TableSpec.fromEvent) from `held` (the position they
 * hold) up to the end of `events`, a run of the log that reaches back to `held` + 1 or further.
 * When it does not (another process moved the tables back), the rows of what the state holds, at
 * least; `longbuild rebuild` restores the rest.
 */
export function applyEventTables<S>(writers: readonly TableWriter<S>[], events: readonly StoredEvent[], held: number, state: S): void {
  const next = indexAfter(events, held);
  const reaches = next < events.length && events[next]!.position === held + 1;
  for (const w of writers) {
    if (!w.fromEvents) continue;
    if (reaches) w.applyEvents(next === 0 ? events : events.slice(next));
    else if (next < events.length) w.putAll(state);
  }
}

/**
 * A value as bound to SQLite: an integral number as an INTEGER (better-sqlite3 binds every number
 * as a REAL, 8 bytes; SQLite stores 0 and 1 in none and small integers in one or two), read back
 * as the same number.
 */
function stored(v: RowValue): RowValue | bigint {
  return typeof v === 'number' && Number.isSafeInteger(v) ? BigInt(v) : v;
}

/** DDL of a projection table: untyped columns, so values keep the exact type toRow gave. */
export function createTableSql(spec: TableSpec<unknown>): string {
  if (!Number.isInteger(spec.keyColumns) || spec.keyColumns < 1 || spec.keyColumns > spec.columns.length) {
    throw new ValidationError(`projection table ${spec.name}: keyColumns must be between 1 and ${spec.columns.length}`, 'R-5');
  }
  const cols = spec.columns.map(quoteIdent);
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(spec.name)} (${cols.join(', ')}, PRIMARY KEY (${cols.slice(0, spec.keyColumns).join(', ')})) WITHOUT ROWID`;
}

/**
 * Canonical dump of one table: a header line, then one canonical JSON array per row in
 * primary-key order. SQLite's BINARY collation compares UTF-8 bytes, i.e. code points.
 */
export function dumpTable(db: Database.Database, spec: TableSpec<unknown>): string[] {
  const cols = spec.columns.map(quoteIdent);
  const lines = [canonicalJson({ columns: [...spec.columns], table: spec.name })];
  const stmt = db.prepare(`SELECT ${cols.join(',')} FROM ${quoteIdent(spec.name)} ORDER BY ${cols.slice(0, spec.keyColumns).join(',')}`).raw(true);
  for (const row of stmt.iterate() as Iterable<unknown[]>) lines.push(canonicalJson(row));
  return lines;
}
