import type Database from 'better-sqlite3';
import { canonicalJson, stripUndefined } from '../events/canonical.js';
import { ValidationError } from '../events/errors.js';
import { sha256Hex } from '../events/hash.js';

/**
 * A projection's state as of a position, cached. Never authority: `sha256` binds the
 * projection name, the position, the hash of the event at that position and the state bytes,
 * so a snapshot from another log, another position or with edited bytes is refused.
 */
export interface Snapshot {
  readonly projection: string;
  readonly position: number;
  /** Hash of the log event at `position`; the next event's prevHash must equal it. */
  readonly eventHash: string;
  readonly stateJson: string;
  readonly sha256: string;
}

/** Where snapshots are kept. `candidates` yields those at or before `position`, newest first. */
export interface SnapshotStore {
  put(snapshot: Snapshot): void;
  candidates(projection: string, position: number): Iterable<Snapshot>;
  clear(projection?: string): void;
  /** Drop snapshots below `keepFrom` whose position is not a multiple of `stride` (optional). */
  thin?(projection: string, keepFrom: number, stride: number): void;
}

/** The hash a snapshot must carry. */
export function snapshotSha256(projection: string, position: number, eventHash: string, stateJson: string): string {
  return sha256Hex(`${JSON.stringify(projection)}\n${position}\n${eventHash}\n${stateJson}`);
}

/**
 * Encode a state as a snapshot. States must be plain JSON (records and arrays, no Maps);
 * keys holding `undefined` are dropped, which optional fields tolerate.
 */
export function makeSnapshot(projection: string, position: number, eventHash: string, state: unknown): Snapshot {
  let stateJson: string;
  try {
    stateJson = canonicalJson(stripUndefined(state));
  } catch (err) {
    throw new ValidationError(`projection ${projection}: state is not plain JSON, cannot snapshot (${(err as Error).message})`, 'R-6');
  }
  return { projection, position, eventHash, stateJson, sha256: snapshotSha256(projection, position, eventHash, stateJson) };
}

/** Decode a snapshot's state, or null when the snapshot does not verify. */
export function openSnapshot<S>(s: Snapshot): S | null {
  if (snapshotSha256(s.projection, s.position, s.eventHash, s.stateJson) !== s.sha256) return null;
  try {
    return JSON.parse(s.stateJson) as S;
  } catch {
    return null;
  }
}

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
  state_json: string;
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
    };
  }

  put(s: Snapshot): void {
    this.stmts.put.run(s.projection, s.position, s.eventHash, s.stateJson, s.sha256);
  }

  *candidates(projection: string, position: number): Iterable<Snapshot> {
    // Positions first, then one row at a time: no statement stays open while the caller works.
    for (const p of this.stmts.positions.all(projection, position) as number[]) {
      const r = this.stmts.get.get(projection, p) as SnapshotRow | undefined;
      if (r) yield { projection: r.projection, position: r.position, eventHash: r.event_hash, stateJson: r.state_json, sha256: r.sha256 };
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

  clear(projection?: string): void {
    if (projection === undefined) this.stmts.clearAll.run();
    else this.stmts.clearOne.run(projection);
  }
}
