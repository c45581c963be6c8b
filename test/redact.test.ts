/**
 * Secrets in any encoding (issue 45, R-30): for all secrets and all texts that print one — as
 * written, base64 (standard or URL-safe) of it inside a longer value at any alignment, hex in
 * either case, percent-encoded — the redacted text gives it away in none of those, found by an
 * oracle that decodes every suffix of every line (test/support/revealed.ts), not by matching the
 * redactor's own forms. Text without the secret is left as it was.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MIN_ENCODED_LENGTH, redactBytes } from '../src/adapters/sandbox/redact.js';
import { revealed } from './support/revealed.js';

const printable = fc.string({ unit: fc.constantFrom(...'abcXYZ019/+=?&% -_.~é'.split('')), minLength: 0, maxLength: 12 });
const secret = fc.string({ unit: fc.constantFrom(...'abcdefXYZ0123456789/+=?&% -_~é'.split('')), minLength: MIN_ENCODED_LENGTH, maxLength: 40 });
const encoding = fc.constantFrom('plain', 'base64', 'base64url', 'hex', 'HEX', 'percent');

function encode(e: string, s: string): string {
  const b = Buffer.from(s);
  if (e === 'base64') return b.toString('base64');
  if (e === 'base64url') return b.toString('base64url');
  if (e === 'hex') return b.toString('hex');
  if (e === 'HEX') return b.toString('hex').toUpperCase();
  if (e === 'percent') return encodeURIComponent(s);
  return s;
}

describe('secrets are redacted in every encoding a program prints them in', () => {
  it('R-30 (property) for all secrets, surroundings and encodings: the redacted output reveals the secret in no encoding', () => {
    fc.assert(fc.property(secret, fc.array(fc.tuple(printable, printable, encoding), { minLength: 1, maxLength: 4 }), printable, (s, prints, noise) => {
      const text = `${noise}\n${prints.map(([before, after, e]) => `token: ${encode(e, `${before}${s}${after}`)}`).join('\n')}\n`;
      const out = redactBytes(Buffer.from(text), [s]).toString('utf8');
      expect(revealed(out, s)).toEqual([]);
    }), { numRuns: 400 });
  });

  it('R-30 text that holds no secret is left byte for byte', () => {
    fc.assert(fc.property(secret, printable, (s, text) => {
      fc.pre(!text.includes(s) && !revealed(text, s).length);
      expect(redactBytes(Buffer.from(text), [s]).toString('utf8')).toBe(text);
    }), { numRuns: 200 });
  });
});
