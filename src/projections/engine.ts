import Database from 'better-sqlite3';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import { GENESIS_HASH, sha256Hex } from '../events/hash.js';
import type { StoredEvent } from '../events/envelope.js';
import { FOLD_RUN_EVENTS, type Projection } from './projection.js';
import { checkUniqueNames, differentLog, fingerprintOf, foldRun, POSITIONS_SCHEMA, indexAfter, refoldInPlace, type Runtime, type SnapshotCadence } from './projection-runtime.js';
import { openSnapshot, type SnapshotStore } from './snapshots.js';
import { SnapshotKeeper } from './snapshot-keeper.js';
import { EVENT_INDEX, EventIndexWriter } from './event-index-table.js';
import { SqliteSnapshotStore } from './snapshot-store.js';
import { storedSnapshotsOf, type StoredSnapshots } from './stored-snapshots.js';
import { assertWritable, closeDatabase, openDatabase } from './storage-guard.js';
import { applyEventTables, createTableSql, dumpTable, quoteIdent, TableWriter } from './tables.js';

/**
 * Events queued by `catchUpLater` before they are written in one transaction (decision 0017): the
 * log is the record, the tables a cache that catches up from it on every open, so writing them per
 * append bought nothing but write traffic.
 */
const WRITE_BEHIND_EVENTS = 256;
export interface ProjectionStoreOptions {
  /** Write a snapshot of each projection every K events (0 = never). Default 1000. */
  readonly snapshotEvery?: number;
  /** Events per catch-up transaction. Default 10 000. */
  readonly batchSize?: number;
  /** Keep the event index the viewer reads (event-index-table.ts) beside the projections. Default false. */
  readonly eventIndex?: boolean;
}

/**
 * The projection engine: folds log events through each projection's pure `evolve`
 * and mirrors the resulting entity collections into SQLite tables. The database is a cache
 * (rebuildable from the log), so it runs WAL with synchronous=NORMAL.
 *
 * Usage: `store.catchUp(log.iterateAll(store.resumeFrom()))`. On open, in-memory states are
 * restored from the newest verified snapshot at or before the stored position (or from the
 * initial state); the events between it and the stored position are folded without writing.
 */
export class ProjectionStore {
  readonly db: Database.Database;
  /** Projections whose stored tables were made by another layout or state version (and `event-index` when it is written anew): reset on open, folded again from the log. */
  readonly reset: string[] = [];
  private readonly runtimes: Runtime[];
  private readonly snapshots: SnapshotStore;
  /** Each projection's newest snapshot this store restored or wrote (what a next open would start from). */
  private readonly keeper: SnapshotKeeper;
  private readonly cadence: SnapshotCadence;
  private readonly snapshotEvery: number;
  private readonly batchSize: number;
  private readonly stmts;
  private queued: { events: StoredEvent[]; folded?: ReadonlyMap<string, unknown> } = { events: [] };
  /** The viewer's event index, when kept (options.eventIndex). */
  private readonly eventIndex: EventIndexWriter | null;

  /** Open (or create) a projections database file at `path` (':memory:' for a scratch one). */
  static open(path: string, projections: readonly Projection<any>[], options: ProjectionStoreOptions = {}): ProjectionStore {
    const db = path === ':memory:' ? new Database(path) : openDatabase(path);
    db.pragma('auto_vacuum = INCREMENTAL'); // takes effect in a new file only
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 10000');
    return new ProjectionStore(db, projections, options);
  }

  /** The snapshots of `projection` in the database at `path`, to read without opening a store (stored-snapshots.ts). */
  static snapshotsOf(path: string, projection: Projection<unknown>): StoredSnapshots | null {
    return storedSnapshotsOf(path, projection);
  }

  /** Wrap an open database; creates missing tables and resets projections whose layout changed. */
  constructor(db: Database.Database, projections: readonly Projection<any>[], options: ProjectionStoreOptions = {}) {
    this.db = db;
    this.snapshotEvery = options.snapshotEvery ?? 1000;
    this.batchSize = Math.max(1, options.batchSize ?? 10_000);
    db.exec(POSITIONS_SCHEMA);
    this.snapshots = new SqliteSnapshotStore(db);
    this.keeper = new SnapshotKeeper(this.snapshots, this.snapshotEvery);
    this.cadence = { every: this.snapshotEvery, keeper: this.keeper };
    this.stmts = {
      getPosition: db.prepare('SELECT position, hash, fingerprint FROM projection_positions WHERE name = ?'),
      setPosition: db.prepare('INSERT OR REPLACE INTO projection_positions (name, position, hash, fingerprint) VALUES (?,?,?,?)'),
      clearPositions: db.prepare('DELETE FROM projection_positions'),
    };
    checkUniqueNames(projections);
    this.runtimes = projections.map((p) => this.openRuntime(p as Projection<unknown>));
    this.eventIndex = options.eventIndex === true ? new EventIndexWriter(db) : null;
    // A database of projections without the index (an earlier longbuild): the log is read once more to write it.
    if (this.eventIndex?.made === true && this.runtimes.some((r) => r.storedPosition > 0)) this.reset.push(EVENT_INDEX);
  }

  private openRuntime(projection: Projection<unknown>): Runtime {
    const fingerprint = fingerprintOf(projection);
    const stored = this.stmts.getPosition.get(projection.name) as { position: number; hash: string; fingerprint: string } | undefined;
    const layoutChanged = stored !== undefined && stored.fingerprint !== fingerprint;
    this.db.transaction(() => {
      if (layoutChanged) this.dropTables(projection);
      for (const t of projection.tables) this.db.exec(createTableSql(t));
      if (layoutChanged) {
        this.reset.push(projection.name);
        this.snapshots.clear(projection.name);
        if (projection.view) this.snapshots.clear(projection.view.name);
        this.stmts.setPosition.run(projection.name, 0, GENESIS_HASH, fingerprint);
      }
    })();
    const writers = projection.tables.map((t) => new TableWriter(this.db, t));
    const storedPosition = layoutChanged || !stored ? 0 : stored.position;
    const storedHash = layoutChanged || !stored ? GENESIS_HASH : stored.hash;
    const rt: Runtime = { projection, writers, fingerprint, state: projection.initialState, memPosition: 0, memHash: GENESIS_HASH, storedPosition, storedHash };
    // Restore from the newest snapshot that verifies; a bad one is skipped, never trusted.
    if (storedPosition > 0) {
      for (const s of this.snapshots.candidates(projection.name, storedPosition)) {
        const state = openSnapshot(s);
        if (state === null) continue;
        if (s.position === storedPosition && s.eventHash !== storedHash) continue;
        rt.state = state;
        rt.owned = true;
        rt.memPosition = s.position;
        rt.memHash = s.eventHash;
        this.keeper.restored(projection.name, s.position, s.stateJson.length);
        break;
      }
    }
    return rt;
  }

  private dropTables(projection: Projection<unknown>): void {
    for (const t of projection.tables) this.db.exec(`DROP TABLE IF EXISTS ${quoteIdent(t.name)}`);
  }

  /** The first log position the store needs next; feed `catchUp` events from here on. */
  resumeFrom(): number {
    let min = this.eventIndex?.position() ?? Infinity;
    for (const r of this.runtimes) min = Math.min(min, r.memPosition);
    return (min === Infinity ? 0 : min) + 1;
  }

  /** Lowest position every projection's tables reflect (0 when empty or no projections). */
  position(): number {
    let min = Infinity;
    for (const r of this.runtimes) min = Math.min(min, r.storedPosition);
    return min === Infinity ? 0 : min;
  }

  /** Highest position any projection's tables reflect; a log shorter than this was truncated. */
  highestPosition(): number {
    return this.runtimes.reduce((m, r) => Math.max(m, r.storedPosition), 0);
  }

  /** Stored position of each projection, by name. */
  positions(): Record<string, number> {
    return Object.fromEntries(this.runtimes.map((r) => [r.projection.name, r.storedPosition]));
  }

  /** The in-memory state of a projection (as of its stored position once caught up). */
  state<S>(name: string): S {
    const r = this.runtimes.find((x) => x.projection.name === name);
    if (!r) throw new ValidationError(`no projection named '${name}'`);
    return r.state as S;
  }

  /** The projections this store maintains. */
  projections(): Projection<unknown>[] {
    return this.runtimes.map((r) => r.projection);
  }

  /**
   * Apply events in position order (events already folded are skipped). Each batch of
   * `batchSize` events is one transaction that writes the changed rows and the positions.
   * Pass every event from `resumeFrom()` to the log's head. Throws CorruptLogError when the events
   * do not continue the chain the store has seen, or end before the position its tables reflect.
   * With `more` (a caller reading the log a page at a time), that end is not checked: the caller
   * passes the next page, and calls `assertNotTruncated()` after the last.
   * Returns the number of events read.
   */
  catchUp(events: Iterable<StoredEvent>, folded?: ReadonlyMap<string, unknown>, more = false): number {
    this.flush();
    assertWritable(this.db.name);
    let batch: StoredEvent[] = [];
    let count = 0;
    for (const e of events) {
      batch.push(e);
      count += 1;
      if (batch.length >= this.batchSize) {
        this.applyBatch(batch);
        batch = [];
      }
    }
    if (batch.length > 0) this.applyBatch(batch, folded);
    if (!more) this.assertNotTruncated();
    return count;
  }

  /** Throws CorruptLogError when the events given ran out before the position the tables already reflect: the log lost its tail. */
  assertNotTruncated(): void {
    for (const r of this.runtimes) {
      if (r.memPosition < r.storedPosition) {
        throw new CorruptLogError(r.memPosition + 1, `log truncated: projection ${r.projection.name} has seen position ${r.storedPosition}, but the log ends at ${r.memPosition}`);
      }
    }
  }

  /**
   * Queue appended events the caller has folded (`folded`: the state after the last of them, as
   * for `catchUp`); they are written together once WRITE_BEHIND_EVENTS are queued, when one of
   * them sits on a snapshot boundary, or by `flush()` (which `catchUp` and `close` call). A crash
   * loses only queued writes of a cache: the next open catches up from the log.
   */
  catchUpLater(events: readonly StoredEvent[], folded: ReadonlyMap<string, unknown>): void {
    this.queued.events.push(...events);
    this.queued.folded = folded;
    const boundary = this.snapshotEvery > 0 && events.some((e) => e.position % this.snapshotEvery === 0);
    if (boundary || this.queued.events.length >= WRITE_BEHIND_EVENTS) this.flush();
  }

  /** Write the queued events (see catchUpLater); the queue is emptied whether or not that succeeds. */
  flush(): void {
    const { events, folded } = this.queued;
    if (events.length === 0) return;
    this.queued = { events: [] };
    this.catchUp(events, folded);
  }

  /** Drop every projection table and snapshot and fold the whole log again, in one transaction. */
  rebuild(allEvents: Iterable<StoredEvent>): number {
    let count = 0;
    this.guarded(() => {
      this.db.transaction(() => {
        this.snapshots.clear();
        this.stmts.clearPositions.run();
        for (const r of this.runtimes) {
          this.dropTables(r.projection);
          for (const t of r.projection.tables) this.db.exec(createTableSql(t));
          Object.assign(r, { state: r.projection.initialState, owned: false, memPosition: 0, memHash: GENESIS_HASH, storedPosition: 0, storedHash: GENESIS_HASH });
          this.stmts.setPosition.run(r.projection.name, 0, GENESIS_HASH, r.fingerprint);
        }
        // Fold everything in runs, then write the difference from the initial state once.
        this.eventIndex?.clear();
        let run: StoredEvent[] = [];
        const flush = (): void => {
          for (const r of this.runtimes) foldRun(r, run, 0, run.length, this.cadence);
          for (const w of this.runtimes.flatMap((r) => r.writers)) w.applyEvents(run);
          this.eventIndex?.append(run);
          run = [];
        };
        for (const e of allEvents) {
          count += 1;
          run.push(e);
          if (run.length === FOLD_RUN_EVENTS) flush();
        }
        if (run.length > 0) flush();
        for (const r of this.runtimes) this.writeUpTo(r, r.projection.initialState, 'applied');
      }).immediate();
    });
    return count;
  }

  /**
   * `folded` may give, per projection name, the state after the batch's last event, already folded
   * by the caller (the controller folds every event it appends): the engine then checks the chain
   * and takes that state instead of evolving the events a second time. The fold is deterministic
   * so both paths write the same rows.
   */
  private applyBatch(batch: readonly StoredEvent[], folded?: ReadonlyMap<string, unknown>): void {
    // Events the tables already reflect, folded in place where a projection can: memory only,
    // before the transaction (whose rollback restores states it saved, which a fold in place would
    // have changed under it).
    for (const r of this.runtimes) {
      if (r.memPosition >= r.storedPosition || r.projection.evolveInPlace === undefined) continue;
      const from = indexAfter(batch, r.memPosition);
      refoldInPlace(r, batch, from, indexAfter(batch, r.storedPosition, from));
    }
    this.guarded(() => {
      this.db.transaction(() => {
        for (const r of this.runtimes) {
          const known = folded?.get(r.projection.name);
          if (known !== undefined && this.adoptFolded(r, batch, known)) continue;
          // Events this projection has not folded yet (a restore from a snapshot older than the
          // tables refolds up to the stored position without writing).
          const from = indexAfter(batch, r.memPosition);
          if (from === batch.length) continue;
          // The state the tables currently mirror; set once folding reaches the stored position.
          let base: unknown = r.memPosition === r.storedPosition ? r.state : undefined;
          let upTo = from;
          if (base === undefined) {
            upTo = indexAfter(batch, r.storedPosition, from);
            foldRun(r, batch, from, upTo, this.cadence);
            if (r.memPosition === r.storedPosition) {
              if (r.memHash !== r.storedHash) {
                throw differentLog(r);
              }
              base = r.state;
            }
          }
          foldRun(r, batch, upTo, batch.length, this.cadence);
          if (base !== undefined && r.memPosition > r.storedPosition) this.writeUpTo(r, base, batch);
        }
        this.eventIndex?.append(batch);
      }).immediate();
    });
  }

  /** Take a caller-folded state for a batch that directly continues the tables; false = fold instead. */
  private adoptFolded(r: Runtime, batch: readonly StoredEvent[], state: unknown): boolean {
    if (r.memPosition !== r.storedPosition) return false;
    let position = r.memPosition;
    let hash = r.memHash;
    for (const e of batch) {
      if (e.position !== position + 1 || e.prevHash !== hash) return false; // let fold() report it
      // A snapshot boundary inside the batch needs the state at that position: fold instead.
      if (this.snapshotEvery > 0 && e.position % this.snapshotEvery === 0 && e !== batch[batch.length - 1]) return false;
      position = e.position;
      hash = e.hash;
    }
    const base = r.state;
    r.state = state;
    r.owned = false; // the caller's
    r.memPosition = position;
    r.memHash = hash;
    if (this.snapshotEvery > 0 && position % this.snapshotEvery === 0) this.keeper.put(r.projection, position, hash, state);
    this.writeUpTo(r, base, batch);
    return true;
  }

  /**
   * Write rows changed since `base` (the state the tables mirror; event-kept tables: `events`) and
   * record the position. In a write transaction, so the stored position read here is the tables':
   * when another process (a reading command catching up while a run writes) moved them since this
   * store wrote, tables at or past this state are left as they are, tables between written whole.
   */
  private writeUpTo(r: Runtime, base: unknown, events: readonly StoredEvent[] | 'applied'): void {
    const onDisk = this.stmts.getPosition.get(r.projection.name) as { position: number; hash: string } | undefined;
    let whole = false;
    let held = r.storedPosition; // what event-kept tables (TableSpec.fromEvent) hold
    if (onDisk !== undefined && (onDisk.position !== r.storedPosition || onDisk.hash !== r.storedHash)) {
      if (onDisk.position >= r.memPosition) {
        // Written by someone else up to here or beyond: this state (a fold of the same log) is not
        // newer. Nothing is written; the next write of this store compares with the file again.
        r.storedPosition = r.memPosition;
        r.storedHash = r.memHash;
        return;
      }
      whole = true;
      held = onDisk.position;
      for (const t of r.projection.tables) if (t.fromEvent === undefined) this.db.exec(`DELETE FROM ${quoteIdent(t.name)}`);
    }
    if (events !== 'applied') applyEventTables(r.writers, events, held, r.state);
    // Tables that hold nothing yet are written whole: diffing against the initial state would skip
    // every row whose value the initial state already had (then a value that returns to it later,
    // e.g. `blocked` cleared by a retry, is written by a catch-up and not by a rebuild).
    const from = r.storedPosition === 0 || whole ? null : base;
    for (const w of r.writers) w.writeDiff(from, r.state);
    r.storedPosition = r.memPosition;
    r.storedHash = r.memHash;
    this.stmts.setPosition.run(r.projection.name, r.storedPosition, r.storedHash, r.fingerprint);
  }

  /** Keep memory consistent with the database: if the transaction fails, memory rolls back too. */
  private guarded(work: () => void): void {
    const saved = this.runtimes.map((r) => ({ state: r.state, memPosition: r.memPosition, memHash: r.memHash, storedPosition: r.storedPosition, storedHash: r.storedHash }));
    try {
      work();
    } catch (err) {
      this.runtimes.forEach((r, i) => Object.assign(r, saved[i]));
      throw err;
    }
  }

  /**
   * Canonical, byte-stable dump of every projection table: projections by name, tables by
   * name, rows by primary key; one canonical JSON line each, newline-terminated.
   */
  dump(): string {
    const lines: string[] = [];
    const tables = this.runtimes.flatMap((r) => r.projection.tables).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const t of tables) lines.push(...dumpTable(this.db, t));
    return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
  }

  /** The event index's rows (event-index-table.ts), '' when this store keeps none; not part of `dump()`. */
  dumpEventIndex(): string {
    return this.eventIndex?.dump() ?? '';
  }

  /** SHA-256 of `dump()`. */
  dumpSha256(): string {
    return sha256Hex(this.dump());
  }

  /** Write what is queued and close the database (it is closed even when that write fails). */
  close(): void {
    try {
      this.flush();
      this.keeper.heads(this.runtimes);
      // Pages freed by replaced snapshots and compacted nodes go back to the file system (decision 0034).
      if ((this.db.pragma('freelist_count', { simple: true }) as number) > 0) this.db.pragma('incremental_vacuum');
    } finally {
      closeDatabase(this.db);
    }
  }
}
