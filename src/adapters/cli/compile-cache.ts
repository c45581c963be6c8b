// Starting the CLI from V8's code cache (decision 0033). bin/longbuild.js hands the bundle
// (dist/cli.cjs, one CommonJS file) to `startCli`, which compiles it with the bytecode an earlier
// process left and runs the command. Without a cache, V8 parses the bundle and compiles each
// function the command calls, at every start (~30 ms of `run`'s ~80 ms over a bare Node.js).
//
// - **Where.** `cli.cjs.cache` beside the bundle: a file as trusted as the code it caches (whoever
//   can write one can write the other), since V8 trusts what it deserialises.
//   `LONGBUILD_COMPILE_CACHE=off` neither reads nor writes one; `=DIR` keeps it in DIR instead. A
//   directory that cannot be written (a read-only install) leaves every start compiling, silently.
// - **Which.** A cache names the bundle's SHA-256, Node.js's version and the architecture, and is
//   used only for exactly those: V8 checks its own version and flags, but of the source only its
//   length, and would run a stale cache's bytecode for a rebuilt bundle of the same length.
// - **What.** V8 caches the functions compiled when the cache is made, so it is made at exit, after
//   the command ran, and it keeps the commands (labels) it has seen: a process whose command is not
//   among them writes it again, with the functions the cache gave it and its own. Written to a
//   temporary file and renamed, so a concurrent start reads a whole one or none.
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { Script } from 'node:vm';

/** The first line of a cache file says what follows: this format, the key, the labels. */
const FORMAT = 'longbuild-v8-code-cache 1';
/** The bundle is compiled as Node.js compiles a CommonJS module: inside this function. */
export const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const WRAPPER_TAIL = '\n})';

/** What dist/cli.cjs exports (src/adapters/cli/bundle-entry.ts). */
interface CliBundle {
  runCli(argv: string[]): void;
  commandOf(argv: readonly string[]): string | null;
}

/** The cache file for `bundle`, or null when the environment turns caching off. */
export function cacheFileFor(bundle: string, env: NodeJS.ProcessEnv): string | null {
  const setting = env.LONGBUILD_COMPILE_CACHE;
  if (setting === 'off') return null;
  return join(setting !== undefined && setting !== '' ? resolve(setting) : dirname(bundle), 'cli.cjs.cache');
}

/** The key a cache must carry to be used for `source` by this Node.js. */
export function cacheKey(source: string): string {
  return `${createHash('sha256').update(source).digest('hex')} node ${process.version} ${process.arch}`;
}

/** V8's data and the labels of a cache file made for `key`; null for a missing, foreign, stale or damaged one. */
export function readCache(file: string, key: string): { data: Buffer; labels: string[] } | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return null;
  }
  const newline = bytes.indexOf(10);
  if (newline < 0 || newline > 64 * 1024) return null;
  let header: unknown;
  try {
    header = JSON.parse(bytes.subarray(0, newline).toString('utf8'));
  } catch {
    return null;
  }
  const h = header as { format?: unknown; key?: unknown; labels?: unknown } | null;
  if (h === null || typeof h !== 'object' || h.format !== FORMAT || h.key !== key || !Array.isArray(h.labels)) return null;
  return { data: bytes.subarray(newline + 1), labels: h.labels.filter((l): l is string => typeof l === 'string') };
}

/** Writes a cache file whole (a temporary file renamed over it); false if it cannot be written. */
export function writeCache(file: string, key: string, labels: readonly string[], data: Buffer): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, Buffer.concat([Buffer.from(`${JSON.stringify({ format: FORMAT, key, labels })}\n`), data]), { mode: 0o644 });
    renameSync(tmp, file);
    return true;
  } catch {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // nothing was written where nothing can be
    }
    return false;
  }
}

/**
 * Compiles `bundle` (from the cache when one fits), runs the CLI with `argv`, and, when the cache
 * was missing, refused or had not seen this command, writes it at exit.
 */
export function startCli(bundle: string, argv: string[], env: NodeJS.ProcessEnv): void {
  const source = readFileSync(bundle, 'utf8');
  const file = cacheFileFor(bundle, env);
  const key = file === null ? '' : cacheKey(source);
  const cached = file === null ? null : readCache(file, key);
  const script = new Script(WRAPPER_HEAD + source + WRAPPER_TAIL, { filename: bundle, cachedData: cached?.data });
  const accepted = cached !== null && !script.cachedDataRejected;
  const module = { exports: {} as CliBundle };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const { runCli, commandOf } = module.exports;
  if (file !== null) {
    const label = commandOf(argv);
    const labels = accepted ? cached.labels : [];
    if (!accepted || (label !== null && !labels.includes(label))) {
      const next = label === null || labels.includes(label) ? labels : [...labels, label];
      process.once('exit', () => void writeCache(file, key, next, script.createCachedData()));
    }
  }
  runCli(argv);
}
