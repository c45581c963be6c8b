import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/** SHA-256 of a string or bytes, lower-case hex. */
export function sha256Hex(input: string | Uint8Array): string {
  return createHash('sha256').update(input).digest('hex');
}

/** SHA-256 of the canonical JSON of a value. */
export function canonicalSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** The previous hash of the first event in a log. */
export const GENESIS_HASH = '0'.repeat(64);
