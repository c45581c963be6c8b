/**
 * Decision 0051: the viewer's event index is kept in projections.db by the projection store, and
 * the viewer lists from it up to a position the log confirms, with the events after it read from
 * the log. Checked against an oracle written here from the events alone (the rows, the filters,
 * the page, the marks, the cumulative spend), for every cut between what the store wrote and what
 * the viewer read, on the golden logs; an index of another log is not taken; a row changed on disk
 * is named by `verify`'s comparison (ProjectionStore.dumpEventIndex against a rebuild).
 */
import fc from 'fast-check';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../src/events/envelope.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { allProjections } from '../src/projections/all-projections.js';
import { marksOf, nodesOf, spendOf, textOf } from '../src/projections/event-index-rows.js';
import { EventList, openStoredIndex } from '../src/adapters/ui/event-list.js';
import { sampleMarks, sampleSpend } from '../src/adapters/ui/event-index.js';
import { ROOT, tempDir } from './support/cli.js';

const root = tempDir('longbuild-event-list-');
afterAll(() => rmSync(root, { recursive: true, force: true }));

function load(name: string): StoredEvent[] {
  return readFileSync(join(ROOT, 'test', 'fixtures', 'logs', `${name}.ndjson`), 'utf8').trim().split('\n').map((l, i) => {
    const e = JSON.parse(l);
    // Usage on every finished attempt, so the spend line has points (the fold and the index read only the links between hashes).
    const data = e.type === 'AttemptFinished' ? { ...e.data, usage: { inputTokens: 1000 + i, outputTokens: 7 * i, costUsd: 0.01 * (i % 5) } } : e.data;
    // Every seventh time in another form than the host writes (no milliseconds): the index keeps it as text.
    const metadata = i % 7 === 3 ? { ...e.metadata, recordedAt: String(e.metadata.recordedAt).replace(/\.\d{3}Z$/, 'Z') } : e.metadata;
    return { position: e.position, streamId: e.streamId, revision: e.revision, type: e.type, schemaVersion: e.schemaVersion, data, metadata, prevHash: e.prevHash, hash: e.hash } as StoredEvent;
  });
}

/** The oracle: what the list is, from the events alone. */
function expected(events: readonly StoredEvent[]) {
  const rows = events.map((e) => ({ position: e.position, type: e.type, at: e.metadata.recordedAt, nodes: nodesOf(e), text: textOf(e, nodesOf(e)) }));
  let usd = 0;
  let tokens = 0;
  const spend = events.flatMap((e) => {
    const s = spendOf(e);
    if (s === null) return [];
    usd += s.usd;
    tokens += s.tokens;
    return [{ position: e.position, usd, tokens }];
  });
  return { rows, marks: events.flatMap(marksOf), spend, types: [...new Set(events.map((e) => e.type))].sort(), completed: events.some((e) => e.type === 'BuildCompleted') };
}

let dbs = 0;
/** A projections database whose store took the first `cut` events; the list adopts it and reads the rest. */
async function listAt(events: readonly StoredEvent[], cut: number, log: readonly StoredEvent[] = events) {
  const path = join(root, `p-${++dbs}.db`);
  const store = ProjectionStore.open(path, allProjections(), { eventIndex: true, snapshotEvery: 0 });
  store.catchUp(events.slice(0, cut));
  store.close();
  const stored = openStoredIndex(path)!;
  const list = new EventList(stored.reader);
  const adopted = await list.adopt(async (p) => log[p - 1]?.hash ?? null);
  for (const e of log.slice(adopted)) list.add(e);
  return { list, adopted, close: stored.close };
}

describe('the viewer lists from the event index kept in projections.db (decision 0051)', () => {
  for (const name of ['orbit', 'helios', 'batch-split']) {
    it(`(property) ${name}: for all cuts and filters, the page, the total, the marks, the spend and the types are the oracle's`, async () => {
      const events = load(name);
      const want = expected(events);
      const types = want.types;
      const nodes = [...new Set(want.rows.flatMap((r) => r.nodes))];
      const words = [...new Set(want.rows.flatMap((r) => `${r.type} ${r.text}`.split(/\s+/)))].filter((w) => w.length > 2);
      await fc.assert(fc.asyncProperty(
        fc.integer({ min: 0, max: events.length }),
        fc.option(fc.constantFrom(...types), { nil: null }),
        fc.option(fc.constantFrom(...nodes), { nil: null }),
        fc.oneof(fc.constant(''), fc.constantFrom(...words).chain((w) => fc.integer({ min: 0, max: w.length - 1 }).map((i) => w.slice(i, i + 4).toUpperCase()))),
        fc.integer({ min: 0, max: events.length + 3 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 12 }),
        async (cut, type, node, query, offset, limit, buckets) => {
          const { list, adopted, close } = await listAt(events, cut);
          try {
            expect(adopted).toBe(cut);
            const q = query.toLowerCase();
            const passing = want.rows.filter((r) => (type === null || r.type === type) && (node === null || r.nodes.includes(node)) && (q === '' || `${r.type} ${r.text}`.toLowerCase().includes(q)));
            expect(list.rows({ type, node, q }, offset, limit)).toEqual({ total: passing.length, rows: passing.slice(offset, offset + limit) });
            expect(list.head).toBe(events.length);
            expect(list.marks()).toEqual(want.marks);
            expect(list.spend().map((p) => ({ ...p, usd: Number(p.usd.toFixed(9)) }))).toEqual(want.spend.map((p) => ({ ...p, usd: Number(p.usd.toFixed(9)) })));
            expect(list.types()).toEqual(want.types);
            expect(list.completed).toBe(want.completed);
            // The timeline as the viewer samples it: the stored part sampled in SQL, then with the tail.
            const timeline = list.timeline(events.length, buckets);
            expect(timeline.marks).toEqual(sampleMarks(want.marks, events.length, buckets));
            expect(timeline.spend.map((p) => p.position)).toEqual(sampleSpend(want.spend, events.length, buckets).map((p) => p.position));
          } finally {
            close();
          }
        },
      ), { numRuns: 40, verbose: true });
    });
  }

  it('the index moves on under a viewer that reads the tail: rows it now holds leave memory, and nothing changes in what is listed', async () => {
    const events = load('orbit');
    const path = join(root, 'moving.db');
    const store = ProjectionStore.open(path, allProjections(), { eventIndex: true, snapshotEvery: 0 });
    store.catchUp(events.slice(0, 10));
    const stored = openStoredIndex(path)!;
    const list = new EventList(stored.reader);
    const hashAt = async (p: number) => events[p - 1]?.hash ?? null;
    expect(await list.adopt(hashAt)).toBe(10);
    for (const e of events.slice(10)) list.add(e);
    const before = list.rows({ type: null, node: null, q: '' }, 0, 1000);
    store.catchUp(events.slice(10, 40));
    expect(await list.adopt(hashAt)).toBe(40);
    expect(list.rows({ type: null, node: null, q: '' }, 0, 1000)).toEqual(before);
    expect((list as unknown as { tail: unknown[] }).tail).toHaveLength(events.length - 40);
    store.close();
    stored.close();
  });

  it('attack: an index written from another log (the same positions, other hashes) is not taken; the list is read from the log whole', async () => {
    const events = load('orbit');
    const other = load('helios');
    const { list, adopted, close } = await listAt(other, other.length, events);
    try {
      expect(adopted).toBe(0);
      const want = expected(events);
      expect(list.rows({ type: null, node: null, q: '' }, 0, 1000)).toEqual({ total: want.rows.length, rows: want.rows });
      expect(list.types()).toEqual(want.types);
    } finally {
      close();
    }
  });

  it('a row changed on disk shows in the dump verify compares with a rebuild', async () => {
    const events = load('orbit');
    const path = join(root, 'tampered.db');
    const store = ProjectionStore.open(path, allProjections(), { eventIndex: true, snapshotEvery: 0 });
    store.catchUp(events);
    const rebuilt = ProjectionStore.open(':memory:', allProjections(), { eventIndex: true, snapshotEvery: 0 });
    rebuilt.rebuild(events);
    expect(store.dumpEventIndex()).toBe(rebuilt.dumpEventIndex());
    expect(store.dumpEventIndex().split('\n').length).toBeGreaterThan(events.length);
    store.db.prepare("UPDATE event_index SET text = 'nothing happened' WHERE position = 20").run();
    expect(store.dumpEventIndex()).not.toBe(rebuilt.dumpEventIndex());
    // Projections are unchanged by the index: the golden dump is the dump without it.
    expect(store.dumpSha256()).toBe(rebuilt.dumpSha256());
    store.close();
    rebuilt.close();
  });
});
