import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventCatalogue } from '../../src/events/catalogue.js';
import { computeEventHash, type NewEvent } from '../../src/events/envelope.js';
import { ConcurrencyError, ValidationError } from '../../src/events/errors.js';
import { GENESIS_HASH } from '../../src/events/hash.js';
import type { EventLog } from '../../src/events/event-log.js';
import { testCatalogue } from './test-catalogue.js';

export { testCatalogue };

export interface LogUnderTest {
  readonly log: EventLog;
  cleanup(): Promise<void>;
}

/** Creates a fresh, empty log that validates with `catalogue`. */
export type MakeLog = (catalogue: EventCatalogue) => Promise<LogUnderTest>;

const meta = { recordedAt: '2026-01-01T00:00:00.000Z' };
const ev = (type: string, data: Record<string, unknown> = {}): NewEvent => ({ type, data: data as NewEvent['data'], metadata: meta });

/**
 * The conformance suite every EventLog backend passes (R-1..R-4, R-28): optimistic concurrency,
 * atomic multi-event appends, reads in both directions, the hash chain, and refusals that append
 * nothing. It uses only the port, so it runs unchanged against SQLite, PostgreSQL, EventStoreDB.
 */
export function logContract(name: string, makeLog: MakeLog): void {
  describe(`EventLog contract: ${name}`, () => {
    let subject: LogUnderTest;
    let log: EventLog;
    beforeEach(async () => {
      subject = await makeLog(testCatalogue);
      log = subject.log;
    });
    afterEach(async () => {
      await log.close();
      await subject.cleanup();
    });

    async function expectUnchanged(action: () => Promise<unknown>, errorType: new (...args: never[]) => Error): Promise<void> {
      const before = await log.readAll();
      await expect(action()).rejects.toBeInstanceOf(errorType);
      expect(await log.readAll()).toEqual(before);
    }

    it('R-1 an empty log has no head, no events and a valid chain', async () => {
      expect(await log.head()).toBeNull();
      expect(await log.readAll()).toEqual([]);
      expect(await log.streamRevision('s-1')).toBe(-1);
      expect(await log.readStream('s-1')).toEqual([]);
      const report = await log.verifyChain();
      expect(report).toMatchObject({ ok: true, events: 0, headHash: GENESIS_HASH, problems: [] });
    });

    it("R-3 'no-stream' creates a stream and is refused once it exists, writing nothing", async () => {
      const r = await log.append('s-1', [ev('TestA', { n: 1 })], 'no-stream');
      expect(r).toMatchObject({ nextRevision: 0, position: 1 });
      await expectUnchanged(() => log.append('s-1', [ev('TestA', { n: 2 })], 'no-stream'), ConcurrencyError);
      expect(await log.streamRevision('s-1')).toBe(0);
    });

    it('R-3 a numeric expected revision must equal the stream revision; a conflict writes nothing', async () => {
      await log.append('s-1', [ev('TestA'), ev('TestB')], 'no-stream');
      await expectUnchanged(() => log.append('s-1', [ev('TestA')], 0), ConcurrencyError);
      await expectUnchanged(() => log.append('s-1', [ev('TestA')], 5), ConcurrencyError);
      await expectUnchanged(() => log.append('s-2', [ev('TestA')], 0), ConcurrencyError);
      const r = await log.append('s-1', [ev('TestC')], 1);
      expect(r).toMatchObject({ nextRevision: 2, position: 3 });
      const err = await log.append('s-1', [ev('TestA')], 1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConcurrencyError);
      expect((err as ConcurrencyError).code).toBe('CONCURRENCY');
    });

    it("R-3 'any' appends whatever the stream revision", async () => {
      expect((await log.append('s-1', [ev('TestA')], 'any')).nextRevision).toBe(0);
      expect((await log.append('s-1', [ev('TestA')], 'any')).nextRevision).toBe(1);
    });

    it('R-3 concurrent appends at the same expected revision: exactly one wins, no fork', async () => {
      await log.append('s-1', [ev('TestA')], 'no-stream');
      const results = await Promise.allSettled([0, 1, 2, 3].map((i) => log.append('s-1', [ev('TestRace', { writer: i })], 0)));
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      for (const l of lost) expect(l.reason).toBeInstanceOf(ConcurrencyError);
      expect(await log.readStream('s-1')).toHaveLength(2);
      expect((await log.verifyChain()).ok).toBe(true);
    });

    it('R-2 a multi-event append gets contiguous positions and revisions, sealed in one chain', async () => {
      await log.append('other', [ev('TestA')], 'any');
      const r = await log.append('s-1', [ev('TestA', { i: 0 }), ev('TestB', { i: 1 }), ev('TestC', { i: 2 })], 'no-stream');
      expect(r.position).toBe(4);
      expect(r.nextRevision).toBe(2);
      expect(r.events.map((e) => [e.position, e.revision, e.type])).toEqual([[2, 0, 'TestA'], [3, 1, 'TestB'], [4, 2, 'TestC']]);
      const all = await log.readAll();
      expect(all.map((e) => e.position)).toEqual([1, 2, 3, 4]);
      expect(all.slice(1)).toEqual(r.events);
      let prev = GENESIS_HASH;
      for (const e of all) {
        expect(e.prevHash).toBe(prev);
        const { hash, ...rest } = e;
        expect(hash).toBe(computeEventHash(rest));
        prev = hash;
      }
      expect(await log.head()).toEqual({ position: 4, hash: prev });
    });

    it('R-2 stored data round-trips, schema version defaults to the current one, metadata is kept', async () => {
      const data = { zeta: 1, alpha: { nested: [1, 'two', null, true, { 'é': 0.5 }] }, '𝔸': -3, emoji: '🙂' };
      const m = { recordedAt: '2026-01-02T03:04:05.000Z', causationId: 'c-1', correlationId: 'k-1', extra: { n: 1 } };
      await log.append('s-1', [{ type: 'TestData', data, metadata: m }], 'any');
      const [e] = await log.readAll();
      expect(e).toBeDefined();
      expect(e!.data).toEqual(data);
      expect(e!.metadata).toEqual(m);
      expect(e!.schemaVersion).toBe(1);
      expect(e!.streamId).toBe('s-1');
      expect(e!.revision).toBe(0);
    });

    it('R-2 the hash does not depend on the key order the caller used', async () => {
      await log.append('s-1', [ev('TestA', { a: 1, b: { c: 2, d: 3 } })], 'any');
      await log.append('s-2', [ev('TestA', { b: { d: 3, c: 2 }, a: 1 })], 'any');
      const [x, y] = await log.readAll();
      const rehash = (e: NonNullable<typeof x>) => computeEventHash({ ...e, streamId: 'same', position: 1, revision: 0, prevHash: GENESIS_HASH });
      expect(rehash(x!)).toBe(rehash(y!));
    });

    it('R-1 readAll reads forwards and backwards from a position with a limit', async () => {
      for (let i = 0; i < 5; i++) await log.append(i % 2 ? 'odd' : 'even', [ev('TestA', { i })], 'any');
      const pos = async (o: Parameters<EventLog['readAll']>[0]) => (await log.readAll(o)).map((e) => e.position);
      expect(await pos({})).toEqual([1, 2, 3, 4, 5]);
      expect(await pos({ from: 3 })).toEqual([3, 4, 5]);
      expect(await pos({ from: 2, limit: 2 })).toEqual([2, 3]);
      expect(await pos({ direction: 'backwards' })).toEqual([5, 4, 3, 2, 1]);
      expect(await pos({ direction: 'backwards', from: 4, limit: 2 })).toEqual([4, 3]);
      expect(await pos({ from: 6 })).toEqual([]);
      expect(await pos({ limit: 0 })).toEqual([]);
    });

    it('R-1 readStream reads one stream by revision, forwards and backwards', async () => {
      for (let i = 0; i < 6; i++) await log.append(i % 2 ? 'odd' : 'even', [ev('TestA', { i })], 'any');
      const revs = async (s: string, o?: Parameters<EventLog['readStream']>[1]) => (await log.readStream(s, o)).map((e) => [e.revision, (e.data as { i: number }).i]);
      expect(await revs('odd')).toEqual([[0, 1], [1, 3], [2, 5]]);
      expect(await revs('even', { from: 1 })).toEqual([[1, 2], [2, 4]]);
      expect(await revs('even', { limit: 1 })).toEqual([[0, 0]]);
      expect(await revs('odd', { direction: 'backwards' })).toEqual([[2, 5], [1, 3], [0, 1]]);
      expect(await revs('odd', { direction: 'backwards', from: 1, limit: 1 })).toEqual([[1, 3]]);
      expect(await revs('none')).toEqual([]);
      expect(await log.streamRevision('odd')).toBe(2);
      expect(await log.streamRevision('even')).toBe(2);
    });

    it('R-4 verifyChain walks every event and reports the head hash', async () => {
      await log.append('s-1', [ev('TestA'), ev('TestB')], 'any');
      await log.append('s-2', [ev('TestC')], 'any');
      const head = await log.head();
      expect(await log.verifyChain()).toEqual({ ok: true, events: 3, headHash: head!.hash, problems: [] });
    });

    describe('R-28 invalid input is refused with a clear error and nothing is appended', () => {
      beforeEach(async () => {
        await log.append('s-1', [ev('TestA')], 'no-stream');
      });
      const cases: [string, () => [string, NewEvent[]]][] = [
        ['an unknown event type', () => ['s-1', [ev('Bogus')]]],
        ['NaN in data', () => ['s-1', [ev('TestA', { n: Number.NaN })]]],
        ['Infinity in data', () => ['s-1', [ev('TestA', { n: Number.POSITIVE_INFINITY })]]],
        ['-Infinity nested in data', () => ['s-1', [ev('TestA', { deep: [{ n: Number.NEGATIVE_INFINITY }] })]]],
        ['undefined in data', () => ['s-1', [ev('TestA', { n: undefined })]]],
        ['a non-JSON value (function) in data', () => ['s-1', [ev('TestA', { f: () => 1 })]]],
        ['a Date in data', () => ['s-1', [ev('TestA', { d: new Date(0) })]]],
        ['data that the catalogue refuses', () => ['s-1', [{ type: 'TestA', data: [1, 2], metadata: meta }]]],
        ['metadata without recordedAt', () => ['s-1', [{ type: 'TestA', data: {}, metadata: {} as NewEvent['metadata'] }]]],
        ['metadata with NaN', () => ['s-1', [{ type: 'TestA', data: {}, metadata: { ...meta, x: Number.NaN } }]]],
        ['an unsupported schema version', () => ['s-1', [{ type: 'TestA', schemaVersion: 2, data: {}, metadata: meta }]]],
        ['a missing type', () => ['s-1', [{ data: {}, metadata: meta } as unknown as NewEvent]]],
        ['an invalid stream id', () => ['../etc', [ev('TestA')]]],
        ['an empty batch', () => ['s-1', []]],
        ['one bad event in the middle of a batch', () => ['s-1', [ev('TestA'), ev('TestB', { n: Number.NaN }), ev('TestC')]]],
      ];
      for (const [label, make] of cases) {
        it(`refuses ${label}`, async () => {
          const [stream, events] = make();
          const err = await log.append(stream, events, 'any').catch((e: unknown) => e);
          expect(err).toBeInstanceOf(ValidationError);
          expect((err as ValidationError).code).toBe('VALIDATION');
          expect((err as Error).message.length).toBeGreaterThan(5);
          expect((await log.readAll()).length).toBe(1);
          expect(await log.streamRevision('s-1')).toBe(0);
        });
      }
      it('refuses a non-integer expected revision', async () => {
        await expectUnchanged(() => log.append('s-1', [ev('TestA')], 0.5), ValidationError);
      });
      it('names the offending field for non-canonical numbers', async () => {
        await expect(log.append('s-1', [ev('TestA', { deep: { n: Number.NaN } })], 'any')).rejects.toThrow(/NaN.*deep\.n/);
      });
    });
  });
}
