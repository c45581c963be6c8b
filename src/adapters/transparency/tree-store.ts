import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { closeDatabase, openDatabase } from '../../projections/storage-guard.js';
import type { EventLog } from '../../events/event-log.js';
import { eventLeafHash, hashLeaves, nodeHash, type Hash, type TreeSource } from '../../events/merkle.js';
import { CorruptLogError } from '../../events/errors.js';

/** Leaves per tile: subtrees of 2^8 leaves and above are stored (as c2sp.org/tlog-tiles' tile height). */
export const TILE_LEVEL = 8;
const TILE = 1 << TILE_LEVEL;
const HASH = 32;
const READ_PAGE = 8192;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tiles (idx INTEGER PRIMARY KEY, hashes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (level, idx)) WITHOUT ROWID;
`;

/**
 * Leaf hashes `start` (inclusive) to `end` (exclusive) read from the log itself, synchronously (a
 * SQLite log): leaf i is the leaf hash of the event at position i + 1.
 */
export type LogLeaves = (start: number, end: number) => Hash[];

/**
 * The Merkle tree of the log, kept incrementally in `<dir>/tree.db`: the leaf hashes in
 * tiles of 256 (one row each, the last one partial) and the hash of every complete subtree of 256
 * leaves or more, so a root or a proof at any size reads O(log n) stored nodes and at most a few
 * hundred leaves. A cache like the projections: derived from the log, checked against signed
 * checkpoints, rebuilt when it disagrees; so it is written without fsync.
 *
 * With `logLeaves` (a log that reads synchronously), a complete tile keeps only its subtree's hash:
 * its row holds an empty BLOB, and its leaves are read from the log when a proof needs them
 * (decision 0034: the leaves were a second copy of the log's hashes, ~30 bytes per event).
 */
export class TreeStore {
  private readonly db: Database.Database;
  private readonly stmts;
  private leafCount: number;

  private constructor(path: string, private readonly logLeaves?: LogLeaves, readonly = false) {
    this.db = path === ':memory:' ? new Database(path) : openDatabase(path, readonly ? { readonly: true, fileMustExist: true } : undefined);
    this.db.pragma('busy_timeout = 10000');
    if (!readonly) {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.exec(SCHEMA);
    }
    this.stmts = {
      last: this.db.prepare('SELECT idx, length(hashes) AS bytes FROM tiles ORDER BY idx DESC LIMIT 1'),
      tiles: this.db.prepare('SELECT idx, hashes FROM tiles WHERE idx >= ? AND idx <= ? ORDER BY idx'),
      tile: this.db.prepare('SELECT hashes FROM tiles WHERE idx = ?').pluck(true),
      putTile: this.db.prepare('INSERT OR REPLACE INTO tiles (idx, hashes) VALUES (?, ?)'),
      node: this.db.prepare('SELECT hash FROM nodes WHERE level = ? AND idx = ?').pluck(true),
      putNode: this.db.prepare('INSERT OR REPLACE INTO nodes (level, idx, hash) VALUES (?, ?, ?)'),
    };
    const last = this.stmts.last.get() as { idx: number; bytes: number } | undefined;
    // An empty tile is a complete one whose leaves are the log's.
    this.leafCount = last ? last.idx * TILE + (last.bytes === 0 ? TILE : last.bytes / HASH) : 0;
  }

  static open(path: string, logLeaves?: LogLeaves): TreeStore {
    return new TreeStore(path, logLeaves);
  }

  /** Open an existing store only to read it (`verify`: nothing is written, a full disk does not matter). */
  static openReadOnly(path: string, logLeaves?: LogLeaves): TreeStore {
    return new TreeStore(path, logLeaves, true);
  }

  /**
   * Where the store disagrees with the log's leaf hashes, or null (a flipped byte in
   * tree.db would otherwise go into proofs). Every leaf it holds and every subtree hash it keeps
   * is compared with one computed from `leaves`; a store holding more leaves than the log is a
   * disagreement too. O(n): the subtree hashes are computed level by level.
   */
  disagreement(leaves: readonly Hash[]): { leaf: number; what: string } | null {
    if (this.leafCount > leaves.length) return { leaf: leaves.length, what: `it holds ${this.leafCount} leaves, the log has ${leaves.length} events` };
    for (const row of this.db.prepare('SELECT idx, hashes FROM tiles ORDER BY idx').all() as { idx: number; hashes: Buffer }[]) {
      for (let k = 0; k < row.hashes.length / HASH; k++) {
        const at = row.idx * TILE + k;
        if (!row.hashes.subarray(k * HASH, (k + 1) * HASH).equals(leaves[at]!)) return { leaf: at, what: `its leaf ${at} is not the hash of event ${at + 1}` };
      }
    }
    const expected = new Map<string, Hash>();
    let level: Hash[] = [];
    for (let t = 0; (t + 1) * TILE <= this.leafCount; t++) level.push(hashLeaves(leaves.slice(t * TILE, (t + 1) * TILE)));
    for (let l = TILE_LEVEL; level.length > 0; l++) {
      level.forEach((h, i) => expected.set(`${l}:${i}`, h));
      const up: Hash[] = [];
      for (let i = 0; i + 1 < level.length; i += 2) up.push(nodeHash(level[i]!, level[i + 1]!));
      level = up;
    }
    for (const row of this.db.prepare('SELECT level, idx, hash FROM nodes ORDER BY level, idx').all() as { level: number; idx: number; hash: Buffer }[]) {
      const want = expected.get(`${row.level}:${row.idx}`);
      if (want === undefined || !want.equals(row.hash)) return { leaf: row.idx * 2 ** row.level, what: `its hash of leaves ${row.idx * 2 ** row.level}..${(row.idx + 1) * 2 ** row.level - 1} is not the log's` };
    }
    return null;
  }

  /** Leaves stored so far (the tree size it can prove at). */
  size(): number {
    return this.leafCount;
  }

  /** Add the log's events after what is stored, up to `upTo` (default: the log's head). */
  async catchUp(log: EventLog, upTo?: number): Promise<number> {
    const target = upTo ?? (await log.head())?.position ?? 0;
    while (this.leafCount < target) {
      const hashes = await log.readHashes(this.leafCount + 1, Math.min(READ_PAGE, target - this.leafCount));
      if (hashes.length === 0) break;
      this.append(hashes.map(eventLeafHash));
    }
    return this.leafCount;
  }

  /** Store leaves after the last one, and every subtree of 256 or more they complete. */
  append(leafHashes: readonly Hash[]): void {
    if (leafHashes.length === 0) return;
    this.db.transaction(() => {
      let i = 0;
      while (i < leafHashes.length) {
        const tileIdx = Math.floor(this.leafCount / TILE);
        const have = this.leafCount % TILE;
        const take = Math.min(TILE - have, leafHashes.length - i);
        const old = have === 0 ? Buffer.alloc(0) : (this.stmts.tile.get(tileIdx) as Buffer);
        const tile = Buffer.concat([old.subarray(0, have * HASH), ...leafHashes.slice(i, i + take)]);
        const complete = have + take === TILE;
        this.stmts.putTile.run(tileIdx, complete && this.logLeaves !== undefined ? Buffer.alloc(0) : tile);
        i += take;
        this.leafCount += take;
        if (complete) this.completeTile(tileIdx, tile);
      }
    })();
  }

  private completeTile(index: number, tile: Buffer): void {
    const leaves: Hash[] = new Array(TILE);
    for (let k = 0; k < TILE; k++) leaves[k] = tile.subarray(k * HASH, (k + 1) * HASH);
    let hash = hashLeaves(leaves);
    this.stmts.putNode.run(TILE_LEVEL, index, hash);
    for (let level = TILE_LEVEL; index % 2 === 1; level++) {
      hash = nodeHash(this.node(level, index - 1)!, hash);
      index = (index - 1) / 2;
      this.stmts.putNode.run(level + 1, index, hash);
    }
  }

  /** Forget everything from leaf `from` on (the log was found to differ there). */
  truncate(from: number): void {
    if (from >= this.leafCount) return;
    this.db.transaction(() => {
      const tileIdx = Math.floor(from / TILE);
      this.db.prepare('DELETE FROM tiles WHERE idx > ?').run(tileIdx);
      const keep = from % TILE;
      if (keep === 0) this.db.prepare('DELETE FROM tiles WHERE idx = ?').run(tileIdx);
      else this.stmts.putTile.run(tileIdx, Buffer.concat(this.leaves(tileIdx * TILE, from)));
      for (let level = TILE_LEVEL; level < 53; level++) this.db.prepare('DELETE FROM nodes WHERE level = ? AND (idx + 1) * ? > ?').run(level, 2 ** level, from);
    })();
    this.leafCount = from;
  }

  leaves(start: number, end: number): Hash[] {
    const out: Hash[] = [];
    if (end <= start) return out;
    for (const row of this.stmts.tiles.all(Math.floor(start / TILE), Math.floor((end - 1) / TILE)) as { idx: number; hashes: Buffer }[]) {
      const base = row.idx * TILE;
      if (row.hashes.length === 0) {
        out.push(...this.fromLog(Math.max(start, base), Math.min(end, base + TILE)));
        continue;
      }
      for (let k = Math.max(start - base, 0); k < row.hashes.length / HASH && base + k < end; k++) out.push(row.hashes.subarray(k * HASH, (k + 1) * HASH));
    }
    return out;
  }

  /** Leaves of a complete tile, from the log (a tree.db written with a log that reads them). */
  private fromLog(start: number, end: number): Hash[] {
    if (this.logLeaves === undefined) throw new CorruptLogError(start + 1, `${this.db.name} keeps the leaves of this tile in the log, which cannot be read here; delete it (a cache) and run the command again`);
    const leaves = this.logLeaves(start, end);
    if (leaves.length !== end - start) throw new CorruptLogError(start + leaves.length + 1, `the log ends before leaf ${end} of its Merkle tree (truncated?); run \`longbuild verify\``);
    return leaves;
  }

  node(level: number, index: number): Hash | undefined {
    return level >= TILE_LEVEL ? (this.stmts.node.get(level, index) as Hash | undefined) : undefined;
  }

  /** The store as a proof source. */
  source(): TreeSource {
    return { leaves: (s, e) => this.leaves(s, e), node: (l, i) => this.node(l, i) };
  }

  close(): void {
    closeDatabase(this.db);
  }
}

/** How `verify` names a problem of the tree cache (and knows `rebuild` is its remedy). */
export const TREE_PROBLEM = 'the Merkle tree cache';

/**
 * The Merkle tree cache at `path` against the log's leaves: a flipped byte there would
 * go into the proofs `prove` hands out. Read only; a store behind the log is fine (it catches up).
 */
export function treeCacheProblems(path: string, leaves: readonly Hash[]): { position: number; problem: string }[] {
  if (!existsSync(path)) return [];
  let store: TreeStore | null = null;
  try {
    store = TreeStore.openReadOnly(path);
    const d = store.disagreement(leaves);
    return d === null ? [] : [{ position: d.leaf + 1, problem: `${TREE_PROBLEM} ${path} disagrees with the log: ${d.what}` }];
  } catch (err) {
    return [{ position: 1, problem: `${TREE_PROBLEM} ${path} cannot be read (${(err as Error).message.split('\n')[0]})` }];
  } finally {
    store?.close();
  }
}
