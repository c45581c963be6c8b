import type pg from 'pg';
import type { PoolClient } from 'pg';
import type { LogHead } from '../../events/event-log.js';
import { sha256Hex } from '../../events/hash.js';
import type { RawEventRow } from './chain.js';

// The SQL the PostgreSQL log (postgres-log.ts) runs, and the rows it reads: one statement each.

/** The two tables of one log's schema, quoted: its events and the row naming its head. */
export interface LogTables {
  readonly events: string;
  readonly head: string;
}

/** An events row as `pg` returns it (BIGINT columns as text). */
export interface PgEventRow {
  position: string;
  stream_id: string;
  revision: string;
  type: string;
  schema_version: number;
  data: string;
  metadata: string;
  prev_hash: string;
  hash: string;
}

/** Create the schema and its tables when missing (inside a transaction: `c` holds it). */
export async function createLogTables(c: PoolClient, schema: string, t: LogTables): Promise<void> {
  // Concurrent CREATE ... IF NOT EXISTS from two processes can still collide; serialise them.
  await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`longbuild-schema:${schema}`]);
  await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await c.query(`CREATE TABLE IF NOT EXISTS ${t.events} (
    position       BIGINT  PRIMARY KEY CHECK (position >= 1),
    stream_id      TEXT    NOT NULL,
    revision       BIGINT  NOT NULL CHECK (revision >= 0),
    type           TEXT    NOT NULL,
    schema_version INTEGER NOT NULL,
    data           TEXT    NOT NULL,
    metadata       TEXT    NOT NULL,
    prev_hash      TEXT    NOT NULL,
    hash           TEXT    NOT NULL,
    UNIQUE (stream_id, revision)
  )`);
  await c.query(`CREATE TABLE IF NOT EXISTS ${t.head} (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    position BIGINT  NOT NULL,
    hash     TEXT    NOT NULL
  )`);
}

/** The log's head and the stream's revision (-1 for no stream), in one round trip (under the writer lock). */
export async function tailOf(c: pg.Pool | PoolClient, t: LogTables, streamId: string | null): Promise<{ head: LogHead | null; revision: number }> {
  const r = await c.query<{ position: string | null; hash: string | null; revision: string | null }>(
    `SELECT t.position, t.hash, (SELECT MAX(revision) FROM ${t.events} WHERE stream_id = $1) AS revision
     FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT position, hash FROM ${t.events} ORDER BY position DESC LIMIT 1) AS t ON true`,
    [streamId],
  );
  const row = r.rows[0]!;
  return {
    head: row.position === null || row.hash === null ? null : { position: Number(row.position), hash: row.hash },
    revision: row.revision === null ? -1 : Number(row.revision),
  };
}

/** A stream's revision (-1 for no stream). */
export async function revisionOf(c: pg.Pool | PoolClient, t: LogTables, streamId: string): Promise<number> {
  const r = await c.query<{ r: string | null }>(`SELECT MAX(revision) AS r FROM ${t.events} WHERE stream_id = $1`, [streamId]);
  const v = r.rows[0]?.r;
  return v === null || v === undefined ? -1 : Number(v);
}

/** Insert a batch's rows and move the head, inside the caller's writing transaction. */
export async function insertRows(c: PoolClient, t: LogTables, rows: readonly RawEventRow[]): Promise<void> {
  // One statement per batch whatever its size: nine arrays unnested server-side, and the head
  // moved in the same statement (a data-modifying WITH runs whether or not it is read).
  const last = rows[rows.length - 1]!;
  await c.query(
    `WITH inserted AS (
       INSERT INTO ${t.events} (position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash)
       ${UNNEST_ROWS}
     )
     INSERT INTO ${t.head} (id, position, hash) VALUES (1, $10, $11) ON CONFLICT (id) DO UPDATE SET position = excluded.position, hash = excluded.hash`,
    [...rowArrays(rows), last.position, last.hash],
  );
}

/**
 * The one statement that writes a held batch only if the head row is still `$12`/`$13` (a
 * compare-and-set on that row) and `fenceSql` returns a row; it returns how many rows went in.
 * Parameters: $1..$9 the rows (rowArrays), $10/$11 the new head, $12/$13 the base, then the fence's.
 */
export function insertOnTailSql(t: LogTables, fenceSql: string): string {
  return `WITH fence AS (${fenceSql}),
     moved AS (
       UPDATE ${t.head} SET position = $10, hash = $11
       WHERE id = 1 AND position = $12::bigint AND hash = $13::text AND EXISTS (SELECT 1 FROM fence) RETURNING 1
     ),
     created AS (
       INSERT INTO ${t.head} (id, position, hash) SELECT 1, $10, $11
       WHERE $12::bigint IS NULL AND EXISTS (SELECT 1 FROM fence) ON CONFLICT (id) DO NOTHING RETURNING 1
     ),
     inserted AS (
       INSERT INTO ${t.events} (position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash)
       ${UNNEST_ROWS}
       WHERE EXISTS (SELECT 1 FROM moved UNION ALL SELECT 1 FROM created) RETURNING 1
     )
     SELECT count(*) AS inserted FROM inserted`;
}

const VERIFY_PAGE = 5000;

/** Every row and the head row, read in keyset pages inside the caller's (repeatable-read) transaction. */
export async function readEveryRow(c: PoolClient, t: LogTables): Promise<{ rows: RawEventRow[]; anchor: LogHead | undefined }> {
  const a = await c.query<{ position: string; hash: string }>(`SELECT position, hash FROM ${t.head} WHERE id = 1`);
  const rows: RawEventRow[] = [];
  let after = 0;
  for (;;) {
    const page = await c.query<PgEventRow>(`SELECT * FROM ${t.events} WHERE position > $1 ORDER BY position ASC LIMIT ${VERIFY_PAGE}`, [after]);
    for (const row of page.rows) rows.push(fromPg(row));
    if (page.rows.length < VERIFY_PAGE) break;
    after = rows[rows.length - 1]!.position;
  }
  const anchorRow = a.rows[0];
  return { rows, anchor: anchorRow ? { position: Number(anchorRow.position), hash: anchorRow.hash } : undefined };
}

/** A batch's rows as the nine arrays `UNNEST_ROWS` takes ($1..$9). */
export function rowArrays(rows: readonly RawEventRow[]): unknown[] {
  return [
    rows.map((r) => r.position), rows.map((r) => r.streamId), rows.map((r) => r.revision), rows.map((r) => r.type),
    rows.map((r) => r.schemaVersion), rows.map((r) => r.dataJson), rows.map((r) => r.metadataJson),
    rows.map((r) => r.prevHash), rows.map((r) => r.hash),
  ];
}

/**
 * The name of a prepared statement of this text: its SHA-256, so that two logs in one process (two
 * schemas, two fences) never share a name for different texts. PostgreSQL plans a named
 * statement once per connection and re-plans it by itself if a table it reads is changed.
 */
export function preparedName(text: string): string {
  return `longbuild-${sha256Hex(text).slice(0, 24)}`;
}

/** The rows of a batch, unnested server-side from nine arrays ($1..$9, see rowArrays). */
const UNNEST_ROWS = 'SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[])';

export function fromPg(row: PgEventRow): RawEventRow {
  return {
    position: Number(row.position),
    streamId: row.stream_id,
    revision: Number(row.revision),
    type: row.type,
    schemaVersion: row.schema_version,
    dataJson: row.data,
    metadataJson: row.metadata,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/** A unique-key violation (SQLSTATE 23505): a writer that bypassed the lock. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
