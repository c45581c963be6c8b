/**
 * Sharded collections (src/projections/sharded.ts; issue 19): a record kept as two levels of
 * 64-slot bucket arrays, changed through immer. Oracle: a Map changed by the same operations. For
 * all sequences of sets and in-place edits — keys that collide in a bucket, integer-like keys —
 * the collection reads as the Map (every key, every value, nothing else), every earlier version
 * still reads as it did (immer copies the path it writes), a JSON round trip (what a snapshot
 * stores: empty slots as null) reads the same, and the leaves `changedLeaves` gives between two
 * versions hold every change. Deletes too (decision 0056): a leaf a delete empties is let go (its
 * slot null again), so no collection holds an empty leaf.
 */
import fc from 'fast-check';
import { Immer } from 'immer';
import { describe, expect, it } from 'vitest';
import { changedLeaves, shardDelete, shardDraft, shardedOf, shardEntries, shardGet, shardSet, shardValues, slotsOf, type Sharded } from '../src/projections/sharded.js';

interface Entry {
  readonly n: number;
  readonly tag: string;
}

const immer = new Immer({ autoFreeze: false });
// A small key space, so that keys meet again, share buckets and are edited after they were set.
const key = fc.oneof(fc.integer({ min: 0, max: 300 }).map((i) => `k${i}`), fc.integer({ min: 0, max: 40 }).map(String));
const op = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key, n: fc.integer() }),
  fc.record({ kind: fc.constant('edit' as const), key, tag: fc.string({ maxLength: 3 }) }),
  fc.record({ kind: fc.constant('many' as const), keys: fc.array(key, { minLength: 2, maxLength: 30 }), n: fc.integer() }),
  fc.record({ kind: fc.constant('delete' as const), keys: fc.array(key, { minLength: 1, maxLength: 30 }) }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

function apply(s: Sharded<Entry>, m: Map<string, Entry>, o: Op): Sharded<Entry> {
  return immer.produce(s, (d) => {
    const sets = o.kind === 'many' || o.kind === 'delete' ? o.keys : [o.key];
    for (const k of sets) {
      if (o.kind === 'delete') {
        shardDelete(d as Sharded<Entry>, k);
        m.delete(k);
      } else if (o.kind === 'edit') {
        const e = shardDraft(d as Sharded<Entry>, k);
        const had = m.get(k);
        expect(e === undefined).toBe(had === undefined);
        if (e !== undefined && had !== undefined) {
          e.tag = o.tag;
          m.set(k, { ...had, tag: o.tag });
        }
      } else {
        shardSet(d as Sharded<Entry>, k, { n: o.n, tag: '' });
        m.set(k, { n: o.n, tag: '' });
      }
    }
  });
}

function expectLike(s: Sharded<Entry>, m: ReadonlyMap<string, Entry>): void {
  for (const [k, v] of m) expect(shardGet(s, k), k).toEqual(v);
  expect(new Map(shardEntries(s))).toEqual(m);
  expect(shardValues(s).length).toBe(m.size);
  expect(shardGet(s, 'absent')).toBeUndefined();
  for (const mid of s) for (const leaf of mid ?? []) if (leaf !== null) expect(Object.keys(leaf).length, 'an empty leaf kept').toBeGreaterThan(0);
}

describe('sharded collections', () => {
  it('for all sequences of sets, edits and deletes: reads as a Map, no empty leaf kept, earlier versions unchanged, a JSON round trip reads the same, and changedLeaves holds every change', () => {
    fc.assert(fc.property(fc.array(op, { minLength: 1, maxLength: 40 }), (ops) => {
      let s: Sharded<Entry> = shardedOf({});
      const m = new Map<string, Entry>();
      const versions: { s: Sharded<Entry>; json: string; m: Map<string, Entry> }[] = [];
      for (const o of ops) {
        const before = s;
        const beforeMap = new Map(m);
        s = apply(s, m, o);
        expectLike(s, m);
        expectLike(JSON.parse(JSON.stringify(s)) as Sharded<Entry>, m);
        const rebuilt = new Map(beforeMap);
        for (const [x, y] of changedLeaves(before, s)) {
          for (const k of Object.keys(x)) rebuilt.delete(k);
          for (const [k, v] of Object.entries(y)) rebuilt.set(k, v);
        }
        expect(rebuilt).toEqual(m);
        versions.push({ s, json: JSON.stringify(s), m: new Map(m) });
      }
      for (const v of versions) {
        expect(JSON.stringify(v.s)).toBe(v.json);
        expectLike(v.s, v.m);
      }
    }), { endOnFailure: true });
  });

  it('is bucket arrays: each key in the slots its hash gives, every slot up to an array\'s length there (null when empty, never a hole)', () => {
    const keys = ['a', '7', 'k1', 'k2', 'k300'];
    let s: Sharded<number> = shardedOf({});
    s = immer.produce(s, (d) => {
      for (const [i, k] of keys.entries()) shardSet(d as Sharded<number>, k, i);
    });
    for (const built of [s, shardedOf(Object.fromEntries(keys.map((k, i) => [k, i])))]) {
      for (const [i, k] of keys.entries()) {
        const [x, y] = slotsOf(k);
        expect(built[x]![y]![k]).toBe(i);
      }
      for (let a = 0; a < built.length; a++) {
        expect(a in built).toBe(true);
        const mid = built[a]!;
        if (mid === null) continue;
        expect(Array.isArray(mid)).toBe(true);
        for (let b = 0; b < mid.length; b++) expect(b in mid).toBe(true);
      }
    }
  });
});
