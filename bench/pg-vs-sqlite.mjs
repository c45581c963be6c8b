// Log backend benchmark (issue 8): append (batch and single) and catch-up (read-all) throughput of
// PostgreSQL vs SQLite, in one run. On demand, not a timed test:
//   npm run build && LONGBUILD_PG_URL="$(scripts/start-postgres.sh)" node bench/pg-vs-sqlite.mjs
// BENCH_SCALE=0.1 for a quick run. Both backends at their durable defaults: SQLite WAL +
// synchronous=FULL, PostgreSQL synchronous_commit=on (fsync per commit), same events, same catalogue.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventLog } from '../dist/adapters/log/sqlite-log.js';
import { PostgresEventLog } from '../dist/adapters/log/postgres-log.js';

const url = process.env.LONGBUILD_PG_URL;
if (!url) {
  console.error('LONGBUILD_PG_URL is not set: run  export LONGBUILD_PG_URL="$(scripts/start-postgres.sh)"');
  process.exit(2);
}
const scale = Number(process.env.BENCH_SCALE ?? 1);
const N_BATCH = Math.round(100_000 * scale);
const BATCH = 1000;
const N_SINGLE = Math.max(50, Math.round(1_000 * Math.min(scale, 1)));
const PAGE = 1000;
const meta = { recordedAt: '2026-01-01T00:00:00.000Z', correlationId: 'bench' };

/** A realistic domain event (AttemptStarted), validated by the real domain catalogue. */
function event(i) {
  return {
    type: 'AttemptStarted',
    data: { attemptId: `att-${i}`, nodeId: `node-${i % 500}`, attempt: 1 + (i % 3), baseHead: 'a'.repeat(40), branch: `longbuild/attempt/node-${i % 500}/${i}`, graphRevision: i },
    metadata: meta,
  };
}

async function measure(label, n, fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { label, n, seconds: s, perSecond: n / s };
}

async function run(name, open) {
  const results = [];
  const batchLog = await open('batch');
  results.push(await measure(`batch append (${BATCH}/append)`, N_BATCH, async () => {
    for (let i = 0; i < N_BATCH; i += BATCH) {
      await batchLog.log.append('build', Array.from({ length: Math.min(BATCH, N_BATCH - i) }, (_, k) => event(i + k)), 'any');
    }
  }));
  results.push(await measure(`catch-up read-all (${PAGE}/page)`, N_BATCH, async () => {
    let from = 1;
    let seen = 0;
    for (;;) {
      const page = await batchLog.log.readAll({ from, limit: PAGE });
      seen += page.length;
      if (page.length < PAGE) break;
      from = page[page.length - 1].position + 1;
    }
    if (seen !== N_BATCH) throw new Error(`${name}: read ${seen} of ${N_BATCH}`);
  }));
  results.push(await measure('verify chain', N_BATCH, async () => {
    const r = await batchLog.log.verifyChain();
    if (!r.ok) throw new Error(`${name}: chain does not verify`);
  }));
  await batchLog.cleanup();
  const singleLog = await open('single');
  results.push(await measure('durable single appends (expected revision)', N_SINGLE, async () => {
    for (let i = 0; i < N_SINGLE; i++) await singleLog.log.append('build', [event(i)], i - 1 < 0 ? 'no-stream' : i - 1);
  }));
  await singleLog.cleanup();
  return results;
}

const dir = mkdtempSync(join(tmpdir(), 'lb-bench-pg-'));
try {
  const sqlite = await run('SQLite', async (tag) => {
    const log = new SqliteEventLog({ path: join(dir, `${tag}.db`) });
    return { log, cleanup: () => log.close() };
  });
  const pg = await run('PostgreSQL', async (tag) => {
    const schema = `bench_${tag}_${process.pid}`;
    await PostgresEventLog.dropSchema(url, schema);
    const log = await PostgresEventLog.open({ url, schema });
    return { log, cleanup: async () => { await log.close(); await PostgresEventLog.dropSchema(url, schema); } };
  });
  console.log(`node ${process.version}; ${N_BATCH} events for batch/catch-up/verify, ${N_SINGLE} single appends`);
  console.log(`| measure | SQLite events/s | PostgreSQL events/s | PG / SQLite |`);
  console.log(`|---|---:|---:|---:|`);
  for (let i = 0; i < sqlite.length; i++) {
    const a = sqlite[i];
    const b = pg[i];
    console.log(`| ${a.label} | ${Math.round(a.perSecond).toLocaleString('en-US')} | ${Math.round(b.perSecond).toLocaleString('en-US')} | ${(b.perSecond / a.perSecond).toFixed(2)} |`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
