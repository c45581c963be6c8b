/**
 * The build state's records as persistent tables (src/projections/record-table.ts, issue 19: no
 * copy of every node at every event), exercised on the nodes. Oracle: the same changes made by
 * immer to a plain record, as the fold made them before. For all sequences of graph changes, the
 * table reads as that record does (same ids in the same order — a plain record's, array-index ids
 * first —, same records, same JSON, and so do the readers that skip its proxy), every earlier
 * table still reads as it did (nothing is changed in place), the leaves that differ between two
 * tables hold every change, and the graph index carried from table to table answers as one built
 * from the plain record.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { Immer, produce } from 'immer';
import { describe, expect, it } from 'vitest';
import type { NodeRecord } from '../src/projections/build-state.js';
import { graphIndexOf, noteNodesFolded } from '../src/projections/graph-index.js';
import { changedTableLeaves, isRecordTable, plainRecord, recordEntries, recordKeys, someValue, TableDraft, type Records } from '../src/projections/record-table.js';

type Plain = Record<string, NodeRecord>;
const immer = new Immer({ autoFreeze: false });
const STATES = ['queued', 'running', 'validating', 'revising', 'blocked', 'canceled', 'accepted'] as const;
const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const op = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), int: fc.boolean(), milestone: fc.constantFrom('m1', 'm2') }),
  fc.record({ kind: fc.constant('plan' as const), count: fc.integer({ min: 2, max: 90 }) }),
  fc.record({ kind: fc.constant('state' as const), pick: fc.nat(), state: fc.constantFrom(...STATES) }),
  fc.record({ kind: fc.constant('push' as const), pick: fc.nat(), dep: fc.nat() }),
  fc.record({ kind: fc.constant('deps' as const), pick: fc.nat(), dep: fc.nat() }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('readd' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('spread' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('addRemove' as const) }),
  fc.record({ kind: fc.constant('many' as const), picks: fc.array(fc.nat(), { minLength: 2, maxLength: 40 }), state: fc.constantFrom(...STATES) }),
  fc.record({ kind: fc.constant('look' as const), pick: fc.nat() }),
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

/** One event's changes to a draft of the nodes (immer's draft of a plain record, or the table's draft); returns what the fold saw of its keys. */
function change(d: Record<string, NodeRecord>, o: Op, counter: { n: number }): string[] {
  const ids = Object.keys(d);
  const fresh = (int: boolean): NodeRecord => {
    const k = counter.n++;
    const id = int ? String(k) : `n${((k * 37) % 1009).toString().padStart(4, '0')}`;
    return { id, kind: 'read-only', state: 'queued', milestone: 'm1', deps: ids.length === 0 ? [] : [ids[k % ids.length]!], attempts: 0 } as unknown as NodeRecord;
  };
  const pick = (p: number): string => ids[p % ids.length]!;
  switch (o.kind) {
    case 'add': {
      const n = { ...fresh(o.int), milestone: o.milestone } as NodeRecord;
      d[n.id] = n;
      break;
    }
    case 'plan':
      for (let i = 0; i < o.count; i++) {
        const n = fresh(i % 7 === 3);
        d[n.id] = n;
      }
      break;
    case 'addRemove': {
      const n = fresh(false);
      d[n.id] = n;
      delete d[n.id];
      break;
    }
    default:
      if (ids.length === 0) break;
      if (o.kind === 'state') (d[pick(o.pick)] as { state: string }).state = o.state;
      else if (o.kind === 'push') (d[pick(o.pick)]!.deps as string[]).push(pick(o.dep));
      else if (o.kind === 'deps') (d[pick(o.pick)] as unknown as { deps: string[] }).deps = [pick(o.dep)];
      else if (o.kind === 'remove') delete d[pick(o.pick)];
      else if (o.kind === 'readd') {
        const id = pick(o.pick);
        const n = { ...d[id]!, deps: [...d[id]!.deps], state: 'revising' } as NodeRecord;
        delete d[id];
        d[id] = n;
      } else if (o.kind === 'spread') {
        const id = pick(o.pick);
        d[id] = { ...d[id]!, state: 'accepted' } as NodeRecord;
      } else if (o.kind === 'many') for (const p of o.picks) (d[pick(p)] as { state: string }).state = o.state;
      else if (o.kind === 'look') {
        const id = pick(o.pick);
        if (!(id in d) || d[id]!.id !== id) throw new Error(`${id} not read back`);
      }
  }
  return Object.keys(d);
}

function refSha(nodes: Plain): string {
  const body = Object.keys(nodes).sort(byCodePoint).map((id) => {
    const n = nodes[id]!;
    return { deps: [...n.deps].sort(byCodePoint), id: n.id, kind: n.kind, milestone: n.milestone, state: n.state };
  });
  return createHash('sha256').update(JSON.stringify(body)).digest('hex');
}

/**
 * The readers that skip a table's proxy (recordKeys, recordEntries, someValue) and the
 * projections' diff (changedTableLeaves) answer as the plain record does. The diff's oracle: the
 * previous record with every changed leaf's keys taken out and the new leaf's put in is the new record.
 */
function expectReadersAsPlain(table: Records<NodeRecord>, plain: Plain, previous: { table: Records<NodeRecord>; plain: Plain }): void {
  expect(recordKeys(table)).toEqual(Object.keys(plain));
  expect(recordEntries(table)).toEqual(Object.entries(plain));
  for (const state of STATES) expect(someValue(table, (n) => n.state === state), state).toBe(Object.values(plain).some((n) => n.state === state));
  const leaves = changedTableLeaves(previous.table, table);
  if (leaves === null) {
    expect(isRecordTable(previous.table) && isRecordTable(table)).toBe(false);
    return;
  }
  const rebuilt = new Map(Object.entries(previous.plain));
  for (const [before, after] of leaves) {
    for (const id of Object.keys(before)) rebuilt.delete(id);
    for (const [id, n] of Object.entries(after)) rebuilt.set(id, n as NodeRecord);
  }
  expect(Object.fromEntries([...rebuilt].sort(([x], [y]) => byCodePoint(x, y)))).toEqual(Object.fromEntries(Object.entries(plain).sort(([x], [y]) => byCodePoint(x, y))));
}

describe('the nodes table (issue 19)', () => {
  it('for all sequences of graph changes: the table reads as a plain record changed by immer (ids in its order, records, JSON, the keys seen inside each fold), earlier tables still read as they did, and the carried graph index answers as the reference', () => {
    fc.assert(fc.property(fc.array(op, { minLength: 5, maxLength: 60 }), (ops) => {
      let plain: Plain = {};
      let table: Records<NodeRecord> = {};
      let previous: { table: Records<NodeRecord>; plain: Plain } = { table, plain };
      const seen: { table: Records<NodeRecord>; json: string; keys: string[] }[] = [];
      const a = { n: 0 };
      const b = { n: 0 };
      for (const o of ops) {
        let keysPlain: string[] = [];
        plain = produce(plain, (d) => {
          keysPlain = change(d as Plain, o, a);
        });
        const touched = new Set<string>();
        const draft = new TableDraft(table, immer, touched);
        const keysTable = change(draft.proxy as Plain, o, b);
        expect(keysTable).toEqual(keysPlain);
        const next = draft.commit() ?? table;
        noteNodesFolded(table, next, touched);
        table = next;
        expect(Object.keys(table)).toEqual(Object.keys(plain));
        expect(JSON.stringify(table)).toBe(JSON.stringify(plain));
        for (const id of Object.keys(plain)) {
          expect(id in table).toBe(true);
          expect(Object.hasOwn(table, id)).toBe(true);
        }
        expect(graphIndexOf(table).graphSha256()).toBe(refSha(plain));
        expectReadersAsPlain(table, plain, previous);
        previous = { table, plain };
        seen.push({ table, json: JSON.stringify(table), keys: Object.keys(table) });
      }
      for (const s of seen) {
        expect(JSON.stringify(s.table)).toBe(s.json);
        expect(Object.keys(s.table)).toEqual(s.keys);
      }
    }), { endOnFailure: true });
  });

  it('a table refuses writes, is not a plain object to immer, and copies out as a plain record', () => {
    const draft = new TableDraft({}, immer, new Set());
    for (const id of ['b', '2', 'a']) draft.proxy[id] = { id } as never;
    const t = draft.commit()!;
    expect(isRecordTable(t)).toBe(true);
    expect(Object.keys(t)).toEqual(['2', 'b', 'a']);
    expect(() => {
      (t as Plain).c = { id: 'c' } as NodeRecord;
    }).toThrow(/read-only/);
    expect(() => {
      delete (t as Plain).a;
    }).toThrow(/read-only/);
    expect(Object.getPrototypeOf(t)).not.toBe(Object.prototype);
    const plain = plainRecord(t);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(plain).toEqual({ 2: { id: '2' }, b: { id: 'b' }, a: { id: 'a' } });
    expect(structuredClone(plain)).toEqual(plain);
  });
});
