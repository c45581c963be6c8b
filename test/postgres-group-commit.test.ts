// Decision 0017, PostgreSQL: held appends (group commit) are sealed in the log object and written
// at sync() in one transaction — checked against a real server: what a second connection sees,
// what a crash (a real SIGKILL of a holding process) leaves, what a writer in between causes, and
// for all sequences of appends and reads, that a held log reads exactly as an unheld one.
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ConcurrencyError } from '../src/events/errors.js';
import { PostgresEventLog } from '../src/adapters/log/postgres-log.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { freshSchema, pgUrl, tick, tickCatalogue } from './support/pg.js';
import { ROOT } from './support/cli.js';

const url = pgUrl('postgres-group-commit.test.ts');
const schemas: string[] = [];
const logs: PostgresEventLog[] = [];
afterEach(async () => {
  for (const l of logs.splice(0)) await l.close();
  for (const s of schemas.splice(0)) await PostgresEventLog.dropSchema(url!, s);
});
async function open(schema?: string): Promise<{ log: PostgresEventLog; schema: string }> {
  const s = schema ?? freshSchema('gc');
  if (schema === undefined) schemas.push(s);
  const log = await PostgresEventLog.open({ url: url!, schema: s, catalogue: tickCatalogue });
  logs.push(log);
  return { log, schema: s };
}
const ns = (events: readonly StoredEvent[]) => events.map((e) => (e.data as { n: number }).n);

describe.skipIf(!url)('PostgreSQL log: hold and sync (group commit)', () => {
  it('held appends are read back by their own log at once, by another connection only after sync, all in one transaction', async () => {
    const { log: writer, schema } = await open();
    const { log: reader } = await open(schema);
    await writer.append('s', [tick(0)], 'no-stream'); // not held: durable on its own
    writer.hold();
    await writer.append('s', [tick(1)], 0);
    await writer.append('t', [tick(2), tick(3)], 'no-stream');
    expect((await writer.readAll()).map((e) => e.position)).toEqual([1, 2, 3, 4]);
    expect(await writer.streamRevision('t')).toBe(1);
    expect((await writer.head())?.position).toBe(4);
    expect(ns(await reader.readAll())).toEqual([0]);
    await writer.sync();
    expect(ns(await reader.readAll())).toEqual([0, 1, 2, 3]);
    expect((await reader.verifyChain()).ok).toBe(true);
    expect(await reader.anchor()).toEqual(await reader.head());
  });

  it('what was held and not synced is gone after close, as after a crash; the next append continues from what is durable', async () => {
    const { log, schema } = await open();
    await log.append('s', [tick(1)], 'no-stream');
    log.hold();
    await log.append('s', [tick(2)], 0);
    await log.close();
    const { log: again } = await open(schema);
    expect(ns(await again.readAll())).toEqual([1]);
    expect((await again.verifyChain()).ok).toBe(true);
    expect((await again.append('s', [tick(2)], 0)).position).toBe(2);
  });

  it('a process killed (SIGKILL) while holding appends leaves none of them; what it synced stays', async () => {
    const { schema } = await open();
    const child = [
      `import { PostgresEventLog } from ${JSON.stringify(`${ROOT}/dist/adapters/log/postgres-log.js`)};`,
      `const log = await PostgresEventLog.open({ url: process.env.PG, schema: process.env.SCHEMA, catalogue: { validate() {}, currentVersion: () => 1 } });`,
      `const t = (n) => ({ type: 'Tick', data: { n }, metadata: { recordedAt: '2025-01-01T00:00:00.000Z' } });`,
      `log.hold(); await log.append('s', [t(1)], 'no-stream'); await log.sync();`,
      `log.hold(); await log.append('s', [t(2)], 0); await log.append('s', [t(3)], 1);`,
      `process.kill(process.pid, 'SIGKILL');`,
    ].join('\n');
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', child], { env: { ...process.env, PG: url!, SCHEMA: schema }, encoding: 'utf8', timeout: 60_000 });
    expect(r.signal, r.stderr).toBe('SIGKILL');
    const { log } = await open(schema);
    expect(ns(await log.readAll())).toEqual([1]);
    expect((await log.verifyChain()).ok).toBe(true);
  });

  it('R-3 a writer that appended between the first held append and sync: sync refuses (ConcurrencyError) and writes nothing of the held batch', async () => {
    const { log: a, schema } = await open();
    const { log: b } = await open(schema);
    await a.append('s', [tick(1)], 'no-stream');
    a.hold();
    await a.append('s', [tick(2)], 0);
    await b.append('other', [tick(99)], 'no-stream'); // moves the log's tail under a's held batch
    await expect(a.sync()).rejects.toBeInstanceOf(ConcurrencyError);
    expect(ns(await b.readAll())).toEqual([1, 99]);
    expect((await b.verifyChain()).ok).toBe(true);
    // The same on the held stream itself.
    a.hold();
    await a.append('s', [tick(3)], 0);
    await b.append('s', [tick(4)], 0);
    await expect(a.sync()).rejects.toBeInstanceOf(ConcurrencyError);
    expect(ns(await b.readAll())).toEqual([1, 99, 4]);
    // A held batch sealed on the tail a's last sync wrote (not read again), moved meanwhile by b.
    a.hold();
    await a.append('s', [tick(5)], 1);
    await a.sync();
    await b.append('other', [tick(100)], 0);
    a.hold();
    await a.append('s', [tick(6)], 2);
    await expect(a.sync()).rejects.toBeInstanceOf(ConcurrencyError);
    expect(ns(await b.readAll())).toEqual([1, 99, 4, 5, 100]);
    expect((await b.verifyChain()).ok).toBe(true);
  });

  it('R-3 two logs sync batches sealed on the same tail at the same time: exactly one is written, the other refused whole; no fork, the chain verifies', async () => {
    for (let round = 0; round < 5; round++) {
      const { log: a, schema } = await open();
      const { log: b } = await open(schema);
      await a.append('s', [tick(0)], 'no-stream');
      a.hold();
      b.hold();
      await a.append('s', [tick(1), tick(2)], 0);
      await b.append('t', [tick(3)], 'no-stream');
      const [ra, rb] = await Promise.allSettled([a.sync(), b.sync()]);
      expect([ra.status, rb.status].sort()).toEqual(['fulfilled', 'rejected']);
      const refused = (ra.status === 'rejected' ? ra : rb) as PromiseRejectedResult;
      expect(refused.reason).toBeInstanceOf(ConcurrencyError);
      const { log: reader } = await open(schema);
      expect(ns(await reader.readAll())).toEqual(ra.status === 'fulfilled' ? [0, 1, 2] : [0, 3]);
      expect((await reader.verifyChain()).ok).toBe(true);
      expect(await reader.anchor()).toEqual(await reader.head());
      // The winner's statement wrote it; the loser's wrote nothing and its transaction refused it.
      expect(a.held.oneStatement + b.held.oneStatement).toBe(1);
      for (const l of logs.splice(0)) await l.close();
      for (const s of schemas.splice(0)) await PostgresEventLog.dropSchema(url!, s);
    }
  }, 60_000);

  it('for all sequences of appends, syncs and reads: a held log reads exactly as an unheld log with the same appends (oracle: the unheld path), and after the last sync another connection sees the same log', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('append' as const), stream: fc.constantFrom('a', 'b'), count: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant('sync' as const) }),
      fc.record({ kind: fc.constant('read' as const), backwards: fc.boolean(), from: fc.integer({ min: 0, max: 12 }), limit: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }), stream: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }) }),
    );
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
      const { log: held, schema } = await open();
      const { log: plain } = await open();
      let n = 0;
      for (const o of ops) {
        if (o.kind === 'append') {
          const events = Array.from({ length: o.count }, () => tick(++n));
          held.hold();
          const r1 = await held.append(o.stream, events, 'any');
          const r2 = await plain.append(o.stream, events, 'any');
          expect(r1.events.map((e) => [e.position, e.revision, e.hash])).toEqual(r2.events.map((e) => [e.position, e.revision, e.hash]));
        } else if (o.kind === 'sync') {
          await held.sync();
        } else {
          const options = { direction: o.backwards ? 'backwards' as const : 'forwards' as const, ...(o.from > 0 ? { from: o.from } : {}), ...(o.limit !== undefined ? { limit: o.limit } : {}) };
          const read = (l: PostgresEventLog) => (o.stream === undefined ? l.readAll(options) : l.readStream(o.stream, options));
          expect((await read(held)).map((e) => e.hash)).toEqual((await read(plain)).map((e) => e.hash));
          expect(await held.readHashes(Math.max(1, o.from), o.limit ?? 100)).toEqual(await plain.readHashes(Math.max(1, o.from), o.limit ?? 100));
          expect(await held.head()).toEqual(await plain.head());
          expect(await held.streamRevision('a')).toBe(await plain.streamRevision('a'));
        }
      }
      await held.sync();
      // Nobody else writes: every batch went in as one statement.
      expect(held.held.oneStatement).toBe(held.held.batches);
      const { log: other } = await open(schema);
      expect((await other.readAll()).map((e) => e.hash)).toEqual((await plain.readAll()).map((e) => e.hash));
      expect((await other.verifyChain()).ok).toBe(true);
      for (const l of logs.splice(0)) await l.close();
      for (const s of schemas.splice(0)) await PostgresEventLog.dropSchema(url!, s);
    }), { numRuns: 25 });
  }, 120_000);
});
