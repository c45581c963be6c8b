import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { SqliteLogReader } from '../src/adapters/log/sqlite-log-reader.js';
import { readLogEvents } from '../src/adapters/app/log-reading.js';
import { testCatalogue } from './contract/test-catalogue.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const TYPES: readonly string[] = ['TestA', 'TestB', 'TestC'];

describe('log --tail reads from the end (decision 0053)', () => {
  it('for all logs, --from, --type sets, N and page sizes, the last N events equal the last N of a forward read (real SQLite log, reading side)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lb-tail-'));
    dirs.push(dir);
    let made = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...TYPES), { maxLength: 60 }),
        fc.integer({ min: 1, max: 70 }),
        fc.option(fc.subarray([...TYPES], { minLength: 1 }), { nil: null }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 1, max: 9 }),
        async (types, from, only, n, page) => {
          const path = join(dir, `log-${made++}.db`);
          const writer = new SqliteEventLog({ path, catalogue: testCatalogue });
          if (types.length > 0) writer.appendSync('s', types.map((type, i) => ({ type, data: { i }, metadata: { recordedAt: '2026-01-01T00:00:00Z' } })), 'no-stream');
          await writer.close();
          // The oracle: every event read forwards, kept by hand.
          const oracleLog = new SqliteLogReader({ path });
          const everything = oracleLog.readAllSync({ from: 1 });
          await oracleLog.close();
          const matching = everything.filter((e) => e.position >= from && (only === null || only.includes(e.type)));
          const want = n === 0 ? [] : matching.slice(-n);
          const got = [...(await readLogEvents(new SqliteLogReader({ path }), { from, types: only === null ? null : new Set(only), tail: n }, page))];
          expect(got.map((e) => [e.position, e.type, e.hash])).toEqual(want.map((e) => [e.position, e.type, e.hash]));
        },
      ),
      { numRuns: 120, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31), verbose: 1 },
    );
  });
});
