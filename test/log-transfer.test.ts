import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptLogError, ValidationError } from '../src/events/errors.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { transferLog } from '../src/adapters/log/transfer.js';
import { freshPgLog, pgUrl, tick, tickCatalogue } from './support/pg.js';

const url = pgUrl('log-transfer.test.ts');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function sqliteLog(): SqliteEventLog {
  const dir = mkdtempSync(join(tmpdir(), 'lb-transfer-'));
  const log = new SqliteEventLog({ path: join(dir, 'events.db'), catalogue: tickCatalogue });
  cleanups.push(async () => {
    await log.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return log;
}

async function fill(log: SqliteEventLog, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await log.append(`s${i % 3}`, [tick(i, { label: `é${i}` }), { type: 'Tock', data: { '10': i, '9': 'x' }, metadata: { recordedAt: `t${i}`, causationId: `c${i}` } }], 'any');
  }
}

describe('export/import between log backends', () => {
  it('R-4 SQLite → SQLite keeps positions, revisions, metadata and hashes exactly', async () => {
    const source = sqliteLog();
    await fill(source, 30);
    const target = sqliteLog();
    const report = await transferLog(source, target, { pageSize: 7 });
    expect(report).toEqual({ events: 60, headHash: (await source.head())!.hash });
    expect(await target.readAll()).toEqual(await source.readAll());
    // The copy is a live log: appends continue its chain.
    await target.append('s0', [tick(99)], 'any');
    expect((await target.verifyChain()).ok).toBe(true);
  });

  it('R-4 refuses a non-empty target and a corrupt source, copying nothing', async () => {
    const source = sqliteLog();
    await fill(source, 3);
    const target = sqliteLog();
    await target.append('x', [tick(1)], 'any');
    await expect(transferLog(source, target)).rejects.toBeInstanceOf(ValidationError);
    source.db.prepare(`UPDATE events SET data = '{"n":42}' WHERE position = 2`).run();
    const empty = sqliteLog();
    await expect(transferLog(source, empty)).rejects.toBeInstanceOf(CorruptLogError);
    expect(await empty.head()).toBeNull();
  });

  it('R-4 importVerbatim refuses events that do not link to the head', async () => {
    const source = sqliteLog();
    await fill(source, 2);
    const events = await source.readAll();
    const target = sqliteLog();
    await expect(target.importVerbatim(events.slice(1))).rejects.toThrow(/expected position 1/);
    await expect(target.importVerbatim([{ ...events[0]!, data: { n: 5 } }])).rejects.toThrow(/does not recompute/);
    expect(await target.head()).toBeNull();
  });

  describe.skipIf(!url)('into PostgreSQL', () => {
    it('R-4 a build started on SQLite, imported into PostgreSQL, has the same hash chain', async () => {
      const source = sqliteLog();
      await fill(source, 200);
      const { log: target, cleanup } = await freshPgLog(url!, tickCatalogue);
      cleanups.push(cleanup);
      const report = await transferLog(source, target, { pageSize: 64 });
      expect(report.headHash).toBe((await source.head())!.hash);
      expect(await target.head()).toEqual(await source.head());
      expect(await target.readAll()).toEqual(await source.readAll());
      expect(await target.verifyChain()).toEqual(await source.verifyChain());
      // Byte-identical stored texts, not just equal values.
      const pgRows = (await target.query('SELECT data, metadata, hash FROM events ORDER BY position')) as Array<Record<string, string>>;
      const sqliteRows = source.db.prepare('SELECT data, metadata, hash FROM events ORDER BY position').all();
      expect(pgRows).toEqual(sqliteRows);
      // And back again: PostgreSQL → SQLite.
      const back = sqliteLog();
      expect((await transferLog(target, back)).headHash).toBe(report.headHash);
    });
  });
});
