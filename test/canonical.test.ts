import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyOrderMemo, canonicalJson, compareCodePoints, jsonString, stripUndefined } from '../src/events/canonical.js';
import { ValidationError } from '../src/events/errors.js';

/** Rebuild an object with its keys inserted in a shuffled order, deeply. */
function shuffleKeys(value: unknown, order: number[]): unknown {
  if (Array.isArray(value)) return value.map((v) => shuffleKeys(v, order));
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const shuffled = entries.map((e, i) => ({ e, k: order[i % Math.max(order.length, 1)] ?? i })).sort((a, b) => a.k - b.k).map((x) => x.e);
    const out: Record<string, unknown> = {};
    // defineProperty, not assignment: a '__proto__' key must stay an own property.
    for (const [k, v] of shuffled) Object.defineProperty(out, k, { value: shuffleKeys(v, order), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

function codePointsLess(a: string, b: string): boolean {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! < y[i]!;
  return x.length < y.length;
}

const jsonArb = fc.jsonValue({ noUnicodeString: false });

describe('R-2 canonical JSON', () => {
  it('R-2 writes sorted keys and no insignificant white space', () => {
    expect(canonicalJson({ b: 1, a: [true, null, 'x', { d: 2, c: 1 }] })).toBe('{"a":[true,null,"x",{"c":1,"d":2}],"b":1}');
    expect(canonicalJson(-0)).toBe('0');
    expect(canonicalJson(1e21)).toBe('1e+21');
    expect(canonicalJson('é\u2028"')).toBe(JSON.stringify('é\u2028"'));
  });

  it('R-2 sorts keys by code point, not by UTF-16 code unit', () => {
    // U+FF61 is one code unit; U+1F600 is a surrogate pair starting 0xD83D < 0xFF61.
    expect(canonicalJson({ '\u{1F600}': 1, '\uFF61': 2 })).toBe('{"\uFF61":2,"\u{1F600}":1}');
    expect(compareCodePoints('\uFF61', '\u{1F600}')).toBeLessThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('b', 'a')).toBeGreaterThan(0);
  });

  it('R-2 refuses NaN, Infinity, undefined and non-JSON values, naming the path', () => {
    expect(() => canonicalJson({ a: { b: Number.NaN } })).toThrow(/NaN at \$\.a\.b/);
    expect(() => canonicalJson([1, Number.POSITIVE_INFINITY])).toThrow(/Infinity at \$\[1\]/);
    expect(() => canonicalJson({ a: undefined })).toThrow(/undefined at \$\.a/);
    expect(() => canonicalJson([undefined])).toThrow(ValidationError);
    expect(() => canonicalJson(undefined)).toThrow(ValidationError);
    expect(() => canonicalJson({ d: new Date(0) })).toThrow(/non-plain object/);
    expect(() => canonicalJson(new Map())).toThrow(ValidationError);
    expect(() => canonicalJson(10n)).toThrow(ValidationError);
    expect(() => canonicalJson(() => 1)).toThrow(ValidationError);
  });

  it('R-2 (property) key insertion order never changes the bytes', () => {
    fc.assert(
      fc.property(jsonArb, fc.array(fc.nat(100)), (value, order) => {
        expect(canonicalJson(shuffleKeys(value, order))).toBe(canonicalJson(value));
      }),
      { numRuns: 300 },
    );
  });

  it('R-2 (property) canonical JSON parses back to the same value and is a fixed point', () => {
    fc.assert(
      fc.property(jsonArb, (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('R-2 (property) object keys appear in code-point order', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.integer()), (obj) => {
        // Keys read from the text in the order written (Object.keys would put integer-like keys first).
        const text = canonicalJson(obj);
        const keys = Array.from(text.matchAll(/"((?:[^"\\]|\\.)*)":-?\d+/g), (m) => JSON.parse(`"${m[1]!}"`) as string);
        expect(keys.length).toBe(Object.keys(obj).length);
        // Independent oracle: lexicographic order of the arrays of code points.
        for (let i = 1; i < keys.length; i++) expect(codePointsLess(keys[i - 1]!, keys[i]!)).toBe(true);
      }),
      { numRuns: 200, examples: [[{ '0': 0, '': 0 }], [{ '10': 1, '9': 2, a: 3 }]] },
    );
  });

  it('R-2 (property) any non-finite number anywhere is refused', () => {
    fc.assert(
      fc.property(jsonArb, fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY), fc.nat(), (value, bad, where) => {
        const holder = where % 2 === 0 ? { wrapped: value, bad } : [value, [bad]];
        expect(() => canonicalJson(holder)).toThrow(ValidationError);
      }),
      { numRuns: 100 },
    );
  });

  it('R-2 (property) for all values, one key-order memo shared across them writes the same bytes as none', () => {
    // Key sets that join to the same text ('a\u0000b' vs 'a','b') must not share an order.
    const keyArb = fc.constantFrom('a', 'b', 'a\u0000b', 'b\u0000', '', '\u0000', '𝔸', '\uFF61', 'z');
    const objArb = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.jsonValue(), fc.dictionary(keyArb, tie('value')), fc.array(tie('value'), { maxLength: 3 })),
    })).value;
    fc.assert(
      fc.property(fc.array(objArb, { minLength: 1, maxLength: 20 }), (values) => {
        const memo = new KeyOrderMemo();
        for (const v of values) expect(canonicalJson(v, memo)).toBe(canonicalJson(v));
      }),
      { numRuns: 300 },
    );
  });

  it('R-2 key sets whose joined text collides get their own order from the memo', () => {
    const memo = new KeyOrderMemo();
    expect(memo.order(['a\u0000b']).sorted).toEqual(['a\u0000b']);
    expect(memo.order(['b', 'a']).sorted).toEqual(['a', 'b']);
    expect(memo.order(['a', 'b']).sorted).toEqual(['a', 'b']);
    expect(memo.order(['a\u0000b']).prefixes).toEqual(['{"a\\u0000b":']);
  });

  it('R-2 (property) jsonString quotes every string exactly as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '\u0000', '\u001f', '\u007f', '\u2028', '\ud800', '\udfff'), fc.string({ unit: 'binary', maxLength: 1 })) }), (text) => {
        expect(jsonString(text)).toBe(JSON.stringify(text));
      }),
      { numRuns: 500 },
    );
  });

  it('stripUndefined drops undefined keys so optional fields canonicalise', () => {
    expect(canonicalJson(stripUndefined({ a: 1, b: undefined, c: { d: undefined, e: [1] } }))).toBe('{"a":1,"c":{"e":[1]}}');
  });
});
