import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { SqliteLogReader } from '../src/adapters/log/sqlite-log-reader.js';
import { logContract, testCatalogue } from './contract/log-contract.js';

logContract('SQLite file (synchronous=FULL)', async (catalogue) => {
  const dir = mkdtempSync(join(tmpdir(), 'lb-log-'));
  return { log: new SqliteEventLog({ path: join(dir, 'events.db'), catalogue }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

logContract('SQLite in memory (synchronous=NORMAL)', async (catalogue) => ({
  log: new SqliteEventLog({ path: ':memory:', synchronous: 'NORMAL', catalogue }),
  cleanup: async () => {},
}));

describe('the log opened for reading (decision 0022)', () => {
  it('reads what the writer appended, refuses appends, verifies the chain, and refuses a file without the log\'s tables in one line, creating nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lb-log-read-'));
    try {
      const path = join(dir, 'events.db');
      const writer = new SqliteEventLog({ path, catalogue: testCatalogue });
      await writer.append('s', [{ type: 'TestA', data: { n: 1 }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' } }, { type: 'TestA', data: { n: 2 }, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' } }], 'any');
      const reader = new SqliteLogReader({ path });
      expect((await reader.readAll()).map((e) => e.data)).toEqual((await writer.readAll()).map((e) => e.data));
      expect(await reader.head()).toEqual(await writer.head());
      expect(await reader.verifyChain()).toEqual(await writer.verifyChain());
      await expect(reader.append('s', [], 'any')).rejects.toThrow(/opened for reading/);
      await reader.close();
      await writer.close();
      const other = join(dir, 'other.db');
      new Database(other).exec('CREATE TABLE events (position INTEGER)').close();
      expect(() => new SqliteLogReader({ path: other })).toThrow(/has no chain_head table .*longbuild verify/);
      expect(new Database(other).prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'chain_head'").pluck().get()).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
