import { accessSync, constants } from 'node:fs';
import Database from 'better-sqlite3';
import { StorageError } from '../events/errors.js';
import { storageErrorOf } from './storage-errors.js';

export { asStorageError, formatBytes, freeBytes, freeSpace, storageErrorOf } from './storage-errors.js';

/**
 * I/O failures on the build's files, named. SQLite reports "database or disk is full"
 * without saying which database; a failing `writeFileSync` names its file but reads as an
 * internal error. Every file the build keeps is opened through these guards, so a full disk, an
 * I/O error or a read-only file ends in one line naming the file (StorageError, exit 1).
 */

/**
 * Refuse to write a SQLite database whose file, WAL or shared-memory index cannot be written
 * (made read-only or immutable while the build runs): SQLite maps the `-shm` file into memory,
 * and a write to a mapping of an immutable file kills the process with SIGBUS, no message. A
 * check before each write transaction turns that into a StorageError naming the file.
 */
export function assertWritable(path: string): void {
  if (path === '' || path === ':memory:') return;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      accessSync(file, constants.W_OK);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ENOENT') continue;
      throw new StorageError(file, 'read-only', `${code}: the file is read-only or immutable (chattr +i?)`);
    }
  }
}

/**
 * Close a database, unless its files were made unwritable: closing the last connection of a WAL
 * database checkpoints it through the memory-mapped `-shm` file (SIGBUS, see assertWritable).
 * Such a database is left open; the process ends soon after, and the kernel drops its locks.
 */
export function closeDatabase(db: Database.Database): void {
  if (!db.open) return;
  try {
    assertWritable(db.name);
  } catch {
    return;
  }
  db.close();
}

/** Run `fn`; an I/O failure it throws (or its promise rejects with) becomes a StorageError naming `path`. */
export function guarded<T>(path: string, fn: () => T): T {
  let result: T;
  try {
    result = fn();
  } catch (err) {
    throw storageErrorOf(err, path) ?? err;
  }
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw storageErrorOf(err, path) ?? err;
    }) as T;
  }
  return result;
}

/**
 * Open a SQLite database to read it, also on a full disk: WAL's shared-memory index
 * (`-shm`) must grow when a connection first reads, which a full filesystem refuses; the database
 * is then opened again with the index in this process's memory (exclusive locking mode, set before
 * the first read), which writes nothing. A writer waits meanwhile (it could not write anyway).
 */
export function openDatabaseToRead(path: string): Database.Database {
  const db = openDatabase(path);
  try {
    db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
    return db;
  } catch (err) {
    if (!(err instanceof StorageError) || (err.problem !== 'full' && err.problem !== 'io')) {
      closeDatabase(db);
      throw err;
    }
    closeDatabase(db);
    // Exclusive locking before anything reads the file (bounding the cache reads the schema).
    const memory = openGuarded(path);
    memory.pragma('locking_mode = EXCLUSIVE');
    boundPageCache(memory);
    memory.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
    return memory;
  }
}

/**
 * The page cache of every SQLite connection longbuild opens, in KiB (decision 0055). SQLite's own
 * default is 2,000 KiB; better-sqlite3 builds it with 16,000 KiB, which a connection fills as its
 * file grows. A `run` holds three connections whose files grow (the log, the projections, the
 * transparency tree; the log's writer thread a fourth for batches of thousands of events), so its
 * native memory grew with the build's length: at 20,000 nodes the main thread's malloc arena held
 * 34 MB against 11 at 1,000 nodes. At 2,048 KiB the same run's peak RSS is ~20 MB lower (~36 MB
 * at 50,000 nodes), in the same time.
 */
export const PAGE_CACHE_KIB = 2048;

/** The pragma that bounds a connection's page cache to PAGE_CACHE_KIB. */
export const PAGE_CACHE_PRAGMA = `cache_size = -${PAGE_CACHE_KIB}`;

/** Open a SQLite database whose every failure names `path` (see guardDatabase), its page cache bounded (PAGE_CACHE_KIB). */
export function openDatabase(path: string, options?: Database.Options): Database.Database {
  const db = openGuarded(path, options);
  boundPageCache(db);
  return db;
}

/**
 * Open a SQLite database whose every failure names `path`, as better-sqlite3 opens it: no
 * statement runs before the caller's first. For the lease's lock file, which holds nothing (its
 * cache never grows) and whose first statements are a race for its lock.
 */
export function openGuarded(path: string, options?: Database.Options): Database.Database {
  return guardDatabase(guarded(path, () => new Database(path, options)), path);
}

/**
 * Bound `db`'s page cache (PAGE_CACHE_KIB). Setting it reads the schema, which a file that cannot
 * be read at open refuses — a WAL database on a full disk (its shared-memory file cannot be made),
 * one locked by another process, one that is not a database. That failure is left to the caller's
 * first statement, which meets it in its place as before (`openDatabaseToRead` then reads
 * without shared memory and bounds that connection's cache); this connection keeps better-sqlite3's
 * default.
 */
function boundPageCache(db: Database.Database): void {
  try {
    db.pragma(PAGE_CACHE_PRAGMA);
  } catch {
    // reported by the caller's first statement (above)
  }
}

const STATEMENT_METHODS = ['run', 'get', 'all', 'iterate'] as const;

/**
 * Make every failure of `db` (statements, transactions, pragmas, exec) a StorageError naming
 * `path`. Methods are wrapped on the instances, once: statements keep working as before
 * (`.raw()`, `.pluck()` return the same, wrapped, statement).
 */
export function guardDatabase(db: Database.Database, path: string): Database.Database {
  const wrap = <F extends (...args: any[]) => any>(f: F): F => ((...args: any[]) => guarded(path, () => f(...args))) as F;
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    const stmt = guarded(path, () => prepare(sql)) as unknown as Record<string, unknown>;
    for (const m of STATEMENT_METHODS) {
      const original = stmt[m] as (...args: any[]) => any;
      stmt[m] = m === 'iterate'
        ? (...args: any[]) => guardIterator(path, guarded(path, () => original.apply(stmt, args)) as IterableIterator<unknown>)
        : wrap(original.bind(stmt));
    }
    return stmt;
  }) as unknown as typeof db.prepare;
  db.exec = wrap(db.exec.bind(db)) as typeof db.exec;
  db.pragma = wrap(db.pragma.bind(db)) as typeof db.pragma;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...a: any[]) => any) => {
    const t = transaction(fn) as any;
    const g = wrap(t) as any;
    for (const mode of ['deferred', 'immediate', 'exclusive'] as const) g[mode] = wrap(t[mode]);
    return g;
  }) as typeof db.transaction;
  return db;
}

function guardIterator<T>(path: string, it: Iterator<T>): IterableIterator<T> {
  const next = (): IteratorResult<T> => guarded(path, () => it.next());
  const guardedIt: IterableIterator<T> = {
    next,
    return: (value?: unknown) => it.return?.(value) ?? { done: true, value: undefined as T },
    [Symbol.iterator]: () => guardedIt,
  };
  return guardedIt;
}
