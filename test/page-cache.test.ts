/**
 * Decision 0055: every SQLite connection longbuild opens (the lease's lock file excepted: it holds
 * nothing, and its first statements are a race for its lock) has a page cache of PAGE_CACHE_KIB
 * (better-sqlite3's build default, 16,000 KiB a connection, grew a long build's native memory with
 * its files). Read back from each connection: SQLite's own answer, not the pragma sent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { TreeStore } from '../src/adapters/transparency/tree-store.js';
import { allProjections } from '../src/projections/all-projections.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { openDatabase, openDatabaseToRead, PAGE_CACHE_KIB } from '../src/projections/storage-guard.js';

const dir = mkdtempSync(join(tmpdir(), 'lb-page-cache-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cacheOf = (db: Database.Database): unknown => db.pragma('cache_size', { simple: true });

describe('SQLite page caches are bounded (decision 0055)', () => {
  it('a connection opened as better-sqlite3 opens it has 16,000 KiB; every connection longbuild opens — the log, the projections, the transparency tree, read-only or not; not the lease\'s lock file, which holds nothing — has PAGE_CACHE_KIB', async () => {
    expect(PAGE_CACHE_KIB).toBeLessThanOrEqual(2048);
    const plain = openDatabase(join(dir, 'plain.db'));
    expect(cacheOf(plain)).toBe(-PAGE_CACHE_KIB);
    plain.close();
    // The default it replaces (so that this test would see a connection that skipped it).
    const Sqlite = (await import('better-sqlite3')).default;
    const raw = new Sqlite(join(dir, 'plain.db'));
    expect(cacheOf(raw)).toBe(-16000);
    raw.close();

    expect(cacheOf(openDatabase(join(dir, 'plain.db'), { readonly: true }))).toBe(-PAGE_CACHE_KIB);
    expect(cacheOf(openDatabaseToRead(join(dir, 'plain.db')))).toBe(-PAGE_CACHE_KIB);

    const log = new SqliteEventLog({ path: join(dir, 'events.db') });
    try {
      expect(cacheOf(log.db)).toBe(-PAGE_CACHE_KIB);
    } finally {
      await log.close();
    }
    const store = ProjectionStore.open(join(dir, 'projections.db'), allProjections());
    try {
      expect(cacheOf(store.db)).toBe(-PAGE_CACHE_KIB);
    } finally {
      store.close();
    }
    const tree = TreeStore.open(join(dir, 'tree.db'));
    try {
      expect(cacheOf((tree as unknown as { db: Database.Database }).db)).toBe(-PAGE_CACHE_KIB);
    } finally {
      tree.close();
    }
  });
});
