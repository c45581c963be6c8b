import { afterEach, describe, expect, it } from 'vitest';
import { ConcurrencyError, ValidationError } from '../src/events/errors.js';
import { PostgresEventLog } from '../src/adapters/log/postgres-log.js';
import { logContract } from './contract/log-contract.js';
import { freshPgLog, pgUrl, tick, tickCatalogue } from './support/pg.js';

const url = pgUrl('postgres-log.test.ts');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function newLog(): Promise<PostgresEventLog> {
  const { log, cleanup } = await freshPgLog(url!, tickCatalogue);
  cleanups.push(cleanup);
  return log;
}

describe.skipIf(!url)('PostgreSQL (LONGBUILD_PG_URL)', () => {
  logContract('PostgreSQL', (catalogue) => freshPgLog(url!, catalogue));
});

describe.skipIf(!url)('PostgreSQL event log (adapter specifics)', () => {
  it('R-2 positions are global and contiguous across streams; revisions per stream', async () => {
    const log = await newLog();
    await log.append('a', [tick(1), tick(2)], 'no-stream');
    await log.append('b', [tick(3)], 'no-stream');
    const r = await log.append('a', [tick(4)], 1);
    expect(r).toMatchObject({ position: 4, nextRevision: 2 });
    const all = await log.readAll();
    expect(all.map((e) => [e.position, e.streamId, e.revision])).toEqual([[1, 'a', 0], [2, 'a', 1], [3, 'b', 0], [4, 'a', 2]]);
    expect((await log.readAll({ direction: 'backwards', from: 3, limit: 2 })).map((e) => e.position)).toEqual([3, 2]);
    expect((await log.readStream('a', { from: 1 })).map((e) => e.revision)).toEqual([1, 2]);
    expect((await log.readStream('a', { direction: 'backwards', limit: 1 })).map((e) => e.position)).toEqual([4]);
    expect(await log.head()).toEqual({ position: 4, hash: all[3]!.hash });
    expect(await log.streamRevision('b')).toBe(0);
    expect(await log.streamRevision('nope')).toBe(-1);
    expect((await log.verifyChain()).ok).toBe(true);
  });

  it('R-3 a stale expected revision is a ConcurrencyError and writes nothing', async () => {
    const log = await newLog();
    await log.append('a', [tick(1)], 'no-stream');
    await expect(log.append('a', [tick(2)], 'no-stream')).rejects.toBeInstanceOf(ConcurrencyError);
    await expect(log.append('a', [tick(2)], 5)).rejects.toBeInstanceOf(ConcurrencyError);
    expect((await log.head())?.position).toBe(1);
  });

  it('R-28 an invalid event refuses the whole batch before touching storage', async () => {
    const log = await newLog();
    await expect(log.append('a', [tick(1), { type: 'Nope', data: {}, metadata: { recordedAt: 'x' } }], 'any')).rejects.toBeInstanceOf(ValidationError);
    await expect(log.append('a', [{ type: 'Tick', data: { x: Number.NaN }, metadata: { recordedAt: 'x' } }], 'any')).rejects.toBeInstanceOf(ValidationError);
    expect(await log.head()).toBeNull();
  });

  const tampers: Array<[string, string, number]> = [
    ['an edited data byte', `UPDATE events SET data = replace(data, '"n":3', '"n":7') WHERE position = 3`, 3],
    ['a removed event', `DELETE FROM events WHERE position = 2`, 2],
    ['a truncated tail', `DELETE FROM events WHERE position = 5`, 5],
    ['two reordered events', `UPDATE events SET position = 1000 WHERE position = 2; UPDATE events SET position = 2 WHERE position = 3; UPDATE events SET position = 3 WHERE position = 1000`, 2],
    ['non-canonical bytes', `UPDATE events SET metadata = replace(metadata, ':', ': ') WHERE position = 4`, 4],
  ];
  for (const [what, sql, position] of tampers) {
    it(`R-4 verify names the first bad position after ${what}`, async () => {
      const log = await newLog();
      await log.append('a', [tick(1), tick(2), tick(3)], 'no-stream');
      await log.append('b', [tick(4), tick(5)], 'no-stream');
      expect((await log.verifyChain()).ok).toBe(true);
      await log.query(sql);
      const report = await log.verifyChain();
      expect(report.ok).toBe(false);
      expect(report.problems[0]?.position).toBe(position);
    });
  }

  it('R-4 verify walks more than one page', async () => {
    const log = await newLog();
    const batch = Array.from({ length: 6000 }, (_, i) => tick(i));
    await log.append('big', batch, 'no-stream');
    await log.append('big', [tick(-1)], 5999);
    const report = await log.verifyChain();
    expect(report).toMatchObject({ ok: true, events: 6001 });
    await log.query(`UPDATE events SET data = '{"n":0}' WHERE position = 5500`);
    expect((await log.verifyChain()).problems[0]?.position).toBe(5500);
  });

  it('refuses a schema name that would need quoting', () => {
    expect(() => new PostgresEventLog({ url: url!, schema: 'x"; DROP TABLE y' })).toThrow(ValidationError);
  });
});
