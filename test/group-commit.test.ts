// Decision 0017: the SQLite log's group commit (hold/sync), the call-mark journal and the
// projections written behind the log — what each promises, checked on real files.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import { computeEventHash, storedBytesHash, type EventMetadata } from '../src/events/envelope.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { FileCallMarks } from '../src/adapters/controller/call-marks.js';
import { sha256Hex } from '../src/events/hash.js';
import { testCatalogue } from './contract/log-contract.js';
import { openBuild } from '../src/adapters/session.js';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

const meta = { recordedAt: '2026-01-01T00:00:00.000Z' };
const ev = (n: number) => ({ type: 'TestA', data: { n }, metadata: meta });
const dirs: string[] = [];
const scratch = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'lb-group-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('SQLite log: hold and sync (group commit)', () => {
  it('held appends are read back by their own log at once, by another connection only after sync, all in one commit', async () => {
    const path = join(scratch(), 'events.db');
    const writer = new SqliteEventLog({ path, catalogue: testCatalogue });
    const reader = new SqliteEventLog({ path, catalogue: testCatalogue, readonly: true });
    writer.hold();
    await writer.append('s-1', [ev(1)], 'no-stream');
    await writer.append('s-1', [ev(2), ev(3)], 0);
    expect((await writer.readAll()).map((e) => e.position)).toEqual([1, 2, 3]);
    expect(await reader.readAll()).toEqual([]);
    writer.sync();
    expect((await reader.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3]);
    expect((await reader.verifyChain()).ok).toBe(true);
    expect(await reader.anchor()).toEqual(await reader.head());
    await reader.close();
    await writer.close();
  });

  it('what was held and not synced is gone after close, as after a crash: the chain and its anchor stay whole', async () => {
    const path = join(scratch(), 'events.db');
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    await log.append('s-1', [ev(1)], 'no-stream'); // not held: durable on its own
    log.hold();
    await log.append('s-1', [ev(2)], 0);
    await log.close();
    const again = new SqliteEventLog({ path, catalogue: testCatalogue });
    expect((await again.readAll()).map((e) => e.position)).toEqual([1]);
    const report = await again.verifyChain();
    expect(report.ok).toBe(true);
    expect((await again.anchor())?.position).toBe(1);
    // The next append continues from what is durable.
    expect((await again.append('s-1', [ev(2)], 0)).position).toBe(2);
    await again.close();
  });

  it('a held append that fails leaves the held ones before it to commit', async () => {
    const path = join(scratch(), 'events.db');
    const log = new SqliteEventLog({ path, catalogue: testCatalogue });
    log.hold();
    await log.append('s-1', [ev(1)], 'no-stream');
    await expect(log.append('s-1', [ev(2)], 5)).rejects.toThrow(); // wrong expected revision
    log.sync();
    await log.close();
    const again = new SqliteEventLog({ path, catalogue: testCatalogue, readonly: true });
    expect((await again.readAll()).map((e) => e.position)).toEqual([1]);
    await again.close();
  });
});

describe('call marks: one journal, flushed per line', () => {
  it('marks and kept outcomes are read back by a new reader (a resumed controller); an unmarked call never started', () => {
    const dir = join(scratch(), 'calls');
    const marks = new FileCallMarks(dir);
    marks.mark('attempt-a', 1);
    marks.keep('attempt-a', 1, { outcome: 'recorded' });
    marks.mark('attempt-b', 2);
    marks.close();
    const resumed = new FileCallMarks(dir);
    expect(resumed.started('attempt-a', 1)).toBe(true);
    expect(resumed.kept('attempt-a', 1)).toEqual({ outcome: 'recorded' });
    expect(resumed.started('attempt-b', 2)).toBe(true);
    expect(resumed.started('attempt-b', 1)).toBe(false);
    expect(resumed.kept('attempt-b', 2)).toBeNull();
    // A kept outcome without a mark (a fork's adopted result) is not a started call.
    resumed.keep('attempt-c', 1, { outcome: 'recorded' });
    expect(resumed.started('attempt-c', 1)).toBe(false);
    expect(resumed.kept('attempt-c', 1)).toEqual({ outcome: 'recorded' });
    resumed.close();
  });

  it('a line torn by a crash is ignored, and cut off before the next mark is written (which then reads back)', () => {
    const dir = join(scratch(), 'calls');
    const marks = new FileCallMarks(dir);
    marks.mark('attempt-a', 1);
    marks.close();
    const journal = join(dir, 'journal');
    const whole = statSync(journal).size;
    appendFileSync(journal, '{"key":"attempt-b","invoc'); // the write a crash cut short
    const reader = new FileCallMarks(dir);
    expect(reader.started('attempt-a', 1)).toBe(true);
    expect(reader.started('attempt-b', 1)).toBe(false);
    reader.close();
    const writer = new FileCallMarks(dir);
    writer.mark('attempt-c', 1);
    writer.close();
    expect(readFileSync(journal, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).key)).toEqual(['attempt-a', 'attempt-c']);
    expect(statSync(journal).size).toBeGreaterThan(whole);
    const after = new FileCallMarks(dir);
    expect(after.started('attempt-c', 1)).toBe(true);
    after.close();
  });

  it('a torn line after lines longer than the read-back window is cut at the last whole line', () => {
    const dir = join(scratch(), 'calls');
    const marks = new FileCallMarks(dir);
    const big = 'x'.repeat(150 * 1024); // one kept outcome spanning several 64 KiB chunks
    marks.keep('attempt-a', 1, { outcome: 'recorded', stdout: big });
    marks.close();
    const journal = join(dir, 'journal');
    appendFileSync(journal, `{"key":"attempt-b","invocation":1,"outcome":{"stdout":"${'y'.repeat(100 * 1024)}`); // torn, no newline
    const writer = new FileCallMarks(dir);
    writer.mark('attempt-c', 1);
    writer.close();
    const reader = new FileCallMarks(dir);
    expect(reader.kept('attempt-a', 1)).toEqual({ outcome: 'recorded', stdout: big });
    expect(reader.kept('attempt-b', 1)).toBeNull();
    expect(reader.started('attempt-c', 1)).toBe(true);
    reader.close();
    expect(readFileSync(journal, 'utf8').split('\n').filter(Boolean)).toHaveLength(2);
  });

  it('forgetting settled calls empties the journal durably: a resumed reader finds no mark, and later marks append and read back (decision 0025)', () => {
    const dir = join(scratch(), 'calls');
    const marks = new FileCallMarks(dir);
    marks.forgetSettled(); // no journal yet: nothing is created
    expect(existsSync(join(dir, 'journal'))).toBe(false);
    marks.mark('attempt-a', 1);
    marks.keep('attempt-a', 1, { outcome: 'recorded' }, { flush: false });
    expect(marks.kept('attempt-a', 1)).toEqual({ outcome: 'recorded' });
    marks.forgetSettled();
    expect(statSync(join(dir, 'journal')).size).toBe(0);
    expect(marks.started('attempt-a', 1)).toBe(false);
    expect(marks.kept('attempt-a', 1)).toBeNull();
    marks.mark('attempt-b', 1);
    marks.close();
    const resumed = new FileCallMarks(dir);
    expect(resumed.started('attempt-a', 1)).toBe(false);
    expect(resumed.started('attempt-b', 1)).toBe(true);
    resumed.close();
  });

  it('a finished build keeps no call outcomes beside its log: the journal is empty at the end, and the build verifies (decision 0025)', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run', '--max-steps', '6'], { cwd: repo });
    const journal = join(repo, '.longbuild', 'calls', 'journal');
    expect(existsSync(journal)).toBe(true);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    // Only its first line is left (it tells an emptied journal from a lost one, issue 45): no mark, no outcome.
    expect(readFileSync(journal, 'utf8')).toBe('{"journal":1}\n');
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('marks of a build from before the journal (a file per mark) are still read', () => {
    const dir = join(scratch(), 'calls');
    const name = sha256Hex(Buffer.from('attempt-old'));
    const marks = new FileCallMarks(dir);
    marks.mark('attempt-new', 1); // creates the directory and the journal
    writeFileSync(join(dir, name), '');
    writeFileSync(join(dir, `${name}.2`), '');
    writeFileSync(join(dir, `${name}.2.returned`), JSON.stringify({ key: 'attempt-old', invocation: 2, outcome: { outcome: 'failed' } }));
    expect(marks.started('attempt-old', 1)).toBe(true);
    expect(marks.started('attempt-old', 2)).toBe(true);
    expect(marks.kept('attempt-old', 2)).toEqual({ outcome: 'failed' });
    expect(marks.kept('attempt-old', 1)).toBeNull();
    marks.close();
  });
});

describe('an event checked from its stored bytes', () => {
  // Independent oracle: computeEventHash canonicalises the whole parsed event; storedBytesHash
  // splices the stored texts into the hashed envelope without parsing them.
  const json: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      fc.string({ unit: 'binary', maxLength: 6 }), fc.integer(), fc.boolean(), fc.constant(null),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(fc.string({ unit: 'binary', maxLength: 4 }), tie('value'), { maxKeys: 4 }),
    ),
  })).value;
  it('for all events stored canonically, the stored-bytes hash is the canonical hash (R-2)', () => {
    fc.assert(fc.property(
      json, fc.dictionary(fc.string({ unit: 'binary', maxLength: 4 }), json, { maxKeys: 3 }),
      fc.string({ unit: 'binary', maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.nat(), fc.nat(), fc.nat({ max: 9 }),
      (data, extra, streamId, type, position, revision, schemaVersion) => {
        const metadata = { ...extra, recordedAt: '2026-01-01T00:00:00.000Z' } as unknown as EventMetadata;
        const prevHash = sha256Hex(`${position}`);
        const oracle = computeEventHash({ position, streamId, revision, type, schemaVersion, data, metadata, prevHash });
        const fast = storedBytesHash({ position, streamId, revision, type, schemaVersion, dataJson: canonicalJson(data), metadataJson: canonicalJson(metadata as unknown as JsonValue), prevHash });
        expect(fast).toBe(oracle);
      },
    ), { numRuns: 300 });
  });

  it('bytes that are not canonical (edited, or re-spaced) do not pass the fast check: they take the full one', () => {
    const data = { b: 1, a: 'x' };
    const row = { position: 1, streamId: 's', revision: 0, type: 'TestA', schemaVersion: 1, dataJson: canonicalJson(data), metadataJson: canonicalJson({ recordedAt: 'r' }), prevHash: sha256Hex('g') };
    const hash = storedBytesHash(row);
    expect(storedBytesHash({ ...row, dataJson: '{"b":1,"a":"x"}' })).not.toBe(hash);
    expect(storedBytesHash({ ...row, dataJson: '{"a":"y","b":1}' })).not.toBe(hash);
  });
});

describe('a build opened for reading', () => {
  it('refuses to step, in one line, and records nothing', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    const s = await openBuild({ repo, reading: true });
    try {
      await expect(s.advance()).rejects.toThrow(/^a build opened for reading does not step/);
      await expect(s.runAll(() => {})).rejects.toThrow(/^a build opened for reading does not step/);
    } finally {
      await s.close();
    }
    expect(cliJson(['status'], { cwd: repo }).position).toBe(1);
  });
});
