import { describe, expect, it } from 'vitest';
import { shortList } from '../src/adapters/cli/short-list.js';

describe('shortList (human lines of status and show)', () => {
  it('an empty list is "-", a short one whole, a long one its first and last five and how many', () => {
    expect(shortList([])).toBe('-');
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `m${i}`);
    expect(shortList(ids(12))).toBe(ids(12).join(', '));
    expect(shortList(ids(13))).toBe('m0, m1, m2, m3, m4, … m8, m9, m10, m11, m12 (13 in all; --json lists every one)');
    expect(shortList(ids(2500))).toBe('m0, m1, m2, m3, m4, … m2495, m2496, m2497, m2498, m2499 (2,500 in all; --json lists every one)');
  });
});
