/**
 * Secret environment values (config `env.secret`) are passed to commands but never kept: every
 * occurrence in a command's stdout or stderr becomes `***` before the bytes reach evidence, the
 * cache or the log.
 */
import type { ProcessResult } from '../process/run-process.js';

const MASK = Buffer.from('***');

/** Replace every occurrence of each secret in `bytes` by `***`. */
export function redactBytes(bytes: Buffer, secrets: readonly string[]): Buffer {
  let out = bytes;
  // Longest first, so a secret that contains another is masked whole.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
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
