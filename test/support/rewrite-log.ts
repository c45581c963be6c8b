/**
 * Rewrite a SQLite log the way a capable attacker would: edit its rows, then re-hash the whole
 * chain and move the head anchor, so that the chain itself verifies (what only signed checkpoints,
 * or a fork's link to its parent, can still catch).
 */
import Database from 'better-sqlite3';
import type { JsonValue } from '../../src/events/canonical.js';
import { computeEventHash } from '../../src/events/envelope.js';
import { GENESIS_HASH } from '../../src/events/hash.js';
import { hexSql, readTexts } from '../../src/adapters/log/row-codec.js';
import { RowNames } from '../../src/adapters/log/row-names.js';

export interface Row { position: number; stream_id: string; revision: number; type: string; schema_version: number; data: string; metadata: string; prev_hash: string; hash: string }

/** The rows of a log as text, whichever form each is stored in (a compact row decoded, decision 0024). */
export function rows(db: string, where = ''): Row[] {
  const d = new Database(db, { readonly: true });
  try {
    // A compact row of codec 2 stores its stream id and type as keys, its previous hash as the row before's (decision 0034).
    const stored = d.prepare(`SELECT position, stream_id, revision, type, schema_version, data, metadata, ${hexSql('prev_hash')} AS prev_hash, ${hexSql('hash')} AS hash FROM events ${where} ORDER BY position`).all() as (Omit<Row, 'data' | 'stream_id' | 'type'> & { data: string | Buffer; stream_id: string | Buffer; type: string | Buffer })[];
    const names = new RowNames(d);
    const hashBefore = d.prepare(`SELECT ${hexSql('hash')} FROM events WHERE position = ?`).pluck();
    const name = (position: number, stored: string | Buffer): string => {
      const n = names.nameOf(stored);
      if (typeof n !== 'string') throw new Error(`row ${position}: ${n.problem}`);
      return n;
    };
    return stored.map((r) => {
      const streamId = name(r.position, r.stream_id);
      const texts = readTexts(r.data, r.metadata, streamId);
      if (typeof texts === 'string') throw new Error(`row ${r.position}: ${texts}`);
      const prev = r.prev_hash === '' ? hashBefore.get(r.position - 1) as string : r.prev_hash;
      return { ...r, stream_id: streamId, type: name(r.position, r.type), prev_hash: prev, data: texts[0], metadata: texts[1] };
    });
  } finally {
    d.close();
  }
}

/** The stored hash (hex) of one position. */
export function hashAt(db: string, position: number): string {
  return rows(db, `WHERE position = ${Number(position)}`)[0]!.hash;
}

/**
 * Edit one row in place, as an attacker with SQL would, without fixing any hash: the row is read
 * as text, `edit` changes it, and it is written back as a text row.
 */
export function editRow(db: string, position: number, edit: (r: Row) => Partial<Row>): void {
  const row = rows(db, `WHERE position = ${Number(position)}`)[0];
  if (row === undefined) throw new Error(`no row at ${position}`);
  const r = { ...row, ...edit(row) };
  const d = new Database(db);
  try {
    d.prepare('UPDATE events SET stream_id = ?, revision = ?, type = ?, schema_version = ?, data = ?, metadata = ?, prev_hash = ?, hash = ? WHERE position = ?')
      .run(r.stream_id, r.revision, r.type, r.schema_version, r.data, r.metadata, r.prev_hash, r.hash, position);
  } finally {
    d.close();
  }
}

/** Rewrite the log consistently from position 1: every hash recomputed, the anchor moved. */
export function rewrite(db: string, edit: (r: Row[]) => Row[]): void {
  const edited = edit(rows(db));
  let prev = GENESIS_HASH;
  for (const r of edited) {
    r.prev_hash = prev;
    r.hash = computeEventHash({ position: r.position, streamId: r.stream_id, revision: r.revision, type: r.type, schemaVersion: r.schema_version, data: JSON.parse(r.data) as JsonValue, metadata: JSON.parse(r.metadata), prevHash: prev });
    prev = r.hash;
  }
  const d = new Database(db);
  try {
    d.transaction(() => {
      d.prepare('DELETE FROM events').run();
      const ins = d.prepare('INSERT INTO events (position, stream_id, revision, type, schema_version, data, metadata, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)');
      for (const r of edited) ins.run(r.position, r.stream_id, r.revision, r.type, r.schema_version, r.data, r.metadata, r.prev_hash, r.hash);
      const last = edited[edited.length - 1]!;
      d.prepare('UPDATE chain_head SET position = ?, hash = ?').run(last.position, last.hash);
    })();
  } finally {
    d.close();
  }
}

