// Starting the CLI from V8's code cache (decision 0033). bin/longbuild.js hands the bundle
// (dist/cli.cjs, one CommonJS file) to `startCli`, which compiles it with the bytecode an earlier
// process of the same command left, and runs the command. Without a cache, V8 parses the bundle
// and compiles each function the command calls, at every start (~30 ms of `run`'s start-up).
//
// - **Where.** Beside the bundle, one file per command (`cli.cjs.status.cache`; `cli.cjs.cache`
//   for `--version`, `--help` and no command): a file as trusted as the code it caches (whoever can
//   write one can write the other), since V8 trusts what it deserialises.
//   `LONGBUILD_COMPILE_CACHE=off` neither reads nor writes them; `=DIR` keeps them in DIR (made
//   when missing) instead.
//   A directory that cannot be written (a read-only install) leaves every start compiling, silently.
// - **Which.** A cache names the bundle's CRC-32 and length, Node.js's version and the
//   architecture, and is used only for exactly those: V8 checks its own version and flags, but of
//   the source only its length, and would run a stale cache's bytecode for a rebuilt bundle of the
//   same length. The key tells builds apart; it guards against no one (whoever can write the
//   bundle runs their code anyway), so a checksum does: zlib's CRC-32 is ~0.3 ms where loading
//   node:crypto and hashing with SHA-256 was ~5 ms of every start (decision 0053). A Node.js
//   without `zlib.crc32` (before 20.15) keys by SHA-256.
// - **Per command.** V8 deserialises a whole cache at every start, so one cache holding every
//   command's functions made each command slower than its own (`status` 102 against 92 ms). The
//   command is known for sure only once the bundle runs, so the cache read is that of the first
//   word of the arguments that has one; a process that read none, or another command's, writes its
//   own at exit.
// - **What.** V8 caches the functions compiled when the cache is made, so it is made at exit, after
//   the command ran. A process that ran for more than REFRESH_AFTER_MS (a long `run`) makes it
//   again at exit, and keeps it if it holds a tenth more than the one it read (the first run of a
//   command may have stopped early). Written to a temporary file and renamed, so a concurrent start
//   reads a whole one or none.
// CommonJS (bin/longbuild.js requires it), so that a command's start does not set up Node.js's ES
// module loader (~8 ms).
import buffer = require('node:buffer');
import fs = require('node:fs');
import path = require('node:path');
import vm = require('node:vm');
import zlib = require('node:zlib');

const { isAscii } = buffer;
const { accessSync, constants, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } = fs;
const { dirname, join, resolve } = path;
const { Script } = vm;
/**
 * `require('node:module').createRequire`, from the class of this file's own module: the public
 * node:module (with the ES module loader's pieces it pulls in) is ~1.5 ms of a start (decision 0055).
 */
const { createRequire } = module.constructor as unknown as { createRequire(path: string): NodeJS.Require };

/** The first line of a cache file says what follows: this format, the key, the command. */
const FORMAT = 'longbuild-v8-code-cache 1';
/** The bundle is compiled as Node.js compiles a CommonJS module: inside this function. */
const WRAPPER_HEAD = '(function (exports, require, module, __filename, __dirname) { ';
const WRAPPER_TAIL = '\n})';
/** A process that ran this long makes its cache again at exit, and keeps it if it grew. */
const REFRESH_AFTER_MS = 2000;

/** What dist/cli.cjs exports (src/adapters/cli/bundle-entry.ts). */
interface CliBundle {
  runCli(argv: string[]): void;
  commandOf(argv: readonly string[]): string | null;
}

/** The directory of `bundle`'s caches, or null when the environment turns caching off. */
function cacheDirFor(bundle: string, env: NodeJS.ProcessEnv): string | null {
  const setting = env.LONGBUILD_COMPILE_CACHE;
  if (setting === 'off') return null;
  return setting !== undefined && setting !== '' ? resolve(setting) : dirname(bundle);
}

/** The cache file of `command` (null: no command) in `dir`; null for a word that cannot name one. */
function cacheFile(dir: string, command: string | null): string | null {
  if (command === null) return join(dir, 'cli.cjs.cache');
  return /^[a-z][a-z0-9-]{0,40}$/.test(command) ? join(dir, `cli.cjs.${command}.cache`) : null;
}

/** The key a cache must carry to be used for `source` by this Node.js. */
function cacheKey(source: string | Buffer): string {
  const length = typeof source === 'string' ? Buffer.byteLength(source) : source.length;
  const sum = typeof zlib.crc32 === 'function'
    ? `crc32 ${zlib.crc32(source).toString(16).padStart(8, '0')}`
    : `sha256 ${(require('node:crypto') as typeof import('node:crypto')).createHash('sha256').update(source).digest('hex')}`;
  return `${sum} length ${length} node ${process.version} ${process.arch}`;
}

/** V8's data in a cache file made for `key`; null for a missing, foreign, stale or damaged one. */
function readCache(file: string, key: string): Buffer | null {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return null;
  }
  const newline = bytes.indexOf(10);
  if (newline < 0 || newline > 4096) return null;
  let header: unknown;
  try {
    header = JSON.parse(bytes.subarray(0, newline).toString('utf8'));
  } catch {
    return null;
  }
  const h = header as { format?: unknown; key?: unknown } | null;
  if (h === null || typeof h !== 'object' || h.format !== FORMAT || h.key !== key) return null;
  return bytes.subarray(newline + 1);
}

/** Whether `dir` can take a cache file (made when missing). */
function writable(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true });
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Writes a cache file whole (a temporary file renamed over it) in a directory `writable` made; false if it cannot be written. */
function writeCache(file: string, key: string, command: string | null, data: Buffer): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, Buffer.concat([Buffer.from(`${JSON.stringify({ format: FORMAT, key, command })}\n`), data]), { mode: 0o644 });
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
 * Compiles `bundle` (from its command's cache when one fits), runs the CLI with `argv`, and writes
 * the command's cache at exit when it read none of its own (or ran long and compiled more).
 */
function startCli(bundle: string, argv: string[], env: NodeJS.ProcessEnv): void {
  let bytes: Buffer;
  try {
    bytes = readFileSync(bundle);
  } catch (err) {
    // Node.js names no path for some failures (EISDIR): the caller says which file could not be read.
    throw Object.assign(err as Error, { path: bundle });
  }
  // scripts/bundle.mjs writes ASCII, which reads as Latin-1 without decoding UTF-8 (~4 ms).
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const dir = cacheDirFor(bundle, env);
  const key = dir === null ? '' : cacheKey(bytes);
  let read: { file: string; data: Buffer } | null = null;
  if (dir !== null) {
    // The command is the first word that is not a flag, unless a flag took it as its value: the
    // first of the first three words with a cache of its own, else no command's.
    for (const word of [...argv.filter((a) => !a.startsWith('-')).slice(0, 3), null]) {
      const file = cacheFile(dir, word);
      const data = file === null ? null : readCache(file, key);
      if (data !== null) {
        read = { file: file!, data };
        break;
      }
    }
  }
  const script = new Script(WRAPPER_HEAD + source + WRAPPER_TAIL, { filename: bundle, cachedData: read?.data });
  const accepted = read !== null && !script.cachedDataRejected;
  const module = { exports: {} as CliBundle };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  const { runCli, commandOf } = module.exports;
  if (dir !== null) {
    const command = commandOf(argv);
    const file = cacheFile(dir, command)!;
    const own = accepted && read!.file === file;
    // Only its length is wanted at exit: the data itself (~1.2 MB for `run`) is let go.
    const readLength = read?.data.length ?? 0;
    read = null;
    process.once('exit', () => {
      if (own && process.uptime() * 1000 < REFRESH_AFTER_MS) return;
      // A directory this process cannot write (a read-only install): not worth serialising for.
      if (!writable(dir)) return;
      const data = script.createCachedData();
      if (!own || data.length > readLength * 1.1) writeCache(file, key, command, data);
    });
  }
  runCli(argv);
}

export = { WRAPPER_HEAD, cacheKey, readCache, startCli };
