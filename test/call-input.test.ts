/**
 * The input digest of a call is the SHA-256 of `{ role, driver, input }` in canonical JSON.
 * It is computed with the driver's canonical text made once per driver object (a blueprint's
 * planner driver is its whole plan, the same object at every planner call); checked here against
 * the definition itself, `canonicalSha256` of the whole object, for all drivers and inputs.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { callInputSha256, HashedDriver } from '../src/commands/call-input.js';
import type { JsonValue } from '../src/events/canonical.js';
import { canonicalSha256 } from '../src/events/hash.js';

/** Keys and strings the digest maps (recording times, commit ids, summary ids, graph digests) are left out: for the rest the input is taken as it is. */
const SPECIAL_KEYS = new Set(['commitDate', 'createdAt', 'idempotencyKey', 'graphSha256', 'sha256']);
const plainJson: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 4 }).filter((v) => {
  const text = JSON.stringify(v);
  return !/[0-9a-f]{40}|summary-[0-9a-f]{16}/.test(text) && ![...SPECIAL_KEYS].some((k) => text.includes(`"${k}"`));
}) as fc.Arbitrary<JsonValue>;

describe('call input digest (R-41)', () => {
  it('(property) for all drivers and inputs, the digest is the SHA-256 of { role, driver, input } in canonical JSON, the first call with a driver object and every later one alike', () => {
    fc.assert(
      fc.property(fc.constantFrom('planner' as const, 'worker' as const), plainJson, fc.array(plainJson, { minLength: 1, maxLength: 4 }), (role, driver, inputs) => {
        const hashed = new HashedDriver(driver);
        for (const input of inputs) {
          const expected = canonicalSha256({ role, driver, input });
          expect(callInputSha256(role, input, driver, new Map())).toBe(expected);
          // The same driver object again (its text remembered), and an equal copy of it (not).
          expect(callInputSha256(role, input, driver, new Map())).toBe(expected);
          expect(callInputSha256(role, input, structuredClone(driver), new Map())).toBe(expected);
          // A driver digested once and let go (decision 0054): the same digest, every call.
          expect(callInputSha256(role, input, hashed, new Map())).toBe(expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('an input with a key named __proto__ (a file path, say) is digested like any other key (fast-check found it: seed 256358897)', () => {
    const input = JSON.parse('{"files":{"__proto__":{"sha256":"x"},"a.txt":{"n":1}}}') as JsonValue;
    const driver = { kind: 'blueprint' } as JsonValue;
    expect(callInputSha256('worker', input, driver, new Map())).toBe(canonicalSha256({ role: 'worker', driver, input }));
  });

  it('two drivers of one call differ in the digest, each the first time and every time after (no text remembered for the wrong object)', () => {
    const a = { kind: 'blueprint', milestones: [{ id: 'm1', nodes: ['a'] }] } as JsonValue;
    const b = { kind: 'blueprint', milestones: [{ id: 'm1', nodes: ['b'] }] } as JsonValue;
    const input = { request: { title: 't' } } as JsonValue;
    for (let i = 0; i < 2; i++) {
      expect(callInputSha256('planner', input, a, new Map())).toBe(canonicalSha256({ role: 'planner', driver: a, input }));
      expect(callInputSha256('planner', input, b, new Map())).toBe(canonicalSha256({ role: 'planner', driver: b, input }));
    }
    expect(callInputSha256('planner', input, a, new Map())).not.toBe(callInputSha256('planner', input, b, new Map()));
  });
});
