import { accessSync, constants, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { StorageError, type StorageProblem } from '../events/errors.js';

/**
 * I/O failures on the build's files, named (issue 17). SQLite reports "database or disk is full"
 * without saying which database; a failing `writeFileSync` names its file but reads as an
 * internal error. Every file the build keeps is opened through these guards, so a full disk, an
 * I/O error or a read-only file ends in one line naming the file (StorageError, exit 1).
 */

const SQLITE_PROBLEMS: readonly [RegExp, StorageProblem][] = [
  [/^SQLITE_(FULL$|IOERR_SHMSIZE)/, 'full'],
  [/^SQLITE_READONLY/, 'read-only'],
  [/^SQLITE_(NOTADB|CORRUPT)/, 'damaged'],
  [/^SQLITE_(IOERR|CANTOPEN)/, 'io'],
];

const ERRNO_PROBLEMS: Readonly<Record<string, StorageProblem>> = {
  ENOSPC: 'full', EDQUOT: 'full', EFBIG: 'full',
  EROFS: 'read-only', EACCES: 'read-only', EPERM: 'read-only',
  EIO: 'io', ENXIO: 'io', ESTALE: 'io',
};

/** The StorageError an error from reading or writing `path` stands for, or null when it is something else. */
export function storageErrorOf(err: unknown, path: string): StorageError | null {
  if (err instanceof StorageError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  const problem = ERRNO_PROBLEMS[code] ?? SQLITE_PROBLEMS.find(([re]) => re.test(code))?.[1];
  if (problem === undefined) return null;
  const message = (err as Error).message.replace(/^[A-Z]+: /, '').split('\n')[0]!;
  const detail = problem === 'full' ? `${message}; ${freeSpace(path)}` : `${code}: ${message}`;
  return new StorageError(path, problem, detail);
}

/** Bytes free to this user on the filesystem holding `path` (or its nearest existing parent), or null when unknown. */
export function freeBytes(path: string): number | null {
  for (let p = path; ; p = dirname(p)) {
    try {
      const s = statfsSync(p);
      return Number(s.bavail) * Number(s.bsize);
    } catch {
      if (dirname(p) === p) return null;
    }
  }
}

/** "N KiB free on its filesystem", or that it could not be found out. */
export function freeSpace(path: string): string {
  const n = freeBytes(path);
  return n === null ? 'free space unknown' : `${formatBytes(n)} free on its filesystem`;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

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

/** Open a SQLite database whose every failure names `path` (see guardDatabase). */
export function openDatabase(path: string, options?: Database.Options): Database.Database {
  return guardDatabase(guarded(path, () => new Database(path, options)), path);
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
    const stmt = prepare(sql) as unknown as Record<string, unknown>;
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
