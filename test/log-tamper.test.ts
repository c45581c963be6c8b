import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { testCatalogue } from './contract/test-catalogue.js';
import { appendArb } from './support/random-events.js';

const dir = mkdtempSync(join(tmpdir(), 'lb-tamper-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

type Tamper =
  | { kind: 'edit'; column: 'data' | 'metadata' | 'type' | 'stream_id' | 'hash' | 'prev_hash'; at: number; offset: number }
  | { kind: 'edit-number'; column: 'revision' | 'schema_version'; at: number; delta: number }
  | { kind: 'remove'; at: number }
  | { kind: 'reorder'; a: number; b: number }
  | { kind: 'truncate'; keep: number }
  | { kind: 'rename'; key: number };

const tamperArb: fc.Arbitrary<Tamper> = fc.oneof(
  fc.record({ kind: fc.constant('edit' as const), column: fc.constantFrom('data', 'metadata', 'type', 'stream_id', 'hash', 'prev_hash' as const), at: fc.nat(), offset: fc.nat() }),
  fc.record({ kind: fc.constant('edit-number' as const), column: fc.constantFrom('revision', 'schema_version' as const), at: fc.nat(), delta: fc.constantFrom(-1000, 1000) }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('reorder' as const), a: fc.nat(), b: fc.nat() }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('rename' as const), key: fc.nat() }),
);

/** What `tamper` returns when SQLite refused the change (the log is as it was). */
const NOT_APPLIED = -1;

/** Apply one change with raw SQL, as an attacker or a broken disk would; returns the first bad position. */
function tamper(path: string, total: number, t: Tamper): number {
  const db = new Database(path);
  try {
    switch (t.kind) {
      case 'edit': {
        const at = (t.at % total) + 1;
        const stored = db.prepare(`SELECT ${t.column} FROM events WHERE position = ?`).pluck().get(at) as string | Buffer;
        let edited: string | Buffer;
        if (Buffer.isBuffer(stored) && stored.length === 0) {
          edited = Buffer.from([0]); // a compact row's previous hash is empty (the row before's, decision 0034): a byte appears in it
        } else if (Buffer.isBuffer(stored)) {
          // A compact row (decision 0024): one bit of its deflated body or of a 32-byte hash flips.
          edited = Buffer.from(stored);
          edited[t.offset % edited.length]! ^= 0x01;
        } else if (stored === '') {
          edited = 'x'; // a compact row's metadata column is empty: text appears in it
        } else {
          const chars = [...stored];
          const i = t.offset % chars.length;
          chars[i] = chars[i] === 'x' ? 'y' : 'x'; // one character (byte, for ASCII) changes
          edited = chars.join('');
        }
        try {
          db.prepare(`UPDATE events SET ${t.column} = ? WHERE position = ?`).run(edited, at);
        } catch (err) {
          // A stream key flipped into another stream's, at a revision that stream has: the index refuses the edit, nothing changed.
          if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') return NOT_APPLIED;
          throw err;
        }
        return at;
      }
      case 'edit-number': {
        const at = (t.at % total) + 1;
        db.prepare(`UPDATE events SET ${t.column} = ${t.column} + ? WHERE position = ?`).run(t.delta, at);
        return at;
      }
      case 'remove': {
        const at = (t.at % total) + 1;
        db.prepare('DELETE FROM events WHERE position = ?').run(at);
        return at;
      }
      case 'reorder': {
        const a = (t.a % (total - 1)) + 1;
        const b = a + 1 + (t.b % (total - a));
        db.transaction(() => {
          db.prepare('UPDATE events SET position = -1 WHERE position = ?').run(a);
          db.prepare('UPDATE events SET position = ? WHERE position = ?').run(a, b);
          db.prepare('UPDATE events SET position = ? WHERE position = -1').run(b);
        })();
        return a;
      }
      case 'rename': {
        // A stream id or type stored by key (decision 0034): its name in row_names is edited.
        const ids = db.prepare('SELECT id FROM row_names ORDER BY id').pluck().all() as number[];
        const id = ids[t.key % ids.length]!;
        db.prepare("UPDATE row_names SET name = name || 'x' WHERE id = ?").run(id);
        const key = Buffer.from([id]);
        return db.prepare('SELECT min(position) FROM events WHERE stream_id = ? OR type = ?').pluck().get(key, key) as number;
      }
      case 'truncate': {
        const keep = t.keep % total;
        db.prepare('DELETE FROM events WHERE position > ?').run(keep);
        return keep + 1;
      }
    }
  } finally {
    db.close();
  }
}

describe('R-4 tamper evidence', () => {
  it('R-4 any single change to a stored event (edit a byte, remove, reorder, truncate, rename a stored key) fails verify naming the first bad position, in text rows and compact rows alike', () => {
    let unchanged = 0;
    fc.assert(
      fc.property(fc.array(appendArb, { minLength: 1, maxLength: 8 }), tamperArb, fc.boolean(), (appends, t, compactRows) => {
        const path = join(dir, `e${n++}.db`);
        const log = new SqliteEventLog({ path, synchronous: 'NORMAL', catalogue: testCatalogue, compactRows });
        const appended = appends.flatMap((a) => log.appendSync(a.stream, a.events, 'any').events);
        const total = log.headSync()!.position;
        void log.close();
        fc.pre(t.kind !== 'reorder' || total >= 2);
        fc.pre(t.kind !== 'rename' || compactRows);
        const expected = tamper(path, total, t);
        fc.pre(expected !== NOT_APPLIED);
        const reopened = new SqliteEventLog({ path, catalogue: testCatalogue });
        const report = reopened.verifyChainSync();
        const readBack = report.ok ? reopened.readAllSync() : [];
        void reopened.close();
        if (report.ok) {
          // Only a flip in the unused padding bits at the end of a deflated body changes no event:
          // then every event reads back exactly as it was appended.
          expect(compactRows && t.kind === 'edit' && t.column === 'data').toBe(true);
          expect(readBack).toEqual(appended);
          unchanged += 1;
          return;
        }
        expect(report.problems[0]?.position).toBe(expected);
      }),
      { numRuns: 200 },
    );
    expect(unchanged).toBeLessThan(10);
  });

  it('R-4 an untouched log verifies', () => {
    const path = join(dir, 'clean.db');
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    log.appendSync('s', [{ type: 'TestA', data: { k: 'v' }, metadata: { recordedAt: 't' } }], 'any');
    expect(log.verifyChainSync()).toMatchObject({ ok: true, events: 1, problems: [] });
    void log.close();
  });
});
