/**
 * Verification cache identities, pure: the lookup key of a trusted command run and the
 * canonical, self-addressed form of a cached entry. The store that keeps these bytes on disk is
 * src/adapters/cache/verification-cache.ts; nothing here reads files, clocks or the environment.
 */
import { canonicalJson } from '../events/canonical.js';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalSha256, sha256Hex } from '../events/hash.js';

/**
 * Bump when what a cached pass means changes (e.g. what "clean" covers); old entries then miss.
 * 2: entries are authenticated (HMAC-SHA-256, R-32) and keys cover the files an argv names.
 */
export const CACHE_POLICY_VERSION = 2;

export interface CacheKeyInput {
  /** The exact git tree the command ran on. */
  readonly tree: string;
  /** The strictly parsed argv (parseTrustedCommand), never a shell string. */
  readonly argv: readonly string[];
  /** SHA-256 of the trusted environment (trustedEnvSha256). */
  readonly envSha256: string;
  /** SHA-256 of every file outside the tree that the argv names (a verification script): path -> hex. */
  readonly argvFiles: Readonly<Record<string, string>>;
  /** CACHE_POLICY_VERSION, or `<CACHE_POLICY_VERSION>:<epoch>` when a build's config bumps its own epoch (cache.policyVersion). */
  readonly policyVersion: number | string;
  /**
   * The whole command sequence this command ran in, and its place in it (absent for a sequence of
   * one). A later command may need what an earlier one made (`npm ci`, then the tests), so a
   * sequence's entries are replayed only all together, and only for that same sequence.
   */
  readonly sequence?: { readonly argvs: readonly (readonly string[])[]; readonly index: number };
  /** Present when git-ignored files were allowed to stay (a pass under that policy is not one under the strict one). */
  readonly ignoredFiles?: 'allowed';
  /** The report file the command writes: a hit replays it with the output. */
  readonly reportFile?: string;
}

/** SHA-256 of the canonical JSON of the trusted environment (key order cannot matter). */
export function trustedEnvSha256(env: Readonly<Record<string, string>>): string {
  return canonicalSha256(env);
}

/** The cache key: SHA-256 of canonical {tree, argv, envSha256, argvFiles, policyVersion}. */
export function verificationCacheKey(input: CacheKeyInput): string {
  return canonicalSha256({
    tree: input.tree, argv: [...input.argv], envSha256: input.envSha256, argvFiles: { ...input.argvFiles }, policyVersion: input.policyVersion,
    ...(input.sequence !== undefined ? { sequence: sequenceJson(input.sequence) } : {}),
    ...(input.ignoredFiles !== undefined ? { ignoredFiles: input.ignoredFiles } : {}),
    ...(input.reportFile !== undefined ? { reportFile: input.reportFile } : {}),
  });
}

/** The sequence as plain JSON (argvs copied), as keys and entries hold it. */
export function sequenceJson(s: NonNullable<CacheKeyInput['sequence']>): { argvs: string[][]; index: number } {
  return { argvs: s.argvs.map((a) => [...a]), index: s.index };
}

/** A passed command run as the cache keeps it: the exact transport, bytes as base64. */
export interface CacheEntry {
  readonly key: string;
  readonly tree: string;
  readonly argv: readonly string[];
  readonly envSha256: string;
  readonly argvFiles: Readonly<Record<string, string>>;
  readonly policyVersion: number | string;
  readonly sequence?: { readonly argvs: readonly (readonly string[])[]; readonly index: number };
  readonly ignoredFiles?: 'allowed';
  readonly reportFile?: string;
  readonly exitCode: 0;
  readonly durationMs: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The report file's bytes (base64), for a command that writes one. */
  readonly report?: string;
  /** HMAC-SHA-256 (hex) of the entry's other fields under the host's cache key. */
  readonly mac: string;
}

/** The MAC of an entry (every field but `mac`) under `key`: only the host holds the key. */
export function entryMac(entry: Omit<CacheEntry, 'mac'>, key: Uint8Array): string {
  const { mac: _ignored, ...rest } = entry as CacheEntry;
  return createHmac('sha256', key).update(canonicalJson(rest)).digest('hex');
}

/** The entry's one byte form (canonical JSON); its SHA-256 is the entry's address. */
export function entryBytes(entry: CacheEntry): string {
  return canonicalJson(entry);
}

/** The address of an entry: SHA-256 of its canonical bytes. */
export function entrySha256(entry: CacheEntry): string {
  return sha256Hex(entryBytes(entry));
}

/**
 * Why stored entry bytes are not a usable hit for `key`, or null when they are: the bytes must
 * hash to their address, parse as an entry of exactly this key and identity, and be a pass.
 */
export function entryProblem(bytes: Uint8Array, address: string, expected: CacheKeyInput & { key: string }, macKey: Uint8Array): string | null {
  if (sha256Hex(bytes) !== address) return 'bytes do not hash to the entry address (corrupt or truncated)';
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    return 'entry is not JSON';
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return 'entry is not an object';
  const e = raw as Record<string, unknown>;
  const keys = Object.keys(e).sort().join(',');
  const fields = `argv,argvFiles,durationMs,envSha256,exitCode,${expected.ignoredFiles !== undefined ? 'ignoredFiles,' : ''}key,mac,policyVersion,${expected.reportFile !== undefined ? 'report,reportFile,' : ''}${expected.sequence !== undefined ? 'sequence,' : ''}stderr,stdout,tree`;
  if (keys !== fields) return `unexpected entry fields ${keys}`;
  if (typeof e.mac !== 'string' || !/^[0-9a-f]{64}$/.test(e.mac)) return 'entry is not authenticated';
  const want = Buffer.from(entryMac(e as unknown as CacheEntry, macKey), 'hex');
  if (!timingSafeEqual(want, Buffer.from(e.mac, 'hex'))) return 'entry fails authentication (forged, or written under another key)';
  if (e.key !== expected.key) return 'entry belongs to another key';
  if (e.tree !== expected.tree || e.envSha256 !== expected.envSha256 || e.policyVersion !== expected.policyVersion) return 'entry identity differs from the key';
  if (!Array.isArray(e.argv) || canonicalJson(e.argv as string[]) !== canonicalJson([...expected.argv])) return 'entry argv differs';
  if (canonicalJson(e.argvFiles) !== canonicalJson({ ...expected.argvFiles })) return 'entry argv files differ';
  if (e.ignoredFiles !== expected.ignoredFiles) return 'entry ignored-files policy differs';
  if (e.reportFile !== expected.reportFile) return 'entry report file differs';
  if (expected.reportFile !== undefined && (typeof e.report !== 'string' || !isBase64(e.report))) return 'report is not base64';
  if (expected.sequence !== undefined && canonicalJson(e.sequence as never) !== canonicalJson(sequenceJson(expected.sequence))) return 'entry sequence differs';
  if (e.exitCode !== 0) return 'entry is not a pass';
  if (typeof e.durationMs !== 'number' || !Number.isFinite(e.durationMs) || e.durationMs < 0) return 'bad duration';
  if (typeof e.stdout !== 'string' || typeof e.stderr !== 'string') return 'bad output fields';
  if (!isBase64(e.stdout) || !isBase64(e.stderr)) return 'output is not base64';
  return null;
}

function isBase64(s: string): boolean {
  return /^[A-Za-z0-9+/]*={0,2}$/.test(s) && s.length % 4 === 0;
}
