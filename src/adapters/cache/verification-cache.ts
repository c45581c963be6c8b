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
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CACHE_POLICY_VERSION, entryBytes, entryProblem, entrySha256, verificationCacheKey, type CacheEntry, type CacheKeyInput,
} from '../../commands/verification-cache.js';

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
}

export interface CacheStats {
  readonly keys: number;
  readonly entries: number;
  readonly bytes: number;
  readonly hits: number;
  readonly misses: number;
  readonly stored: number;
  readonly corruptRemoved: number;
}

export interface CacheProblem {
  readonly file: string;
  readonly problem: string;
}

export class VerificationCache {
  readonly policyVersion: number;
  private readonly keysDir: string;
  private readonly entriesDir: string;
  private counters = { hits: 0, misses: 0, stored: 0, corruptRemoved: 0 };

  constructor(readonly dir: string, opts: { policyVersion?: number } = {}) {
    this.policyVersion = opts.policyVersion ?? CACHE_POLICY_VERSION;
    this.keysDir = join(dir, 'keys');
    this.entriesDir = join(dir, 'entries');
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
    if (entryProblem(bytes, address, k) !== null) return this.corrupt(keyPath, entryPath);
    const e = JSON.parse(bytes.toString('utf8')) as CacheEntry;
    const now = new Date();
    try {
      utimesSync(keyPath, now, now); // last use, for `cache gc --max-age-days`
    } catch {
      /* a concurrent gc removed it: the bytes we hold are still verified */
    }
    this.counters.hits += 1;
    return {
      key: k.key, entrySha256: address, argv: [...e.argv], exitCode: 0,
      stdout: Buffer.from(e.stdout, 'base64'), stderr: Buffer.from(e.stderr, 'base64'), durationMs: e.durationMs,
    };
  }

  /** Store a PASSED run (the caller checks exit 0, no leftover, clean workspace). Returns the entry address. */
  store(input: Omit<CacheKeyInput, 'policyVersion'>, run: { stdout: Uint8Array; stderr: Uint8Array; durationMs: number }): string {
    const k = this.keyOf(input);
    const entry: CacheEntry = {
      key: k.key, tree: k.tree, argv: [...k.argv], envSha256: k.envSha256, policyVersion: k.policyVersion, exitCode: 0,
      durationMs: Math.max(0, Math.round(run.durationMs)),
      stdout: Buffer.from(run.stdout).toString('base64'), stderr: Buffer.from(run.stderr).toString('base64'),
    };
    const address = entrySha256(entry);
    mkdirSync(this.entriesDir, { recursive: true });
    mkdirSync(this.keysDir, { recursive: true });
    atomicWrite(join(this.entriesDir, address), entryBytes(entry));
    atomicWrite(join(this.keysDir, k.key), `${address}\n`);
    this.counters.stored += 1;
    return address;
  }

  /** Counts on disk plus this process's hit/miss counters. */
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
    const identity = { key, tree: String(parsed.tree), argv: Array.isArray(parsed.argv) ? parsed.argv : [], envSha256: String(parsed.envSha256), policyVersion: Number(parsed.policyVersion) };
    const problem = entryProblem(bytes, address, identity);
    if (problem !== null) return `entry ${address}: ${problem}`;
    if (verificationCacheKey(identity) !== key) return `entry ${address} does not derive key ${key}`;
    return { address, tree: identity.tree };
  }

  private miss(): null {
    this.counters.misses += 1;
    return null;
  }

  private corrupt(keyPath: string, entryPath: string | null): null {
    rmSync(keyPath, { force: true });
    if (entryPath !== null) rmSync(entryPath, { force: true });
    this.counters.corruptRemoved += 1;
    return this.miss();
  }
}

function listHex(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => HEX64.test(f)).sort();
}

function atomicWrite(path: string, data: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}
