/**
 * Catching the projection store up from the log a page at a time (`catchUpFromLog`): whether the
 * log ends before what the tables reflect is known only after the last page. A store whose newest
 * snapshot is more than a page behind its tables — a long build's state is snapshotted once per
 * interval and MiB, ~10,000 events apart at 50,000 nodes — was refused as "log truncated" after
 * its first page, and `run`, `step`, `verify` and `show --revision` stopped working on that build.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { catchUpFromLog } from '../src/adapters/log/paging.js';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { buildProjection } from '../src/projections/build-projection.js';
import { evolveBuild, initialBuildState, plainState, type BuildState } from '../src/projections/build-state.js';
import { ROOT } from './support/cli.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { CorruptLogError } from '../src/events/errors.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { testCatalogue } from './contract/test-catalogue.js';
import { counterProjection } from './support/test-projection.js';

const meta = { recordedAt: '2026-01-01T00:00:00Z' };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function logOf(dir: string, name: string, n: number): SqliteEventLog {
  const log = new SqliteEventLog({ path: join(dir, name), catalogue: testCatalogue });
  for (let i = 0; i < n; i++) log.appendSync('s1', [{ type: 'TestAdded', data: { key: `k${i % 5}`, n: i }, metadata: meta }], i === 0 ? 'no-stream' : i - 1);
  return log;
}

describe('catchUpFromLog', () => {
  it('property: a store reopened with no snapshot, its tables at the head, catches up in pages of any size to the same tables; a log shorter than its tables is refused after the last page', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 45 }), fc.integer({ min: 0, max: 39 }), async (n, pageSize, cut) => {
        const dir = mkdtempSync(join(tmpdir(), 'lb-paging-'));
        dirs.push(dir);
        const log = logOf(dir, 'events.db', n);
        const path = join(dir, 'projections.db');
        const first = ProjectionStore.open(path, [counterProjection], { snapshotEvery: 0 });
        await catchUpFromLog(first, log);
        const dump = first.dump();
        first.close();

        // Reopened: nothing to restore from, so the whole log is folded again before anything is written.
        const again = ProjectionStore.open(path, [counterProjection], { snapshotEvery: 0 });
        expect(again.resumeFrom()).toBe(1);
        expect(await catchUpFromLog(again, log, pageSize)).toBe(n);
        expect(again.dump()).toBe(dump);
        again.close();

        // A log that lost its tail: refused, naming the first position missing, whatever the page size.
        const k = Math.min(cut, n - 1);
        const short = logOf(dir, 'short.db', k);
        const third = ProjectionStore.open(path, [counterProjection], { snapshotEvery: 0 });
        const err = await catchUpFromLog(third, short, pageSize).then(() => null, (e: unknown) => e);
        expect(err).toBeInstanceOf(CorruptLogError);
        expect((err as Error).message).toContain(`log truncated: projection ${counterProjection.name} has seen position ${n}, but the log ends at ${k}`);
        third.close();
        await log.close();
        await short.close();
      }),
      { numRuns: 60 },
    );
  });

  it('the build projection restored from a snapshot far behind its tables folds the events between in place, in pages, to exactly the state and tables of the fold from the start; the state it restored is not changed under a later fold', () => {
    const events = readFileSync(join(ROOT, 'test', 'fixtures', 'logs', 'helios.ndjson'), 'utf8').trim().split('\n').map((l) => {
      const e = JSON.parse(l);
      return { position: e.position, streamId: e.streamId, revision: e.revision, type: e.type, schemaVersion: e.schemaVersion, data: e.data, metadata: e.metadata, prevHash: e.prevHash, hash: e.hash } as StoredEvent;
    });
    const plain = (st: BuildState): string => canonicalJson(plainState(st) as unknown as JsonValue);
    const foldTo = (n: number): BuildState => events.slice(0, n).reduce(evolveBuild, initialBuildState);
    const dir = mkdtempSync(join(tmpdir(), 'lb-paging-'));
    dirs.push(dir);
    const path = join(dir, 'projections.db');
    const n = events.length - 6; // the tables stop short of the end: the rest is folded and written after
    // A snapshot at 4 (a boundary), then tables at n written by a store that snapshots nothing.
    const early = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 4 });
    early.catchUp(events.slice(0, 4));
    early.close();
    const first = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 0 });
    first.catchUp(events.slice(4, n));
    const dump = first.dump();
    first.close();
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT position FROM snapshots WHERE projection = 'build'").all()).toEqual([{ position: 4 }]);
    db.close();
    const again = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 0 });
    expect(again.resumeFrom()).toBe(5);
    for (let from = 4; from < n; from += 7) again.catchUp(events.slice(from, Math.min(from + 7, n)), undefined, true);
    again.assertNotTruncated();
    expect(plain(again.state<BuildState>('build'))).toBe(plain(foldTo(n)));
    expect(again.dump()).toBe(dump);
    const atTables = again.state<BuildState>('build');
    const before = plain(atTables);
    again.catchUp(events.slice(n));
    expect(plain(atTables)).toBe(before); // the base of the rows just written, untouched
    expect(plain(again.state<BuildState>('build'))).toBe(plain(foldTo(events.length)));
    const written = again.dump();
    again.rebuild(events);
    expect(again.dump()).toBe(written);
    again.close();

    // No snapshot at all: the fold in place starts from a copy of the initial state, never from the
    // initial state itself (every build's fold starts from that one object).
    const initial = plain(initialBuildState);
    const none = new Database(path);
    none.prepare('DELETE FROM snapshots').run();
    none.close();
    const fresh = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 0 });
    expect(fresh.resumeFrom()).toBe(1);
    fresh.catchUp(events);
    expect(plain(initialBuildState)).toBe(initial);
    expect(plain(fresh.state<BuildState>('build'))).toBe(plain(foldTo(events.length)));
    fresh.close();

    // Tables written from another log (the event at their position has another hash): refused, as a fold by copies does.
    const other = events.map((e) => (e.position === events.length ? { ...e, hash: 'f'.repeat(64) } : e));
    const wipe = new Database(path);
    wipe.prepare('DELETE FROM snapshots').run();
    wipe.close();
    const wrong = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 0 });
    expect(() => wrong.catchUp(other)).toThrow(/projection build was built from a different log/);
    wrong.close();
  });
});
