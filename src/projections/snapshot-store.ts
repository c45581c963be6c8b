import type Database from 'better-sqlite3';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Snapshot, SnapshotStore } from './snapshots.js';

/**
 * A state's JSON of at least this many bytes is stored deflated (a BLOB in `state_json`; smaller
 * ones stay TEXT). A build state's JSON deflates about 8× at level 1 in ~2 ms per 500 KB, which
 * was most of what a build keeps besides its log (decision 0017). The snapshot's SHA-256 is over
 * the JSON either way.
 */
const DEFLATE_FROM = 4096;

/** The snapshot store of the projections database (rebuildable, never authority): the SQLite half of snapshots.ts. */
const SNAPSHOT_SCHEMA = `
CREATE TABLE IF NOT EXISTS snapshots (
  projection TEXT    NOT NULL,
  position   INTEGER NOT NULL,
  event_hash TEXT    NOT NULL,
  state_json TEXT    NOT NULL,
  sha256     TEXT    NOT NULL,
  PRIMARY KEY (projection, position)
);
`;

interface SnapshotRow {
  projection: string;
  position: number;
  event_hash: string;
  state_json: string | Buffer;
  sha256: string;
}

/** Snapshots in the (rebuildable) projections database. */
export class SqliteSnapshotStore implements SnapshotStore {
  private readonly stmts;

  constructor(db: Database.Database) {
    db.exec(SNAPSHOT_SCHEMA);
    this.stmts = {
      put: db.prepare('INSERT OR REPLACE INTO snapshots (projection, position, event_hash, state_json, sha256) VALUES (?,?,?,?,?)'),
      positions: db.prepare('SELECT position FROM snapshots WHERE projection = ? AND position <= ? ORDER BY position DESC').pluck(true),
      get: db.prepare('SELECT * FROM snapshots WHERE projection = ? AND position = ?'),
      clearOne: db.prepare('DELETE FROM snapshots WHERE projection = ?'),
      thin: db.prepare('DELETE FROM snapshots WHERE projection = ? AND position < ? AND position % ? != 0'),
      clearAll: db.prepare('DELETE FROM snapshots'),
      newest: db.prepare('SELECT MAX(position) FROM snapshots WHERE projection = ?').pluck(true),
    };
  }

  put(s: Snapshot): void {
    const state = s.stateJson.length >= DEFLATE_FROM ? deflateRawSync(Buffer.from(s.stateJson, 'utf8'), { level: 1 }) : s.stateJson;
    this.stmts.put.run(s.projection, s.position, s.eventHash, state, s.sha256);
  }

  *candidates(projection: string, position: number): Iterable<Snapshot> {
    // Positions first, then one row at a time: no statement stays open while the caller works.
    for (const p of this.stmts.positions.all(projection, position) as number[]) {
      const r = this.stmts.get.get(projection, p) as SnapshotRow | undefined;
      if (r) yield { projection: r.projection, position: r.position, eventHash: r.event_hash, stateJson: stateJsonOf(r.state_json), sha256: r.sha256 };
    }
  }

  /**
   * Keep the snapshot store bounded on long builds: below `keepFrom`, keep only positions that
   * are multiples of `stride` (a state snapshot grows with the build's history, so keeping one per
   * K events would grow quadratically). Time travel to an old position replays at most `stride`
   * events from the nearest kept snapshot.
   */
  thin(projection: string, keepFrom: number, stride: number): void {
    this.stmts.thin.run(projection, keepFrom, stride);
  }

  newestPosition(projection: string): number | undefined {
    return (this.stmts.newest.get(projection) as number | null) ?? undefined;
  }

  clear(projection?: string): void {
    if (projection === undefined) this.stmts.clearAll.run();
    else this.stmts.clearOne.run(projection);
  }
}

/** A stored state's JSON: TEXT as it is, a BLOB inflated ('' when it does not inflate: a snapshot that then fails its hash). */
function stateJsonOf(stored: string | Buffer): string {
  if (typeof stored === 'string') return stored;
  try {
    return inflateRawSync(stored).toString('utf8');
  } catch {
    return '';
  }
}
