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
import { catchUpFromLog } from '../src/adapters/log/paging.js';
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
});
