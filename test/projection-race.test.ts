/**
 * Two processes catching one projections database up at once: a run writes its projections
 * as it appends, and every reading command (`status`, `show`, the viewer of issue 18, `verify`)
 * catches the same tables up from the log it reads. Found by the viewer: a reader that folded to
 * an older position wrote its older rows over the run's newer ones, and moved the stored position
 * back; the run's next diff did not touch those rows, so `verify` found the tables differing from a
 * rebuild. For all interleavings of two stores catching up to random positions of recorded logs,
 * the tables must equal a rebuild from scratch of the log up to the position they record.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../src/events/envelope.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { allProjections } from '../src/projections/all-projections.js';
import { ROOT, tempDir } from './support/cli.js';

const load = (name: string): StoredEvent[] =>
  readFileSync(join(ROOT, 'test', 'fixtures', 'logs', `${name}.ndjson`), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StoredEvent);

/** The dump of a fresh store that folded events 1..n (the oracle: no incremental writes at all). */
const rebuilt = new Map<string, string>();
function rebuildDump(name: string, events: readonly StoredEvent[], n: number): string {
  const key = `${name}:${n}`;
  if (!rebuilt.has(key)) {
    const s = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery: 0 });
    s.rebuild(events.slice(0, n));
    rebuilt.set(key, s.dump());
    s.close();
  }
  return rebuilt.get(key)!;
}

const step = fc.record({ store: fc.integer({ min: 0, max: 1 }), to: fc.double({ min: 0, max: 1, noNaN: true }), reopen: fc.boolean() });

describe('R-5 two stores catching one projections database up', () => {
  it.each(['helios', 'orbit'])('(property) %s: for all interleavings, the tables always equal a rebuild up to the position they record', (name) => {
    const events = load(name);
    fc.assert(
      fc.property(fc.array(step, { minLength: 2, maxLength: 12 }), fc.integer({ min: 0, max: 40 }), (steps, snapshotEvery) => {
        const path = join(tempDir(), 'projections.db');
        const open = () => ProjectionStore.open(path, allProjections(), { snapshotEvery });
        const stores = [open(), open()];
        // What the tables held when each store was opened (a reader reads the log after that).
        const openedAt = [0, 0];
        try {
          for (const s of [...steps, { store: 0, to: 1, reopen: false }, { store: 1, to: 1, reopen: false }]) {
            if (s.reopen) {
              stores[s.store]!.close();
              stores[s.store] = open();
              const probe = open();
              openedAt[s.store] = probe.position();
              probe.close();
            }
            const store = stores[s.store]!;
            // A reader reads the log after it opened the store, so it sees at least what the tables
            // held then (and what this store folded since); the file may be far ahead of both.
            const from = store.resumeFrom();
            const to = Math.max(from - 1, openedAt[s.store]!, Math.round(s.to * events.length));
            store.catchUp(events.slice(from - 1, to));
            const probe = open();
            const at = probe.position();
            // (Nothing is written before the first event: empty tables, where a rebuild writes the initial rows.)
            if (at > 0) expect(probe.dump(), `tables at stored position ${at}`).toBe(rebuildDump(name, events, at));
            probe.close();
          }
          const final = open();
          expect(final.position()).toBe(events.length);
          expect(final.dump()).toBe(rebuildDump(name, events, events.length));
          final.close();
        } finally {
          for (const s of stores) s.close();
        }
      }),
      { numRuns: 100 },
    );
  });
});
