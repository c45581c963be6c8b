import Database from 'better-sqlite3';
import type { EventLog } from '../../events/log.js';
import { eventLeafHash, hashLeaves, nodeHash, type Hash, type TreeSource } from '../../events/merkle.js';

/** Leaves per tile: subtrees of 2^8 leaves and above are stored (as c2sp.org/tlog-tiles' tile height). */
export const TILE_LEVEL = 8;
const TILE = 1 << TILE_LEVEL;
const READ_PAGE = 8192;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS leaves (idx INTEGER PRIMARY KEY, hash BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID;
`;

/**
 * The Merkle tree of the log, kept incrementally in `<dir>/tree.db`: every leaf hash and
 * the hash of every complete subtree of 256 leaves or more, so a root or a proof at any size
 * reads O(log n) stored nodes and at most a few hundred leaves. A cache like the projections:
 * derived from the log, checked against signed checkpoints, rebuilt when it disagrees.
 */
export class TreeStore {
  private readonly db: Database.Database;
  private readonly stmts;

  private constructor(path: string) {
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 10000');
    this.db.exec(SCHEMA);
    this.stmts = {
      size: this.db.prepare('SELECT COALESCE(MAX(idx) + 1, 0) AS n FROM leaves').pluck(true),
      leaves: this.db.prepare('SELECT hash FROM leaves WHERE idx >= ? AND idx < ? ORDER BY idx').pluck(true),
      insertLeaf: this.db.prepare('INSERT OR REPLACE INTO leaves (idx, hash) VALUES (?, ?)'),
      node: this.db.prepare('SELECT hash FROM nodes WHERE level = ? AND idx = ?').pluck(true),
      insertNode: this.db.prepare('INSERT OR REPLACE INTO nodes (level, idx, hash) VALUES (?, ?, ?)'),
    };
  }

  static open(path: string): TreeStore {
    return new TreeStore(path);
  }

  /** Leaves stored so far (the tree size it can prove at). */
  size(): number {
    return this.stmts.size.get() as number;
  }

  /** Add the log's events after what is stored, up to `upTo` (default: the log's head). */
  async catchUp(log: EventLog, upTo?: number): Promise<number> {
    let size = this.size();
    const target = upTo ?? (await log.head())?.position ?? 0;
    while (size < target) {
      const hashes = await log.readHashes(size + 1, Math.min(READ_PAGE, target - size));
      if (hashes.length === 0) break;
      this.append(size, hashes.map(eventLeafHash));
      size += hashes.length;
    }
    return size;
  }

  /** Store leaves from index `start` on, and every subtree of 256 or more they complete. */
  append(start: number, leafHashes: readonly Hash[]): void {
    this.db.transaction(() => {
      for (let i = 0; i < leafHashes.length; i++) {
        const idx = start + i;
        this.stmts.insertLeaf.run(idx, leafHashes[i]!);
        if ((idx + 1) % TILE !== 0) continue;
        let index = (idx + 1) / TILE - 1;
        let hash = hashLeaves(this.leaves(index * TILE, (index + 1) * TILE));
        this.stmts.insertNode.run(TILE_LEVEL, index, hash);
        for (let level = TILE_LEVEL; index % 2 === 1; level++) {
          hash = nodeHash(this.node(level, index - 1)!, hash);
          index = (index - 1) / 2;
          this.stmts.insertNode.run(level + 1, index, hash);
        }
      }
    })();
  }

  /** Forget everything from leaf `from` on (the log was found to differ there). */
  truncate(from: number): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM leaves WHERE idx >= ?').run(from);
      for (let level = TILE_LEVEL; level < 64; level++) this.db.prepare('DELETE FROM nodes WHERE level = ? AND (idx + 1) * ? > ?').run(level, 2 ** level, from);
    })();
  }

  leaves(start: number, end: number): Hash[] {
    return this.stmts.leaves.all(start, end) as Hash[];
  }

  node(level: number, index: number): Hash | undefined {
    return level >= TILE_LEVEL ? (this.stmts.node.get(level, index) as Hash | undefined) : undefined;
  }

  /** The store as a proof source. */
  source(): TreeSource {
    return { leaves: (s, e) => this.leaves(s, e), node: (l, i) => this.node(l, i) };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
