/**
 * The SQLite log's writer thread (docs/decisions/0005): big appends are stored by a second
 * thread on its own connection while the appending thread validates and hashes. It must be
 * invisible: the same rows, the same refusals, the same atomicity as an in-thread append.
 * Real SQLite files, a real worker thread; the SIGKILL and two-process cases are in
 * controller-faults.test.ts and log-concurrency.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import type { NewEvent } from '../src/events/envelope.js';
import { ConcurrencyError, ValidationError } from '../src/events/errors.js';
import { logContract, testCatalogue } from './contract/log-contract.js';
import { appendArb } from './support/random-events.js';
import { rows as storedRows } from './support/rewrite-log.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'lb-writer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshPath = () => join(dir, `events-${n++}.db`);

// Every append, even of one event, goes through the writer thread.
logContract('SQLite file, rows stored by the writer thread', async (catalogue) => {
  const path = freshPath();
  return { log: new SqliteEventLog({ path, catalogue, parallelAppend: 1 }), cleanup: async () => rmSync(path, { force: true }) };
});

const meta = { recordedAt: '2026-01-01T00:00:00Z' };
const many = (count: number, from = 0): NewEvent[] =>
  Array.from({ length: count }, (_, i) => ({ type: 'TestAdded', data: { key: `k${(from + i) % 7}`, n: from + i, pad: 'p'.repeat((from + i) % 50) }, metadata: meta }));

/** Every stored row as text (a compact row decoded: the thread stores text rows, small appends in-thread compact ones) and the anchor. */
function rowsOf(path: string): unknown[] {
  const db = new Database(path, { readonly: true });
  try {
    return [...storedRows(path), ...db.prepare('SELECT * FROM chain_head').raw(true).all()];
  } finally {
    db.close();
  }
}

/** A fresh log (thread for batches of 10+) whose writer thread fails to start (LONGBUILD_FAULT_WRITER). */
async function withWriterThatCannotStart(check: (log: SqliteEventLog) => void): Promise<void> {
  process.env.LONGBUILD_FAULT_WRITER = 'startup'; // read by the thread as it starts
  const log = new SqliteEventLog({ path: freshPath(), catalogue: testCatalogue, parallelAppend: 10 });
  try {
    check(log);
  } finally {
    delete process.env.LONGBUILD_FAULT_WRITER;
    await log.close();
  }
}

describe('SQLite log writer thread', () => {
  it('R-2 (property) for all sequences of appends, the writer thread stores exactly the rows the in-thread path stores', async () => {
    // Appends of 1..3 random events plus, now and then, a big one; the threshold varies so any
    // mix of the two paths happens within one log.
    const stepArb = fc.oneof({ weight: 4, arbitrary: appendArb }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3000 }).map((count) => ({ stream: 's-big', events: many(count) })) });
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 12 }), fc.constantFrom(1, 2, 3, 1024), async (steps, threshold) => {
        const inThread = freshPath();
        const threaded = freshPath();
        const a = new SqliteEventLog({ path: inThread, catalogue: testCatalogue, parallelAppend: false });
        const b = new SqliteEventLog({ path: threaded, catalogue: testCatalogue, parallelAppend: threshold });
        try {
          for (const step of steps) {
            const ra = a.appendSync(step.stream, step.events, 'any');
            const rb = b.appendSync(step.stream, step.events, 'any');
            expect(rb).toEqual(ra);
          }
          expect(b.verifyChainSync()).toEqual(a.verifyChainSync());
        } finally {
          await a.close();
          await b.close();
        }
        expect(rowsOf(threaded)).toEqual(rowsOf(inThread));
      }),
      { numRuns: 25 },
    );
  });

  it('R-28 a bad event deep in a big batch (after rows were handed over) refuses the whole batch; the thread goes on serving', async () => {
    const path = freshPath();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 1000 });
    try {
      log.appendSync('s', many(1500), 'no-stream');
      const before = rowsOf(path);
      const bad = many(5000, 1500);
      bad[4321] = { type: 'TestAdded', data: { n: Number.NaN }, metadata: meta };
      expect(() => log.appendSync('s', bad, 1499)).toThrow(/event|NaN/);
      expect(() => log.appendSync('s', bad, 1499)).toThrow(ValidationError);
      const unknown = many(3000, 1500);
      unknown[2999] = { type: 'Nope', data: {}, metadata: meta };
      expect(() => log.appendSync('s', unknown, 1499)).toThrow(/unknown event type 'Nope'/);
      expect(rowsOf(path)).toEqual(before);
      // The same thread appends the next good batch where the refused ones would have gone.
      const r = log.appendSync('s', many(2500, 1500), 1499);
      expect(r).toMatchObject({ position: 4000, nextRevision: 3999 });
      expect(log.verifyChainSync()).toMatchObject({ ok: true, events: 4000 });
      expect(log.batchWriterUnavailable).toBeUndefined();
    } finally {
      await log.close();
    }
  });

  it('R-3 a stale expected revision is refused under the thread\'s write lock and writes nothing', async () => {
    const path = freshPath();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 100 });
    const other = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: false });
    try {
      log.appendSync('s', many(200), 'no-stream');
      other.appendSync('s', many(1, 200), 199); // another writer moves the stream on
      const before = rowsOf(path);
      expect(() => log.appendSync('s', many(500, 200), 199)).toThrow(ConcurrencyError);
      expect(rowsOf(path)).toEqual(before);
      expect(log.appendSync('s', many(500, 201), 200).position).toBe(701);
      expect(log.verifyChainSync().ok).toBe(true);
    } finally {
      await log.close();
      await other.close();
    }
  });

  it('R-3 another process commits between the unlocked read and the thread\'s lock: the batch is sealed again after it (\'any\') or refused (a numeric revision)', async () => {
    for (const expected of ['any', 'numeric'] as const) {
      const path = freshPath();
      const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 10 });
      try {
        log.appendSync('s', many(100), 'no-stream');
        // The other process takes the lock, appends 5 events to 's' and commits 400 ms later.
        const holder = spawn(process.execPath, [join(root, 'test/fixtures/hold-and-append.mjs'), join(root, 'dist'), path, 's', '5', '400'], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        holder.stdout.on('data', (d: Buffer) => (out += d.toString()));
        const closed = new Promise((r) => holder.on('close', r));
        while (!out.includes('locked')) await new Promise((r) => setTimeout(r, 5));
        // Read now (the holder's events are not committed): revision 99, head 100. The thread
        // waits for the lock, finds the head at 105 and the batch is stale.
        if (expected === 'any') {
          // 30 hand-overs of 1,024 rows while the thread waits for the lock: the caller stops at
          // 16 in flight until the lock frees and the stale batch is dropped, then seals again.
          const r = log.appendSync('s', many(30_000, 100), 'any');
          expect(r).toMatchObject({ position: 30_105, nextRevision: 30_104 });
          expect(r.events[0]).toMatchObject({ position: 106, revision: 105 });
          expect(log.readAllSync({ from: 101, limit: 5 }).map((e) => e.type)).toEqual(Array(5).fill('TestHeld'));
        } else {
          expect(() => log.appendSync('s', many(3000, 100), 99)).toThrow(ConcurrencyError);
          expect(log.headSync()?.position).toBe(105);
        }
        await closed;
        expect(out).toContain('committed 105');
        expect(log.verifyChainSync().ok).toBe(true);
      } finally {
        await log.close();
      }
    }
  });

  it('a write lock held past the busy timeout fails the append with SQLITE_BUSY (not a silent fallback); the next append goes through the thread', async () => {
    const path = freshPath();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 10, busyTimeoutMs: 100 });
    try {
      log.appendSync('s', many(20), 'no-stream');
      const holder = new Database(path);
      holder.exec('BEGIN IMMEDIATE');
      let error: unknown;
      try {
        log.appendSync('s', many(20, 20), 19);
      } catch (err) {
        error = err;
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
      expect((error as { code?: string }).code).toBe('SQLITE_BUSY');
      expect(log.batchWriterUnavailable).toBeUndefined();
      expect(log.appendSync('s', many(20, 20), 19).position).toBe(40);
      expect(log.verifyChainSync()).toMatchObject({ ok: true, events: 40 });
    } finally {
      await log.close();
    }
  });

  it('an append inside a transaction the caller holds on the log connection stays in-thread (no wait on its own lock)', async () => {
    const path = freshPath();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 1 });
    try {
      const r = log.db.transaction(() => log.appendSync('s', many(50), 'no-stream'))();
      expect(r.position).toBe(50);
      expect(log.verifyChainSync().ok).toBe(true);
    } finally {
      await log.close();
    }
  });

  it('a writer thread that cannot start is given up: the batch and the next ones are appended in-thread, nothing lost or doubled', async () => {
    await withWriterThatCannotStart((log) => {
      expect(log.appendSync('s', many(3000), 'no-stream').position).toBe(3000);
      expect(log.batchWriterUnavailable).toMatch(/refuses to start/);
      expect(log.appendSync('s', many(3000, 3000), 2999).position).toBe(6000);
      expect(log.verifyChainSync()).toMatchObject({ ok: true, events: 6000 });
    });
  });

  it('a writer thread that cannot start, met by a batch that is refused: the refusal is the error, and later batches are appended in-thread', async () => {
    await withWriterThatCannotStart((log) => {
      const bad = many(3000);
      bad[2500] = { type: 'TestAdded', data: { n: Number.POSITIVE_INFINITY }, metadata: meta };
      expect(() => log.appendSync('s', bad, 'no-stream')).toThrow(ValidationError);
      expect(log.appendSync('s', many(3000), 'no-stream').position).toBe(3000);
      expect(log.batchWriterUnavailable).toMatch(/could not start|refuses to start/);
      expect(log.verifyChainSync()).toMatchObject({ ok: true, events: 3000 });
    });
  });

  it('a closed log stops its thread; the file opens again with every batch in it', async () => {
    const path = freshPath();
    const log = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 10 });
    log.appendSync('s', many(3000), 'no-stream');
    log.appendSync('s', many(1), 2999); // in-thread, after a thread batch
    await log.close();
    const again = new SqliteEventLog({ path, catalogue: testCatalogue, parallelAppend: 10 });
    try {
      expect(again.verifyChainSync()).toMatchObject({ ok: true, events: 3001 });
      expect(again.appendSync('s', many(3000, 3001), 3000).position).toBe(6001);
    } finally {
      await again.close();
    }
  });
});
