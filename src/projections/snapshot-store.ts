import type Database from 'better-sqlite3';
import { brotliCompressSync, brotliDecompressSync, constants, inflateRawSync } from 'node:zlib';
import type { Snapshot, SnapshotStore } from './snapshots.js';

/**
 * A state's JSON of at least this many bytes is stored compressed (a BLOB in `state_json`; smaller
 * ones stay TEXT): the snapshots were most of what a build keeps besides its log (decision 0017).
 * The snapshot's SHA-256 is over the JSON either way.
 */
const COMPRESS_FROM = 4096;
/**
 * First byte of a Brotli BLOB (decision 0026). It can never start the raw deflate streams written
 * before (its block-type bits are 11, which deflate reserves), so both are read: Brotli at quality
 * 5 stores a build state in 41 % fewer bytes than deflate at level 1, and inflates faster.
 */
const BROTLI = 0xff;
const BROTLI_PARAMS = { [constants.BROTLI_PARAM_QUALITY]: 5 };

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
      keepNewest: db.prepare('DELETE FROM snapshots WHERE projection = ? AND position NOT IN (SELECT position FROM snapshots WHERE projection = ? ORDER BY position DESC LIMIT ?)'),
    };
  }

  put(s: Snapshot): void {
    const state = s.stateJson.length >= COMPRESS_FROM ? compressed(s.stateJson) : s.stateJson;
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

  keepNewest(projection: string, count: number): void {
    this.stmts.keepNewest.run(projection, projection, count);
  }

  newestPosition(projection: string): number | undefined {
    return (this.stmts.newest.get(projection) as number | null) ?? undefined;
  }

  clear(projection?: string): void {
    if (projection === undefined) this.stmts.clearAll.run();
    else this.stmts.clearOne.run(projection);
  }
}

/** A state's JSON as stored: the Brotli marker, then the Brotli stream. */
function compressed(json: string): Buffer {
  const text = Buffer.from(json, 'utf8');
  const body = brotliCompressSync(text, { params: { ...BROTLI_PARAMS, [constants.BROTLI_PARAM_SIZE_HINT]: text.length } });
  const out = Buffer.allocUnsafe(body.length + 1);
  out[0] = BROTLI;
  body.copy(out, 1);
  return out;
}

/**
 * A stored state's JSON: TEXT as it is, a BLOB decompressed — Brotli after its marker, else raw
 * deflate (snapshots written before decision 0026) — or '' when it does not decompress: a snapshot
 * that then fails its hash and is passed over.
 */
function stateJsonOf(stored: string | Buffer): string {
  if (typeof stored === 'string') return stored;
  try {
    return (stored[0] === BROTLI ? brotliDecompressSync(stored.subarray(1)) : inflateRawSync(stored)).toString('utf8');
  } catch {
    return '';
  }
}
