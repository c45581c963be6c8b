/**
 * Secret environment values (config `env.secret`) are passed to commands but never kept: every
 * occurrence in a command's stdout or stderr becomes `***` before the bytes reach evidence, the
 * cache or the log — as written, and in the encodings a program prints a token in:
 * percent-encoded, hex (either case), and base64 (standard and URL-safe) at each of the three
 * alignments it can take inside a longer encoded text.
 */
import type { ProcessResult } from '../process/run-process.js';

const MASK = Buffer.from('***');

/** An encoded form shorter than this is not masked (it would mask unrelated text); the secret itself always is. */
export const MIN_ENCODED_LENGTH = 8;

/**
 * The texts that give `secret` away: itself, percent-encoded, hex, and the base64 characters that
 * depend on its bytes alone, for each alignment (0, 1 or 2 bytes before it in the encoded text),
 * in both alphabets.
 */
export function secretForms(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const forms = new Set<string>([encodeURIComponent(secret), bytes.toString('hex'), bytes.toString('hex').toUpperCase()]);
  for (let a = 0; a < 3; a++) {
    const enc = Buffer.concat([Buffer.alloc(a), bytes]).toString('base64');
    const core = enc.slice(Math.ceil((8 * a) / 6), Math.floor((8 * (a + bytes.length)) / 6));
    forms.add(core);
    forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [secret, ...[...forms].filter((f) => f !== secret && f.length >= MIN_ENCODED_LENGTH)];
}

/** Replace every occurrence of each secret, in every form that gives it away, in `bytes` by `***`. */
export function redactBytes(bytes: Buffer, secrets: readonly string[]): Buffer {
  let out = bytes;
  // Longest first, so a secret that contains another is masked whole.
  for (const secret of [...new Set(secrets.filter((x) => x !== '').flatMap(secretForms))].sort((a, b) => b.length - a.length)) {
    const needle = Buffer.from(secret);
    if (needle.length === 0 || out.indexOf(needle) < 0) continue;
    const parts: Buffer[] = [];
    let from = 0;
    for (let i = out.indexOf(needle); i >= 0; i = out.indexOf(needle, from)) {
      parts.push(out.subarray(from, i), MASK);
      from = i + needle.length;
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}

/** A function that redacts a process result's output (identity when there are no secrets). */
export function redactor(secrets: readonly string[]): (r: ProcessResult) => ProcessResult {
  if (secrets.length === 0) return (r) => r;
  return (r) => ({ ...r, stdout: redactBytes(r.stdout, secrets), stderr: redactBytes(r.stderr, secrets) });
}
