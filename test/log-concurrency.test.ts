import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { testCatalogue } from './contract/test-catalogue.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const child = join(root, 'test/fixtures/append-child.mjs');

interface ChildResult { ok: boolean; writer: string; code?: string | null; position?: number; message?: string }

function runChild(args: string[]): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, dist, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) reject(new Error(`child exited ${code}: ${err}`));
      else resolve(JSON.parse(out.trim()) as ChildResult);
    });
  });
}

describe('R-3 two OS processes on one SQLite log', () => {
  // Rows stored in the appending thread (3-event appends), or by the log's writer thread (3,000).
  it.each([
    { rows: 'in-thread', count: 3 },
    { rows: 'thread', count: 3000 },
  ])('R-3 two processes appending at the same expected revision: exactly one wins, the other gets the concurrency error, no fork (rows stored $rows)', async ({ rows, count }) => {
    expect(existsSync(join(dist, 'adapters/log/sqlite-log.js')), 'run `npm run build` first (npm test does)').toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'lb-conc-'));
    try {
      const path = join(dir, 'events.db');
      const log = new SqliteEventLog({ path, catalogue: testCatalogue });
      log.appendSync('build', [{ type: 'TestStarted', data: {}, metadata: { recordedAt: 't' } }], 'no-stream');
      const rounds = 4;
      for (let round = 0; round < rounds; round++) {
        const expected = String(log.streamRevisionSync('build'));
        const startAt = String(Date.now() + 400);
        const results = await Promise.all(['a', 'b'].map((w) => runChild([path, 'build', expected, `${w}${round}`, startAt, String(count), rows])));
        const winners = results.filter((r) => r.ok);
        const losers = results.filter((r) => !r.ok);
        expect(winners, JSON.stringify(results)).toHaveLength(1);
        expect(losers[0]?.code, JSON.stringify(results)).toBe('CONCURRENCY');
      }
      const events = log.readAllSync();
      expect(events).toHaveLength(1 + rounds * count);
      // No fork: every revision once, each round's three events from one writer, chain intact.
      expect(events.map((e) => e.revision)).toEqual(events.map((_, i) => i));
      for (let round = 0; round < rounds; round++) {
        const writers = new Set(events.slice(1 + round * count, 1 + (round + 1) * count).map((e) => (e.data as { writer: string }).writer));
        expect(writers.size).toBe(1);
      }
      expect(log.verifyChainSync().ok).toBe(true);
      await log.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
