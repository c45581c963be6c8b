import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { Projection } from './projection.js';
import { fingerprintOf } from './projection-runtime.js';
import type { SnapshotStore } from './snapshots.js';
import { SqliteSnapshotStore } from './snapshot-store.js';
import { closeDatabase, openDatabaseToRead } from './storage-guard.js';

/** A projections database opened read-only, and the snapshots in it. */
export interface StoredSnapshots {
  readonly db: Database.Database;
  readonly snapshots: SnapshotStore;
}

/**
 * The snapshots of `projection` in the database at `path`, to read without opening a store
 * (reading commands): null when there is no such file, or its tables were made by another layout
 * or state version of `projection` (its snapshots are stale until a store opens and rebuilds it).
 * The caller closes `db`.
 */
export function storedSnapshotsOf(path: string, projection: Projection<unknown>): StoredSnapshots | null {
  if (!existsSync(path)) return null;
  const db = openDatabaseToRead(path);
  let current = false;
  try {
    db.pragma('busy_timeout = 10000');
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'projection_positions'").get() !== undefined;
    current = hasMeta && db.prepare('SELECT fingerprint FROM projection_positions WHERE name = ?').pluck(true).get(projection.name) === fingerprintOf(projection);
  } finally {
    if (!current) closeDatabase(db);
  }
  return current ? { db, snapshots: new SqliteSnapshotStore(db) } : null;
}
