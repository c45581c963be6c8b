import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../src/events/errors.js';
import { openEventLog } from '../src/adapters/log/open-log.js';
import { EventStoreEventLog } from '../src/adapters/log/eventstore-log.js';
import { PostgresEventLog } from '../src/adapters/log/postgres-log.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { EventStoreStreamsDouble } from './doubles/eventstore-streams-double.js';
import { freshSchema, pgUrl, tick, tickCatalogue } from './support/pg.js';

const url = pgUrl('open-log.test.ts');
const dir = mkdtempSync(join(tmpdir(), 'lb-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('openEventLog selects the log backend from config', () => {
  it('sqlite (default) and sqlite:PATH open the embedded log', async () => {
    const a = await openEventLog('sqlite', { defaultSqlitePath: join(dir, 'a.db'), catalogue: tickCatalogue });
    const b = await openEventLog(`sqlite:${join(dir, 'b.db')}`, { catalogue: tickCatalogue });
    expect(a).toBeInstanceOf(SqliteEventLog);
    expect(b).toBeInstanceOf(SqliteEventLog);
    await b.append('s', [tick(1)], 'no-stream');
    expect((await b.verifyChain()).ok).toBe(true);
    await a.close();
    await b.close();
  });

  for (const bad of ['mysql://x', 'postgres:', 'postgres:http://h/db', 'eventstore:', 'eventstore:tcp://h:1113', 'sqlite:', 'sqlite', 'S3:bucket']) {
    it(`refuses ${JSON.stringify(bad)} with a ValidationError naming the accepted forms`, async () => {
      const err = await openEventLog(bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(/postgres:postgres:\/\/.*eventstore:esdb:\/\//);
    });
  }

  it('never echoes a password', async () => {
    const err = (await openEventLog('postgres:mysql://u:s3cret@h/db').catch((e: unknown) => e)) as Error;
    expect(err.message).not.toContain('s3cret');
  });

  it('eventstore:URL?stream= opens the EventStoreDB adapter on that stream (against the DOUBLE)', async () => {
    const double = new EventStoreStreamsDouble();
    const esdbUrl = await double.start();
    try {
      const log = await openEventLog(`eventstore:${esdbUrl}&stream=build-42`, { catalogue: tickCatalogue });
      expect(log).toBeInstanceOf(EventStoreEventLog);
      expect((log as EventStoreEventLog).stream).toBe('build-42');
      await log.append('s', [tick(1)], 'no-stream');
      expect(await log.head()).toMatchObject({ position: 1 });
      await log.close();
    } finally {
      await double.stop();
    }
  });

  it.skipIf(!url)('postgres:URL?schema= opens the PostgreSQL adapter in that schema', async () => {
    const schema = freshSchema('open');
    const log = await openEventLog(`postgres:${url}?schema=${schema}`, { catalogue: tickCatalogue });
    try {
      expect(log).toBeInstanceOf(PostgresEventLog);
      expect((log as PostgresEventLog).schema).toBe(schema);
      await log.append('s', [tick(1)], 'no-stream');
      expect(await log.head()).toMatchObject({ position: 1 });
    } finally {
      await log.close();
      await PostgresEventLog.dropSchema(url!, schema);
    }
  });
});
