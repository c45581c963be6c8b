/**
 * Ref updates in the integrator's own repository without a git process (a git process
 * costs ~20 ms of CPU on a small VM, and every attempt, promotion and cleanup moves a ref). The
 * integrator's repository is longbuild's: bare, created with `--template=`, no reflogs, the files
 * ref backend. An update follows git's own protocol, so git and longbuild exclude each other:
 * `<ref>.lock` is created exclusively, the current value re-read under the lock (loose file, else
 * `packed-refs`) and compared, the new value written to the lock and renamed over the ref. Anything
 * unusual (another ref backend, a lock held, a ref only in `packed-refs` to delete, a name clash
 * with a directory) returns null and the caller asks git.
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { isValidRefName } from './exec.js';
import { gitCommonDir } from './repo.js';
import { readRefFiles } from './ref-files.js';

/** What an in-process update did; null: not done, ask git. */
export type OwnRefUpdate = 'updated' | { readonly conflict: string | null } | null;

/**
 * Set `ref` to `value` (null: delete it) when it is at `expected` (undefined: whatever it is at;
 * null: absent). 'updated', `{ conflict: actual }` when it was elsewhere, or null.
 */
export async function updateOwnRef(repo: string, ref: string, value: string | null, expected?: string | null): Promise<OwnRefUpdate> {
  if (!ref.startsWith('refs/heads/') || !isValidRefName(ref)) return null;
  const common = await gitCommonDir(repo);
  // Only a bare repository (the integrator's): a work tree's repository may keep reflogs.
  if (common !== resolve(repo) || existsSync(join(common, 'reftable'))) return null;
  const path = join(common, ref);
  const lock = `${path}.lock`;
  let fd: number;
  try {
    mkdirSync(dirname(path), { recursive: true });
    fd = openSync(lock, 'wx', 0o644);
  } catch {
    return null; // a lock held by another writer, or a directory where the ref should be: git says why
  }
  let done = false;
  try {
    const current = readRefFiles(common, ref);
    if (current === undefined) return null;
    if (expected !== undefined && current !== expected) return { conflict: current };
    if (value === null) {
      if (current === null) return 'updated';
      if (packedLine(common, ref)) return null; // removing it from packed-refs is git's job
      unlinkSync(path);
      return 'updated';
    }
    writeSync(fd, `${value}\n`);
    closeSync(fd);
    fd = -1;
    renameSync(lock, path);
    done = true;
    return 'updated';
  } finally {
    if (fd >= 0) closeSync(fd);
    if (!done) rmSync(lock, { force: true });
  }
}

function packedLine(common: string, ref: string): boolean {
  try {
    return readFileSync(join(common, 'packed-refs'), 'utf8').split('\n').some((l) => l.endsWith(` ${ref}`));
  } catch {
    return false;
  }
}
