/**
 * The verification cache store: content-addressed files under `<build dir>/cache/`.
 * A cache, never authority — the log records what was verified; this only saves re-running a
 * trusted command on a tree it already passed on.
 *
 *   keys/<key>            the address (SHA-256) of the entry for this key, as text
 *   entries/<entrySha>    the entry's canonical JSON bytes (exact passed transport, base64)
 *
 * Every read re-checks the entry against its address and its key (entryProblem); a corrupt,
 * truncated or mismatching entry is a miss and is removed. Writes go through a temp file and a
 * rename, entry first, so a crash leaves no key pointing at half an entry.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '../../events/errors.js';
import { writeAtomically } from '../atomic-write.js';
import {
  CACHE_POLICY_VERSION, entryBytes, entryMac, entryProblem, entrySha256, sequenceJson, verificationCacheKey, type CacheEntry, type CacheKeyInput,
} from '../../commands/cache-key.js';

const HEX64 = /^[0-9a-f]{64}$/;

/** A replayed pass: the exact bytes and duration of the run that was cached. */
export interface CachedRun {
  readonly key: string;
  readonly entrySha256: string;
  readonly argv: readonly string[];
  readonly exitCode: 0;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly durationMs: number;
  /** The report file the command wrote, when it writes one. */
  readonly report?: Buffer;
}

export interface CacheStats {
  readonly keys: number;
  readonly entries: number;
  readonly bytes: number;
  readonly hits: number;
  readonly misses: number;
  readonly stored: number;
  readonly corruptRemoved: number;
  /** Entries that failed authentication: forged or written under another key. */
  readonly forgedRemoved: number;
}

export interface CacheProblem {
  readonly file: string;
  readonly problem: string;
}

export class VerificationCache {
  readonly policyVersion: number | string;
  private readonly keysDir: string;
  private readonly entriesDir: string;
  private readonly statsPath: string;
  private readonly macKey: Buffer;
  private counters = { hits: 0, misses: 0, stored: 0, corruptRemoved: 0, forgedRemoved: 0 };

  /**
   * The cache in `dir` (created 0700). Its MAC key is `<dir>/hmac.key` (32 random bytes, 0600),
   * made on first use; `dir` is hidden from every sandboxed process. Hit, miss and
   * removal counts are kept for the cache's lifetime in `<dir>/stats.json`.
   */
  constructor(readonly dir: string, opts: { policyVersion?: number | string } = {}) {
    this.policyVersion = opts.policyVersion ?? CACHE_POLICY_VERSION;
    this.keysDir = join(dir, 'keys');
    this.entriesDir = join(dir, 'entries');
    this.statsPath = join(dir, 'stats.json');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    this.macKey = loadOrCreateKey(join(dir, 'hmac.key'));
    this.counters = { ...this.counters, ...readStats(this.statsPath) };
  }

  /** The key of a command run on a tree under this cache's policy. */
  keyOf(input: Omit<CacheKeyInput, 'policyVersion'>): CacheKeyInput & { key: string } {
    const full = { ...input, policyVersion: this.policyVersion };
    return { ...full, key: verificationCacheKey(full) };
  }

  /** The cached pass for this key, or null (a miss). A corrupt entry is removed and is a miss. */
  lookup(input: Omit<CacheKeyInput, 'policyVersion'>): CachedRun | null {
    const k = this.keyOf(input);
    const keyPath = join(this.keysDir, k.key);
    if (!existsSync(keyPath)) return this.miss();
    const address = readFileSync(keyPath, 'utf8').trim();
    if (!HEX64.test(address)) return this.corrupt(keyPath, null);
    const entryPath = join(this.entriesDir, address);
    if (!existsSync(entryPath)) return this.corrupt(keyPath, null);
    const bytes = readFileSync(entryPath);
    const problem = entryProblem(bytes, address, k, this.macKey);
    if (problem !== null) return this.corrupt(keyPath, entryPath, /authentic/.test(problem));
    const e = JSON.parse(bytes.toString('utf8')) as CacheEntry;
    const now = new Date();
    try {
      utimesSync(keyPath, now, now); // last use, for `cache gc --max-age-days`
    } catch {
      /* a concurrent gc removed it: the bytes we hold are still verified */
    }
    this.count('hits');
    return {
      key: k.key, entrySha256: address, argv: [...e.argv], exitCode: 0,
      stdout: Buffer.from(e.stdout, 'base64'), stderr: Buffer.from(e.stderr, 'base64'), durationMs: e.durationMs,
      ...(e.report !== undefined ? { report: Buffer.from(e.report, 'base64') } : {}),
    };
  }

  /** Store a PASSED run (the caller checks exit 0, no leftover, clean workspace). Returns the entry address. */
  store(input: Omit<CacheKeyInput, 'policyVersion'>, run: { stdout: Uint8Array; stderr: Uint8Array; durationMs: number; report?: Uint8Array }): string {
    const k = this.keyOf(input);
    const unsigned = {
      key: k.key, tree: k.tree, argv: [...k.argv], envSha256: k.envSha256, argvFiles: { ...k.argvFiles }, policyVersion: k.policyVersion,
      ...(k.sequence !== undefined ? { sequence: sequenceJson(k.sequence) } : {}), ...(k.ignoredFiles !== undefined ? { ignoredFiles: k.ignoredFiles } : {}), exitCode: 0 as const,
      ...(k.reportFile !== undefined ? { reportFile: k.reportFile, report: Buffer.from(run.report ?? new Uint8Array()).toString('base64') } : {}),
      durationMs: Math.max(0, Math.round(run.durationMs)),
      stdout: Buffer.from(run.stdout).toString('base64'), stderr: Buffer.from(run.stderr).toString('base64'),
    };
    const entry: CacheEntry = { ...unsigned, mac: entryMac(unsigned, this.macKey) };
    const address = entrySha256(entry);
    mkdirSync(this.entriesDir, { recursive: true });
    mkdirSync(this.keysDir, { recursive: true });
    writeAtomically(join(this.entriesDir, address), entryBytes(entry));
    writeAtomically(join(this.keysDir, k.key), `${address}\n`);
    this.count('stored');
    return address;
  }

  /** Counts on disk plus the cache's lifetime hit/miss/removal counters. */
  stats(): CacheStats {
    const keys = listHex(this.keysDir);
    const entries = listHex(this.entriesDir);
    const bytes = entries.reduce((n, f) => n + statSync(join(this.entriesDir, f)).size, 0);
    return { keys: keys.length, entries: entries.length, bytes, ...this.counters };
  }

  /** Re-check every key and entry without changing anything. */
  verify(): { ok: boolean; checked: number; problems: CacheProblem[] } {
    const problems: CacheProblem[] = [];
    const referenced = new Set<string>();
    const keys = listHex(this.keysDir);
    for (const key of keys) {
      const p = this.checkKey(key);
      if (typeof p === 'string') problems.push({ file: `keys/${key}`, problem: p });
      else referenced.add(p.address);
    }
    for (const e of listHex(this.entriesDir)) {
      if (!referenced.has(e)) problems.push({ file: `entries/${e}`, problem: 'no key refers to this entry (dangling)' });
    }
    return { ok: problems.length === 0, checked: keys.length, problems };
  }

  /**
   * Remove corrupt and dangling files, and every entry `keep` refuses (given its tree and the
   * time of its last use). Returns what was removed.
   */
  gc(keep: (e: { tree: string; lastUsedMs: number }) => boolean): { removedKeys: number; removedEntries: number; kept: number } {
    let removedKeys = 0;
    const live = new Set<string>();
    for (const key of listHex(this.keysDir)) {
      const keyPath = join(this.keysDir, key);
      const p = this.checkKey(key);
      if (typeof p === 'string' || !keep({ tree: p.tree, lastUsedMs: statSync(keyPath).mtimeMs })) {
        rmSync(keyPath, { force: true });
        removedKeys += 1;
      } else live.add(p.address);
    }
    let removedEntries = 0;
    for (const e of listHex(this.entriesDir)) {
      if (live.has(e)) continue;
      rmSync(join(this.entriesDir, e), { force: true });
      removedEntries += 1;
    }
    return { removedKeys, removedEntries, kept: live.size };
  }

  private checkKey(key: string): string | { address: string; tree: string } {
    const address = readFileSync(join(this.keysDir, key), 'utf8').trim();
    if (!HEX64.test(address)) return 'key file does not hold an entry address';
    const entryPath = join(this.entriesDir, address);
    if (!existsSync(entryPath)) return `entry ${address} is missing`;
    const bytes = readFileSync(entryPath);
    let parsed: Partial<CacheEntry>;
    try {
      parsed = JSON.parse(bytes.toString('utf8')) as Partial<CacheEntry>;
    } catch {
      return `entry ${address} is not JSON (corrupt or truncated)`;
    }
    const argvFiles = parsed.argvFiles !== null && typeof parsed.argvFiles === 'object' ? parsed.argvFiles : {};
    const sequence = parsed.sequence !== null && typeof parsed.sequence === 'object' && Array.isArray(parsed.sequence.argvs) ? parsed.sequence : undefined;
    const identity = {
      key, tree: String(parsed.tree), argv: Array.isArray(parsed.argv) ? parsed.argv : [], envSha256: String(parsed.envSha256), argvFiles, policyVersion: Number(parsed.policyVersion),
      ...(sequence !== undefined ? { sequence } : {}), ...(parsed.ignoredFiles === 'allowed' ? { ignoredFiles: 'allowed' as const } : {}),
    };
    const problem = entryProblem(bytes, address, identity, this.macKey);
    if (problem !== null) return `entry ${address}: ${problem}`;
    if (verificationCacheKey(identity) !== key) return `entry ${address} does not derive key ${key}`;
    return { address, tree: identity.tree };
  }

  private miss(): null {
    this.count('misses');
    return null;
  }

  private corrupt(keyPath: string, entryPath: string | null, forged = false): null {
    rmSync(keyPath, { force: true });
    if (entryPath !== null) rmSync(entryPath, { force: true });
    this.count(forged ? 'forgedRemoved' : 'corruptRemoved');
    return this.miss();
  }

  private count(what: 'hits' | 'misses' | 'stored' | 'corruptRemoved' | 'forgedRemoved'): void {
    this.counters[what] += 1;
    try {
      writeAtomically(this.statsPath, `${JSON.stringify(this.counters)}\n`);
    } catch {
      /* counts are advisory: a full disk must not fail a verification */
    }
  }
}

function listHex(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => HEX64.test(f)).sort();
}


function loadOrCreateKey(path: string): Buffer {
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
    try {
      // Link, not rename: two processes creating the key at once both end up with the first one.
      linkSync(tmp, path);
    } catch {
      /* another process made it first */
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  const hex = readFileSync(path, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new ValidationError(`the cache key ${path} is damaged (expected 64 hex digits); delete it and the cache will start over`);
  return Buffer.from(hex, 'hex');
}

function readStats(path: string): Partial<Record<string, number>> {
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(raw).filter(([, v]) => Number.isInteger(v) && (v as number) >= 0)) as Record<string, number>;
  } catch {
    return {};
  }
}
