import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { ProjectionStore } from '../src/projections/engine.js';
import type { Projection } from '../src/projections/projection.js';
import type { JsonValue } from '../src/events/canonical.js';
import { CorruptLogError } from '../src/events/errors.js';
import { testCatalogue } from './contract/test-catalogue.js';
import { SqliteSnapshotStore } from '../src/projections/snapshot-store.js';
import { stateAt } from '../src/projections/time-travel.js';
import { counterProjection, counterProjectionPerEvent, type CounterState } from './support/test-projection.js';

const meta = { recordedAt: '2026-01-01T00:00:00Z' };

/** The positions of the snapshots of projection `name` and of its view (`name-view`) in the store at `path`. */
function snapshotPositions(path: string, name: string): { state: number[]; view: number[] } {
  const db = new Database(path);
  try {
    const of = (projection: string): number[] => db.prepare('SELECT position FROM snapshots WHERE projection = ? ORDER BY position').pluck().all(projection) as number[];
    return { state: of(name), view: of(`${name}-view`) };
  } finally {
    db.close();
  }
}
const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'lb-engine-'));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A projection whose initial state already holds a row: the count of TestAdded, 0 at the start. */
const totalsProjection: Projection<{ added: number }> = {
  name: 'totals',
  initialState: { added: 0 },
  evolve: (s, e) => (e.type === 'TestAdded' ? { added: s.added + 1 } : e.type === 'TestRemoved' ? { added: 0 } : s),
  tables: [{ name: 'test_totals', columns: ['key', 'value'], keyColumns: 1, entities: (s) => ({ added: s.added }), toRow: (k, v) => [k, v as number] }],
};

describe('projection engine', () => {
  it('R-5 a row the initial state already holds is written by a catch-up and by a rebuild alike, also when its value returns to the initial one', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    const store = ProjectionStore.open(join(dir, 'projections.db'), [totalsProjection], { snapshotEvery: 0 });
    const steps: { type: string; data: Record<string, JsonValue> }[] = [{ type: 'TestNoted', data: {} }, { type: 'TestAdded', data: { key: 'a', n: 1 } }, { type: 'TestRemoved', data: { key: 'a' } }];
    const dumps: string[] = [];
    for (const [i, e] of steps.entries()) {
      log.appendSync('s1', [{ ...e, metadata: meta }], i === 0 ? 'no-stream' : i - 1);
      store.catchUp(log.iterateAll(store.resumeFrom()));
      dumps.push(store.dump());
    }
    expect(dumps[0]).toContain('["added",0]'); // written although it equals the initial state's
    expect(dumps[2]).toContain('["added",0]'); // back to the initial value: still there
    const stored = store.dump();
    store.rebuild(log.iterateAll(1));
    expect(store.dump()).toBe(stored);
    store.close();
  });

  it('R-5 catch-up writes rows, survives reopen, and equals a rebuild', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    log.appendSync('s1', [
      { type: 'TestAdded', data: { key: 'a', n: 2 }, metadata: meta },
      { type: 'TestAdded', data: { key: 'b', n: 1, label: 'bee' }, metadata: meta },
      { type: 'TestTagged', data: { tag: 'x' }, metadata: meta },
    ], 'no-stream');
    const store = ProjectionStore.open(join(dir, 'projections.db'), [counterProjection], { snapshotEvery: 2 });
    expect(store.catchUp(log.iterateAll(store.resumeFrom()))).toBe(3);
    expect(store.position()).toBe(3);
    expect(store.dump()).toBe([
      '{"columns":["key","n","updates","label"],"table":"test_counter"}',
      '["a",2,1,null]',
      '["b",1,1,"bee"]',
      '{"columns":["stream","tag","rev"],"table":"test_tag"}',
      '["s1","x",2]',
      '',
    ].join('\n'));
    store.close();

    log.appendSync('s1', [{ type: 'TestRemoved', data: { key: 'a' }, metadata: meta }, { type: 'TestAdded', data: { key: 'b', n: 5 }, metadata: meta }], 2);
    const reopened = ProjectionStore.open(join(dir, 'projections.db'), [counterProjection], { snapshotEvery: 2 });
    expect(reopened.resumeFrom()).toBe(3); // restored from the snapshot at 2
    reopened.catchUp(log.iterateAll(reopened.resumeFrom()));
    expect(reopened.state<CounterState>('test_counters').counters).toEqual({ b: { n: 6, updates: 2, label: 'bee' } });
    const incremental = reopened.dumpSha256();
    reopened.rebuild(log.iterateAll());
    expect(reopened.dumpSha256()).toBe(incremental);
    expect(reopened.positions()).toEqual({ test_counters: 5 });
    reopened.close();
    void log.close();
  });

  it('R-5 R-6 runs longer than one fold run (1,024 events) and cut by snapshots fold exactly as event by event', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    const types = ['TestAdded', 'TestAdded', 'TestRemoved', 'TestTagged', 'TestUntagged'];
    log.appendSync('s1', Array.from({ length: 5000 }, (_, i) => ({ type: types[(i * 7) % 5]!, data: { key: `k${i % 13}`, n: i % 5, tag: `t${i % 3}` }, metadata: meta })), 'no-stream');
    const runs = ProjectionStore.open(join(dir, 'runs.db'), [counterProjection], { snapshotEvery: 700 });
    const single = ProjectionStore.open(join(dir, 'single.db'), [counterProjectionPerEvent], { snapshotEvery: 0 });
    expect(runs.rebuild(log.iterateAll())).toBe(5000);
    single.rebuild(log.iterateAll());
    expect(runs.dumpSha256()).toBe(single.dumpSha256());
    expect(runs.state<CounterState>('test_counters')).toEqual(single.state<CounterState>('test_counters'));
    // Snapshots were cut at multiples of 700 inside the runs (older ones thinned to every 4th);
    // time travel from them, folding runs again, agrees with the event-by-event oracle.
    const range = (from: number, to: number) => log.readAllSync({ from, limit: to - from + 1 });
    const used: number[] = [];
    for (const p of [699, 700, 1024, 1025, 2800, 3100, 4999]) {
      const oracle = log.readAllSync({ limit: p }).reduce<CounterState>((st, e) => counterProjectionPerEvent.evolve(st, e), counterProjectionPerEvent.initialState);
      const at = stateAt(range, counterProjection, p, new SqliteSnapshotStore(runs.db));
      used.push(at.fromSnapshot);
      expect(at.state).toEqual(oracle);
    }
    expect(used).toEqual([0, 0, 0, 0, 2800, 2800, 4900]);
    runs.close();
    single.close();
    void log.close();
  });

  it('R-4 refuses events that do not continue the chain the projections saw', () => {
    const dir = tempDir();
    const a = new SqliteEventLog({ path: join(dir, 'a.db'), catalogue: testCatalogue });
    const b = new SqliteEventLog({ path: join(dir, 'b.db'), catalogue: testCatalogue });
    a.appendSync('s', [{ type: 'TestAdded', data: { key: 'a' }, metadata: meta }], 'any');
    b.appendSync('s', [{ type: 'TestAdded', data: { key: 'zzz' }, metadata: meta }, { type: 'TestAdded', data: { key: 'b' }, metadata: meta }], 'any');
    const store = ProjectionStore.open(join(dir, 'p.db'), [counterProjection], { snapshotEvery: 0 });
    store.catchUp(a.iterateAll());
    const before = store.dumpSha256();
    expect(() => store.catchUp(b.iterateAll(2))).toThrow(CorruptLogError);
    expect(store.dumpSha256()).toBe(before);
    expect(store.position()).toBe(1);
    store.close();
    void a.close();
    void b.close();
  });
});

describe('projection engine: truncation', () => {
  it('R-4 catch-up refuses a log that ends before the position the tables reflect', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    for (let i = 0; i < 5; i++) log.appendSync('s', [{ type: 'TestAdded', data: { key: 'a' }, metadata: meta }], 'any');
    const store = ProjectionStore.open(join(dir, 'p.db'), [counterProjection], { snapshotEvery: 0 });
    store.catchUp(log.iterateAll());
    store.close();
    const reopened = ProjectionStore.open(join(dir, 'p.db'), [counterProjection], { snapshotEvery: 0 });
    expect(reopened.catchUp(log.iterateAll(reopened.resumeFrom()))).toBe(5);
    const again = ProjectionStore.open(join(dir, 'p.db'), [counterProjection], { snapshotEvery: 0 });
    expect(() => again.catchUp(log.readAllSync({ limit: 3 }))).toThrow(/log truncated: projection test_counters has seen position 5, but the log ends at 3/);
    reopened.close();
    again.close();
    void log.close();
  });

  it('decision 0023: a store closed 100 or more events past its newest snapshot leaves one at its head, and the next open folds nothing; closer than that, or with a state over 1 MiB, it does not', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    const add = (from: number, count: number): void => {
      log.appendSync('s1', Array.from({ length: count }, (_, i) => ({ type: 'TestAdded', data: { key: `k${(from + i) % 7}`, n: 1 }, metadata: meta })), from === 0 ? 'no-stream' : from - 1);
    };
    const open = (): ProjectionStore => ProjectionStore.open(join(dir, 'projections.db'), [counterProjection], { snapshotEvery: 1000 });
    add(0, 150);
    const first = open();
    first.catchUp(log.iterateAll(first.resumeFrom()));
    first.close();
    const second = open();
    expect(second.resumeFrom(), 'restored at the head: nothing to fold').toBe(151);
    const folded = ProjectionStore.open(join(dir, 'fold.db'), [counterProjection], { snapshotEvery: 0 });
    folded.catchUp(log.iterateAll(1));
    expect(second.state('test_counters')).toEqual(folded.state('test_counters'));
    add(150, 50);
    second.catchUp(log.iterateAll(second.resumeFrom()));
    second.close();
    const third = open();
    expect(third.resumeFrom(), '50 events past the newest snapshot: none at the head').toBe(151);
    third.close();
    folded.close();

    // A state that grows with the history (here over 1 MiB) keeps its spacing: no snapshot at close once its size is known.
    const big: Projection<{ blob: string; n: number }> = { name: 'big', initialState: { blob: 'x'.repeat(1_200_000), n: 0 }, evolve: (st, e) => (e.type === 'TestAdded' ? { ...st, n: st.n + 1 } : st), tables: [] };
    const openBig = (): ProjectionStore => ProjectionStore.open(join(dir, 'big.db'), [big], { snapshotEvery: 1000 });
    const b1 = openBig();
    b1.catchUp(log.iterateAll(1));
    b1.close(); // its size not known yet: snapshotted at the head (200)
    add(200, 150);
    const b2 = openBig();
    expect(b2.resumeFrom()).toBe(201);
    b2.catchUp(log.iterateAll(b2.resumeFrom()));
    b2.close();
    const b3 = openBig();
    expect(b3.resumeFrom(), 'restored a state over 1 MiB: no snapshot at close').toBe(201);
    b3.close();

    // A head snapshot replaces the previous head snapshot; those on boundaries stay for time travel.
    const openEvery = (): ProjectionStore => ProjectionStore.open(join(dir, 'every.db'), [counterProjection], { snapshotEvery: 150 });
    const positions = (): number[] => {
      const db = new Database(join(dir, 'every.db'));
      try {
        return db.prepare("SELECT position FROM snapshots WHERE projection = 'test_counters' ORDER BY position").pluck().all() as number[];
      } finally {
        db.close();
      }
    };
    const upTo = (store: ProjectionStore, last: number): void => void store.catchUp(log.readAllSync({ from: store.resumeFrom(), limit: last - store.resumeFrom() + 1 }));
    const e1 = openEvery();
    upTo(e1, 140);
    e1.close();
    expect(positions()).toEqual([140]);
    const e2 = openEvery();
    upTo(e2, 290);
    e2.close();
    expect(positions(), 'the boundary at 150 stays; the head at 290 replaces the one at 140').toEqual([150, 290]);
    const e3 = openEvery();
    expect(e3.resumeFrom()).toBe(291);
    e3.close();
    void log.close();
  });

  it('decision 0032: a view over 1 MiB is snapshotted at the head at close once it is 100 events per MiB behind its newest snapshot; a full state over 1 MiB still is not', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    log.appendSync('s1', Array.from({ length: 1250 }, (_, i) => ({ type: 'TestAdded', data: { key: `k${i % 7}`, n: 1 }, metadata: meta })), 'no-stream');
    type Big = { blob: string; n: number };
    // A state and a view of ~1.2 MB each (2 MiB rounded up: a head snapshot is due 200 events behind).
    const big: Projection<Big> = {
      name: 'big', initialState: { blob: 'x'.repeat(1_200_000), n: 0 }, evolve: (st, e) => (e.type === 'TestAdded' ? { ...st, n: st.n + 1 } : st), tables: [],
      view: { name: 'big-view', of: (st) => ({ blob: st.blob.slice(1), n: st.n }) },
    };
    const positionsAfter = (events: number): Record<string, number[]> => {
      const path = join(dir, `big-${events}.db`);
      const store = ProjectionStore.open(path, [big], { snapshotEvery: 1000 });
      store.catchUp(log.readAllSync({ from: 1, limit: events }));
      store.close();
      return snapshotPositions(path, 'big');
    };
    // Both are written on the boundary at 1,000, so their sizes are known at close.
    expect(positionsAfter(1150), '150 events behind: not yet (a small view would be, decision 0053)').toEqual({ state: [1000], view: [1000] });
    expect(positionsAfter(1199), '199 events behind: not yet').toEqual({ state: [1000], view: [1000] });
    expect(positionsAfter(1200), '200 events behind: the view at the head, the full state not (over 1 MiB)').toEqual({ state: [1000], view: [1000, 1200] });
    void log.close();
  });

  it('decision 0053: a small view is snapshotted at the head at close once 16 events behind (a reading command restores it instead of folding them); its full state waits for 100', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    log.appendSync('s1', Array.from({ length: 120 }, (_, i) => ({ type: 'TestAdded', data: { key: `k${i % 3}`, n: 1 }, metadata: meta })), 'no-stream');
    type Small = { n: number };
    const small: Projection<Small> = { name: 'small', initialState: { n: 0 }, evolve: (st, e) => (e.type === 'TestAdded' ? { n: st.n + 1 } : st), tables: [], view: { name: 'small-view', of: (st) => st } };
    const path = join(dir, 'small.db');
    const upTo = (last: number): Record<string, number[]> => {
      const store = ProjectionStore.open(path, [small], { snapshotEvery: 1000 });
      store.catchUp(log.readAllSync({ from: store.resumeFrom(), limit: last - store.resumeFrom() + 1 }));
      store.close();
      return snapshotPositions(path, 'small');
    };
    expect(upTo(15), '15 events behind: nothing').toEqual({ state: [], view: [] });
    expect(upTo(16), '16 behind: the view at the head').toEqual({ state: [], view: [16] });
    expect(upTo(31), '15 past it: the view stays').toEqual({ state: [], view: [16] });
    expect(upTo(32), '16 past it: the head replaces it').toEqual({ state: [], view: [32] });
    expect(upTo(100), 'the full state at 100').toEqual({ state: [100], view: [100] });
    void log.close();
  });

  it('decision 0017: a projection with a view keeps only its newest full snapshot (its view\'s are thinned as before); time travel to every position still gives the fold, and the next open restores the newest', () => {
    const dir = tempDir();
    const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: testCatalogue });
    log.appendSync('s1', Array.from({ length: 333 }, (_, i) => ({ type: 'TestAdded', data: { key: `k${i}`, n: i }, metadata: meta })), 'no-stream');
    type Seen = { total: number; keys: string[] };
    /** Every key seen (grows with the history) and a count; its view keeps the count only. */
    const viewed: Projection<Seen> = {
      name: 'seen',
      initialState: { total: 0, keys: [] },
      evolve: (st, e) => (e.type === 'TestAdded' ? { total: st.total + 1, keys: [...st.keys, (e.data as { key: string }).key] } : st),
      tables: [{ name: 'test_seen', columns: ['key', 'value'], keyColumns: 1, entities: (st) => ({ total: st.total }), toRow: (k, v) => [k, v as number] }],
      view: { name: 'seen-view', of: (st) => ({ total: st.total, keys: [] }) },
    };
    const store = ProjectionStore.open(join(dir, 'projections.db'), [viewed], { snapshotEvery: 10 });
    store.catchUp(log.iterateAll(1));
    store.close();
    const db = new Database(join(dir, 'projections.db'));
    const positions = (name: string): number[] => db.prepare('SELECT position FROM snapshots WHERE projection = ? ORDER BY position').pluck().all(name) as number[];
    // 333 events, a boundary every 10, 100 or more past the last boundary: none at the head at close.
    expect(positions('seen'), 'the full state: the newest boundary').toEqual([330]);
    expect(positions('seen-view'), 'the view: every 4th boundary, then the newest two').toEqual([40, 80, 120, 160, 200, 240, 280, 320, 330]);
    const fold = (p: number): Seen => log.readAllSync({ from: 1, limit: p }).reduce(viewed.evolve, viewed.initialState);
    const snapshots = new SqliteSnapshotStore(db);
    for (const p of [1, 9, 10, 39, 41, 157, 300, 321, 333]) {
      const at = stateAt((from, to) => log.readAllSync({ from, limit: to - from + 1 }), viewed, p, snapshots);
      // From a view snapshot the keys before it are not there (what the view drops); the count is the fold's.
      expect(at.state.total, `total at ${p}`).toBe(fold(p).total);
      expect(at.state.keys, `keys at ${p}, folded from ${at.fromSnapshot}`).toEqual(fold(p).keys.slice(at.fromSnapshot));
    }
    db.close();
    const reopened = ProjectionStore.open(join(dir, 'projections.db'), [viewed], { snapshotEvery: 10 });
    expect(reopened.resumeFrom(), 'restored from the newest full snapshot').toBe(331);
    reopened.catchUp(log.iterateAll(reopened.resumeFrom()));
    expect(reopened.state<Seen>('seen')).toEqual(fold(333));
    reopened.close();
    void log.close();
  });
});
