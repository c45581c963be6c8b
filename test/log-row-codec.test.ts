// The compact row form of the SQLite log (decision 0024): what is hashed and read is the same
// as in text rows; only the stored bytes change. The oracle is the same appends stored as text
// rows (the form every earlier version wrote).
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { dictionary1 } from '../src/adapters/log/row-codec.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { SqliteLogReader } from '../src/adapters/log/sqlite-log-reader.js';
import type { NewEvent } from '../src/events/envelope.js';
import { CorruptLogError } from '../src/events/errors.js';
import { logContract, testCatalogue } from './contract/log-contract.js';
import { appendArb } from './support/random-events.js';

const dir = mkdtempSync(join(tmpdir(), 'lb-rowcodec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(dir, `e${n++}.db`);

logContract('SQLite file, text rows only (compactRows: false)', async (catalogue) => {
  const path = fresh();
  return { log: new SqliteEventLog({ path, catalogue, compactRows: false }), cleanup: async () => rmSync(path, { force: true }) };
});

/** How each row is stored: 'compact' (a BLOB body) or 'text'. */
function forms(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT typeof(data) = 'blob' AS c FROM events ORDER BY position").pluck().all() as number[]).map((c) => (c ? 'compact' : 'text'));
  } finally {
    db.close();
  }
}

/** Everything the log's reading side gives, through every read path. */
async function everything(log: SqliteLogReader): Promise<unknown> {
  const head = log.headSync();
  return {
    forwards: log.readAllSync(),
    backwards: log.readAllSync({ direction: 'backwards' }),
    from2: log.readAllSync({ from: 2, limit: 3 }),
    streams: await Promise.all(['s1', 's2', 's3'].map((s) => log.readStream(s))),
    stored: await log.readStoredRows(1, 1000),
    lines: await log.readStoredLines(1, 1000),
    iterated: [...log.iterateAll()],
    hashes: log.readHashesSync(1, 1000),
    head,
    anchor: log.anchorSync(),
    streamRevision: log.streamRevisionSync('s1'),
    chain: await log.verifyChain(),
  };
}

describe('compact rows (decision 0024)', () => {
  it('dictionary 1 is pinned: rows written with it must stay readable, so it never changes', () => {
    expect(createHash('sha256').update(dictionary1()).digest('hex')).toBe('619af3989e1e93bea4c5baf08ea54e70fc0bd6afab3ee4d7a597daa31e3052da');
  });

  it('R-2 (property) for all sequences of appends, compact rows read back and hash exactly as text rows do, on every read path, and a log of both forms verifies', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(appendArb, { minLength: 1, maxLength: 12 }), fc.nat(12), async (appends, switchAt) => {
        const textPath = fresh();
        const mixedPath = fresh();
        const text = new SqliteEventLog({ path: textPath, catalogue: testCatalogue, compactRows: false });
        // The mixed log is written by an older version (text rows) up to `switchAt`, then by this one.
        let mixed = new SqliteEventLog({ path: mixedPath, catalogue: testCatalogue, compactRows: false });
        try {
          for (const [i, a] of appends.entries()) {
            if (i === switchAt) {
              await mixed.close();
              mixed = new SqliteEventLog({ path: mixedPath, catalogue: testCatalogue });
            }
            expect(mixed.appendSync(a.stream, a.events, 'any')).toEqual(text.appendSync(a.stream, a.events, 'any'));
          }
          const expectedForms = appends.flatMap((a, i) => a.events.map(() => (i >= switchAt ? 'compact' : 'text')));
          expect(forms(mixedPath)).toEqual(expectedForms);
          expect(await everything(mixed)).toEqual(await everything(text));
          const reader = new SqliteLogReader({ path: mixedPath });
          expect(await everything(reader)).toEqual(await everything(text));
          await reader.close();
          expect((await mixed.verifyChain()).ok).toBe(true);
        } finally {
          await text.close();
          await mixed.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a controller-shaped log (random SHA-256s in every event) stores under 70 % of the bytes as compact rows; bulk appends stay text', async () => {
    const sha = (i: number) => createHash('sha256').update(String(i)).digest('hex');
    const step = (i: number): NewEvent[] => [
      { type: 'TestAdded', data: { key: `m${i % 50}-n${i % 20}`, n: i, label: sha(i) }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z', causationId: `m${i % 50}-n${i % 20}.1`, graph: { revision: i, sha256: sha(i + 1) } } },
      { type: 'TestTagged', data: { tag: sha(i + 2) }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z', causationId: `m${i % 50}-n${i % 20}.1` } },
    ];
    const sizes: number[] = [];
    for (const compactRows of [false, true]) {
      const path = fresh();
      const log = new SqliteEventLog({ path, catalogue: testCatalogue, compactRows, synchronous: 'NORMAL' });
      for (let i = 0; i < 2000; i++) log.appendSync('build-b-0123456789abcdef', step(i), 'any');
      log.db.pragma('wal_checkpoint(TRUNCATE)');
      await log.close();
      sizes.push(statSync(path).size);
    }
    expect(sizes[1]!).toBeLessThan(sizes[0]! * 0.7);
    const bulk = fresh();
    const log = new SqliteEventLog({ path: bulk, catalogue: testCatalogue, parallelAppend: false });
    log.appendSync('s', Array.from({ length: 64 }, (_, i) => step(i)[1]!), 'no-stream');
    log.appendSync('s', step(1), 'any');
    await log.close();
    expect(forms(bulk)).toEqual([...Array(64).fill('text'), 'compact', 'compact']);
  });

  it('R-4 a compact body that does not decode, or names an unknown codec, or is empty: reads refuse in one line naming the position, verify names it', async () => {
    for (const [body, problem] of [[Buffer.from([1, 0xff, 0xff, 0xff]), /stored row body does not decode/], [Buffer.from([7, 1, 2, 3]), /has codec 7, which this longbuild cannot read \(a newer version wrote it: upgrade\)/], [Buffer.alloc(0), /stored row body is empty/]] as const) {
      const path = fresh();
      const log = new SqliteEventLog({ path, catalogue: testCatalogue });
      for (let i = 0; i < 3; i++) log.appendSync('s1', [{ type: 'TestAdded', data: { key: 'a', n: i }, metadata: { recordedAt: 't' } }], 'any');
      log.db.prepare('UPDATE events SET data = ? WHERE position = 2').run(body);
      expect(() => log.readAllSync()).toThrow(CorruptLogError);
      try {
        log.readAllSync();
      } catch (err) {
        expect((err as Error).message).toMatch(/^corrupt log at position 2: /);
        expect((err as Error).message).toMatch(problem);
        expect((err as Error).message.split('\n')).toHaveLength(1);
      }
      expect(log.readAllSync({ from: 3 })).toHaveLength(1); // the rows around it still read
      const report = log.verifyChainSync();
      expect(report.ok).toBe(false);
      expect(report.problems[0]).toMatchObject({ position: 2 });
      expect(report.problems[0]!.problem).toMatch(problem);
      await log.close();
    }
  });
});

describe('stream ids, types and previous hashes stored by reference (decision 0034)', () => {
  /** Each row's stored stream id, type and previous hash, as SQLite holds them. */
  function storedColumns(path: string): { stream: string; type: string; prev: string }[] {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare("SELECT typeof(stream_id) || ':' || length(stream_id) AS stream, typeof(type) || ':' || length(type) AS type, typeof(prev_hash) || ':' || length(prev_hash) AS prev FROM events ORDER BY position").all() as { stream: string; type: string; prev: string }[];
    } finally {
      db.close();
    }
  }

  it('a compact row stores its stream id and type as a one-byte key, each name once in row_names, and its previous hash not at all (the first row excepted)', async () => {
    const path = fresh();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    for (let i = 0; i < 6; i++) log.appendSync(i % 2 === 0 ? 's1' : 's2', [{ type: i % 3 === 0 ? 'TestNoted' : 'TestTagged', data: i % 3 === 0 ? {} : { tag: 'x' }, metadata: { recordedAt: 't' } }], 'any');
    expect(storedColumns(path)).toEqual(Array.from({ length: 6 }, (_, i) => ({ stream: 'blob:1', type: 'blob:1', prev: i === 0 ? 'blob:32' : 'blob:0' })));
    expect(log.db.prepare('SELECT name FROM row_names ORDER BY id').pluck().all()).toEqual(['s1', 'TestNoted', 's2', 'TestTagged']);
    expect(log.readAllSync().map((e) => [e.streamId, e.type])).toEqual(Array.from({ length: 6 }, (_, i) => [i % 2 === 0 ? 's1' : 's2', i % 3 === 0 ? 'TestNoted' : 'TestTagged']));
    expect(log.verifyChainSync().ok).toBe(true);
    await log.close();
  });

  it('an append that fails after naming a new type adds no name: the next appends key their names afresh, and every row reads back (the rolled-back key is not reused)', async () => {
    const path = fresh();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    log.appendSync('s1', [{ type: 'TestNoted', data: {}, metadata: { recordedAt: 't' } }], 'any');
    // TestTagged is keyed before the second event fails validation: the append rolls back whole.
    expect(() => log.appendSync('s1', [{ type: 'TestTagged', data: { tag: 'x' }, metadata: { recordedAt: 't' } }, { type: 'TestTagged', data: [1, 2], metadata: { recordedAt: 't' } }], 'any')).toThrow(/TestTagged/);
    log.appendSync('s1', [{ type: 'TestUntagged', data: { tag: 'x' }, metadata: { recordedAt: 't' } }], 'any');
    log.appendSync('s1', [{ type: 'TestTagged', data: { tag: 'y' }, metadata: { recordedAt: 't' } }], 'any');
    await log.close();
    const reader = new SqliteLogReader({ path });
    expect(reader.readAllSync().map((e) => e.type)).toEqual(['TestNoted', 'TestUntagged', 'TestTagged']);
    expect((await reader.verifyChain()).ok).toBe(true);
    await reader.close();
  });

  it('a log from before row_names (text rows, no table) is read as it is, and the first writer to open it adds the table and compact rows after the text ones', async () => {
    const path = fresh();
    const old = new SqliteEventLog({ path, catalogue: testCatalogue, compactRows: false });
    old.appendSync('s1', [{ type: 'TestNoted', data: {}, metadata: { recordedAt: 't' } }, { type: 'TestTagged', data: { tag: 'x' }, metadata: { recordedAt: 't' } }], 'any');
    old.db.exec('DROP TABLE row_names');
    await old.close();
    const reader = new SqliteLogReader({ path, readonly: true });
    expect(reader.readAllSync().map((e) => e.type)).toEqual(['TestNoted', 'TestTagged']);
    expect(reader.streamRevisionSync('s1')).toBe(1);
    await reader.close();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    log.appendSync('s1', [{ type: 'TestTagged', data: { tag: 'y' }, metadata: { recordedAt: 't' } }], 1);
    expect(storedColumns(path).map((c) => c.stream)).toEqual(['text:2', 'text:2', 'blob:1']);
    expect(log.readAllSync().map((e) => [e.revision, e.type])).toEqual([[0, 'TestNoted'], [1, 'TestTagged'], [2, 'TestTagged']]);
    expect(log.streamRevisionSync('s1')).toBe(2);
    expect(log.verifyChainSync().ok).toBe(true);
    await log.close();
  });

  it('R-4 a key row_names does not hold, or a row whose predecessor is gone: reads refuse in one line naming the position, verify names it', async () => {
    for (const [edit, problem, verifyProblem = problem] of [
      ['UPDATE events SET type = x\'09\' WHERE position = 2', /stored name key 9 is not in row_names/],
      ['UPDATE events SET stream_id = x\'0001\' WHERE position = 2', /stored name key is not a key/],
      ['DELETE FROM row_names WHERE name = \'s1\'', /stored name key 1 is not in row_names/],
      ['DELETE FROM events WHERE position = 1', /at position 2: the row before it, whose hash its previous hash is, is missing/, /event missing: expected position 1/],
    ] as const) {
      const path = fresh();
      const log = new SqliteEventLog({ path, catalogue: testCatalogue });
      for (let i = 0; i < 3; i++) log.appendSync('s1', [{ type: 'TestAdded', data: { key: 'a', n: i }, metadata: { recordedAt: 't' } }], 'any');
      log.db.exec(edit);
      await log.close();
      const reader = new SqliteLogReader({ path });
      let message = '';
      try {
        reader.readAllSync({ from: 2 });
      } catch (err) {
        expect(err).toBeInstanceOf(CorruptLogError);
        message = (err as Error).message;
      }
      expect(message).toMatch(/^corrupt log at position \d: /);
      expect(message).toMatch(problem);
      expect(message.split('\n')).toHaveLength(1);
      const report = await reader.verifyChain();
      expect(report.ok).toBe(false);
      expect(report.problems[0]!.problem).toMatch(verifyProblem);
      await reader.close();
    }
  });
});
