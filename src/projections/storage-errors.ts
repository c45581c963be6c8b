/**
 * I/O failures named: what an errno or a SQLite code stands for, as a
 * StorageError naming the file. No SQLite here, so the CLI's edge can use it without loading it.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { StorageError, type StorageProblem } from '../events/errors.js';

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

/**
 * Any I/O failure on a named file that escaped the guards above (a copy of an attempt's clone, a
 * directory removed, a file written by a helper), as the StorageError it stands for:
 * Node.js names the file in `path`. Anything else is returned as it is.
 */
export function asStorageError(err: unknown): unknown {
  if (err instanceof StorageError) return err;
  const path = (err as { path?: unknown } | null)?.path;
  const dest = (err as { dest?: unknown } | null)?.dest;
  if (typeof path !== 'string') return err;
  return storageErrorOf(err, typeof dest === 'string' ? dest : path) ?? err;
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

