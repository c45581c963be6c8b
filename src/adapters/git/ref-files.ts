/**
 * Branches read from the files git's files backend keeps them in (`refs/…` loose files over
 * `packed-refs` lines), without a git process. Every reader answers undefined — ask git — for
 * anything it does not read exactly as git would: another ref backend (reftable), a symbolic,
 * broken or locked ref.
 */
import { existsSync, readdirSync, readFileSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { isValidRefName } from './exec.js';

/** A full SHA-1 object id, as git writes it. */
export const HEX40 = /^[0-9a-f]{40}$/;

/**
 * A branch as git's files backend stores it: the loose file `<common dir>/<ref>`, else its line
 * in `packed-refs`; null when it is in neither. undefined (ask git): another ref backend
 * (reftable), a symbolic ref, or anything that is not a plain object id.
 */
export function readRefFiles(commonDir: string, ref: string): string | null | undefined {
  if (existsSync(join(commonDir, 'reftable'))) return undefined;
  try {
    const text = readFileSync(join(commonDir, ref), 'utf8').trim();
    return HEX40.test(text) ? text : undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR' && code !== 'EISDIR') return undefined;
  }
  const packed = packedRefs(commonDir);
  if (packed === undefined) return undefined;
  for (const line of packed.split('\n')) {
    if (line.length === 41 + ref.length && line.endsWith(ref) && line[40] === ' ') {
      const sha = line.slice(0, 40);
      return HEX40.test(sha) ? sha : undefined;
    }
  }
  return null;
}

/** The text of `<common dir>/packed-refs` ('' when there is none), or undefined when it cannot be read (ask git). */
function packedRefs(commonDir: string): string | undefined {
  try {
    return readFileSync(join(commonDir, 'packed-refs'), 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? '' : undefined;
  }
}

/**
 * The branches under `prefix` (ending in '/') as git's files backend keeps them — loose files
 * under `<common dir>/<prefix>` over their `packed-refs` lines — as `git for-each-ref PREFIX`
 * lists them, by name; undefined (ask git) for another ref backend, or anything git would warn
 * about or skip (a lock file, a symbolic or broken ref).
 */
export function listRefFiles(commonDir: string, prefix: string): Map<string, string> | undefined {
  if (!prefix.endsWith('/') || existsSync(join(commonDir, 'reftable'))) return undefined;
  const packed = packedRefs(commonDir);
  if (packed === undefined) return undefined;
  const found = new Map<string, string>();
  for (const line of packed.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const sha = line.slice(0, 40);
    if (line[40] !== ' ' || !HEX40.test(sha)) return undefined;
    if (line.startsWith(prefix, 41)) found.set(line.slice(41), sha);
  }
  const walk = (dir: string): boolean => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(commonDir, dir), { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'ENOENT' || code === 'ENOTDIR';
    }
    for (const e of entries) {
      const name = `${dir}${e.name}`;
      if (e.isDirectory()) {
        if (!walk(`${name}/`)) return false;
        continue;
      }
      if (!e.isFile() || !isValidRefName(name)) return false;
      let sha: string;
      try {
        sha = readFileSync(join(commonDir, name), 'utf8').trim();
      } catch {
        return false; // deleted (or replaced) between the listing and the read: ask git
      }
      if (!HEX40.test(sha)) return false;
      found.set(name, sha);
    }
    return true;
  };
  if (!walk(prefix)) return undefined;
  return new Map([...found].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
