/**
 * Rewrite a SQLite log the way a capable attacker would: edit its rows, then re-hash the whole
 * chain and move the head anchor, so that the chain itself verifies (what only signed checkpoints,
 * or a fork's link to its parent, can still catch).
 */
import Database from 'better-sqlite3';
import type { JsonValue } from '../../src/events/canonical.js';
import { computeEventHash } from '../../src/events/envelope.js';
import { GENESIS_HASH } from '../../src/events/hash.js';

export interface Row { position: number; stream_id: string; revision: number; type: string; schema_version: number; data: string; metadata: string; prev_hash: string; hash: string }

export function rows(db: string): Row[] {
  const d = new Database(db, { readonly: true });
  try {
    return d.prepare('SELECT * FROM events ORDER BY position').all() as Row[];
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

