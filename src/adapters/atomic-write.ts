import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { guarded } from '../projections/storage-guard.js';

/**
 * Write a file whole or not at all: a temp file, renamed over `path` (with `fsync`, flushed first
 * and its directory after). A failure leaves no temp file behind and is a StorageError naming `path`.
 */
export function writeAtomically(path: string, data: string | Uint8Array, options: { readonly mode?: number; readonly fsync?: boolean } = {}): void {
  guarded(path, () => {
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.${process.pid}.tmp`;
    try {
      const fd = openSync(tmp, 'w', options.mode ?? 0o600);
      try {
        writeFileSync(fd, data);
        if (options.fsync === true) fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, path);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
    if (options.fsync === true) fsyncDirectory(dir);
  });
}

/** Flush a directory, so that a file just created or renamed in it survives a power loss. */
export function fsyncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
