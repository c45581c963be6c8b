import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresEventLog } from '../src/adapters/log/postgres-log.js';
import { freshSchema, pgUrl, tickCatalogue } from './support/pg.js';

const url = pgUrl('postgres-concurrency.test.ts');
const worker = fileURLToPath(new URL('./fixtures/pg-append-worker.mjs', import.meta.url));
const built = fileURLToPath(new URL('../dist/adapters/log/postgres-log.js', import.meta.url));

interface Outcome { ok: boolean; position?: number; revision?: number; code?: string | null; message?: string }

/** Start a writer process; resolves once it has connected and waits for "go". */
function startWriter(schema: string, streamId: string, expected: string, count: number): Promise<{ child: ChildProcess; results: Promise<Outcome[]> }> {
  const child = spawn(process.execPath, [worker, url!, schema, streamId, expected, String(count)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  const outcomes: Outcome[] = [];
  return new Promise((resolveReady, rejectReady) => {
    const results = new Promise<Outcome[]>((resolve, reject) => {
      lines.on('line', (line) => {
        if (line === 'ready') resolveReady({ child, results });
        else outcomes.push(JSON.parse(line) as Outcome);
      });
      child.on('exit', (code) => (code === 0 ? resolve(outcomes) : reject(new Error(`writer exited with ${code}`))));
      child.on('error', rejectReady);
    });
    results.catch(rejectReady);
  });
}

const children: ChildProcess[] = [];
let log: PostgresEventLog | undefined;
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  if (log) {
    await log.close();
    await PostgresEventLog.dropSchema(url!, log.schema);
    log = undefined;
  }
});

describe.skipIf(!url)('PostgreSQL log under writers in separate OS processes', () => {
  it('needs the compiled adapter (npm test builds dist/ first)', () => {
    expect(existsSync(built), `missing ${built}: run npx tsc -p tsconfig.build.json`).toBe(true);
  });

  it('R-3 two processes append at the same expected revision: exactly one wins, no fork', async () => {
    const schema = freshSchema('race');
    log = await PostgresEventLog.open({ url: url!, schema, catalogue: tickCatalogue });
    await log.append('build-1', [{ type: 'Tick', data: { n: 0 }, metadata: { recordedAt: 't' } }], 'no-stream');
    for (let round = 0; round < 3; round++) {
      const expected = String(round);
      const writers = await Promise.all([startWriter(schema, 'build-1', expected, 1), startWriter(schema, 'build-1', expected, 1)]);
      children.push(...writers.map((w) => w.child));
      for (const w of writers) w.child.stdin!.end('go\n');
      const outcomes = (await Promise.all(writers.map((w) => w.results))).flat();
      expect(outcomes.filter((o) => o.ok)).toHaveLength(1);
      expect(outcomes.filter((o) => !o.ok).map((o) => o.code)).toEqual(['CONCURRENCY']);
    }
    const stream = await log.readStream('build-1');
    expect(stream.map((e) => e.revision)).toEqual([0, 1, 2, 3]);
    expect(stream.map((e) => e.position)).toEqual([1, 2, 3, 4]);
    expect(await log.verifyChain()).toMatchObject({ ok: true, events: 4 });
  }, 30_000);

  it("R-3 many processes appending with 'any': contiguous positions, per-stream revisions, chain verifies; readers see a prefix", async () => {
    const schema = freshSchema('many');
    log = await PostgresEventLog.open({ url: url!, schema, catalogue: tickCatalogue });
    const writers = await Promise.all(Array.from({ length: 6 }, (_, i) => startWriter(schema, `s${i % 3}`, 'any', 25)));
    children.push(...writers.map((w) => w.child));
    let reading = true;
    const prefixChecks = (async () => {
      let reads = 0;
      while (reading) {
        const seen = await log!.readAll();
        // A consistent prefix: positions 1..k with nothing skipped, whatever k is at that instant.
        expect(seen.map((e) => e.position)).toEqual(seen.map((_, i) => i + 1));
        reads += 1;
      }
      return reads;
    })();
    for (const w of writers) w.child.stdin!.end('go\n');
    const outcomes = (await Promise.all(writers.map((w) => w.results))).flat();
    reading = false;
    expect(await prefixChecks).toBeGreaterThan(0);
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const all = await log.readAll();
    expect(all.map((e) => e.position)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
    expect(new Set(outcomes.map((o) => o.position)).size).toBe(150);
    for (const s of ['s0', 's1', 's2']) {
      expect((await log.readStream(s)).map((e) => e.revision)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    }
    expect(await log.verifyChain()).toMatchObject({ ok: true, events: 150 });
  }, 30_000);
});
