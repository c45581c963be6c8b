import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CorruptLogError, ValidationError } from '../src/events/errors.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { transferLog } from '../src/adapters/log/transfer.js';
import { freshPgLog, pgUrl, tick, tickCatalogue } from './support/pg.js';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

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
    expect(report).toEqual({ events: 60, headHash: (await source.head())!.hash, resumedAt: 0 });
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

  it('R-4 an interrupted copy (a prefix of the source in the target) is resumed from its head; a target holding another log is refused', async () => {
    const source = sqliteLog();
    await fill(source, 7);
    const target = sqliteLog();
    await target.importVerbatim((await source.readAll()).slice(0, 3)); // what a copy killed after its first page leaves
    const report = await transferLog(source, target, { pageSize: 2 });
    const all = (await source.readAll()).length;
    expect(report).toMatchObject({ events: all, resumedAt: 3, headHash: (await source.head())!.hash });
    expect(await target.readAll()).toEqual(await source.readAll());
    // Done already: nothing more to copy, same head.
    expect(await transferLog(source, target)).toMatchObject({ events: all, resumedAt: all });
    // Another log's events are not a prefix of this one: refused, nothing changes.
    const other = sqliteLog();
    await fill(other, 1);
    await other.append('x', [tick(99)], 'any');
    const before = await other.readAll();
    await expect(transferLog(source, other)).rejects.toThrow(/transfer target is not empty and is not a copy of this log \(its head, position 3/);
    expect(await other.readAll()).toEqual(before);
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
      // Byte-identical stored texts, not just equal values (SQLite's compact rows decoded, decision 0024).
      const pgRows = (await target.query('SELECT data, metadata, hash FROM events ORDER BY position')) as Array<Record<string, string>>;
      const sqliteRows = (await source.readStoredRows(1, 1000)).map((r) => ({ data: r.dataJson, metadata: r.metadataJson, hash: r.hash }));
      expect(sqliteRows).toHaveLength(400);
      expect(pgRows).toEqual(sqliteRows);
      // And back again: PostgreSQL → SQLite.
      const back = sqliteLog();
      expect((await transferLog(target, back)).headHash).toBe(report.headHash);
    });
  });
});

describe('longbuild export after an interrupted export (issue 17, fault 7)', () => {
  it('R-4 a partial copy left in the target is resumed, not refused forever; the build then runs on the new log', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run', '--max-steps', '6'], { cwd: repo });
    const path = join(tempDir('lb-export-'), 'copy.db');
    // What an export killed after its first page leaves: a prefix of the build's log.
    const source = new SqliteEventLog({ path: join(repo, '.longbuild', 'events.db'), catalogue: tickCatalogue });
    const partial = new SqliteEventLog({ path, catalogue: tickCatalogue });
    await partial.importVerbatim((await source.readAll()).slice(0, 4));
    await partial.close();
    await source.close();
    const out = runCli(['export', '--to', `sqlite:${path}`, '--switch'], { cwd: repo });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^exported \d+ events to sqlite:.*\(an interrupted copy held the first 4; copying went on from there\)\nthe build now uses this log\n$/);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });
});
