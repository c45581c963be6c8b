import * as crypto from 'node:crypto';
import { canonicalJson } from './canonical.js';

/** SHA-256 of a string or bytes, lower-case hex. */
export function sha256Hex(input: string | Uint8Array): string {
  // crypto.hash (Node ≥ 20.12) is a one-shot digest without a Hash object per call. Looked up at
  // the first digest, not when this module loads: a command that hashes nothing (`--version`,
  // `log`) then never loads node:crypto (~3.5 ms; the bundle loads it on first use, decision 0053).
  oneShot ??= (crypto as unknown as { hash?: OneShot }).hash ?? null;
  return oneShot ? oneShot('sha256', input, 'hex') : crypto.createHash('sha256').update(input).digest('hex');
}

type OneShot = (alg: string, data: string | Uint8Array, enc: 'hex') => string;
let oneShot: OneShot | null | undefined;

/** SHA-256 of the canonical JSON of a value. */
export function canonicalSha256(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** The previous hash of the first event in a log. */
export const GENESIS_HASH = '0'.repeat(64);
