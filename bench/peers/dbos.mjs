// DBOS Transact with its PostgreSQL system database: one workflow of N checkpointed steps.
// node dbos.mjs DIR N   (LONGBUILD_PG_URL names the database; a schema of its own per run)
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { ownCpuMs, report, stepResult } from './lib.mjs';

const n = Number(process.argv[3] ?? 1000);
const url = process.env.LONGBUILD_PG_URL;
const schema = `dbos_bench_${process.pid}`;
DBOS.setConfig({ name: 'bench', systemDatabaseUrl: url, systemDatabaseSchemaName: schema, logLevel: 'error' });
const workflow = DBOS.registerWorkflow(async (count) => {
  const results = [];
  for (let i = 0; i < count; i++) results.push(await DBOS.runStep(async () => stepResult(i), { name: `step-${i}` }));
  return results.length;
}, { name: 'build' });
await DBOS.launch();
const client = new pg.Client({ connectionString: url });
await client.connect();
const size = async () => Number((await client.query(
  `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS b FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'r'`, [schema])).rows[0].b);
const before = await size(); // the empty system tables: what the steps add is measured
const cpu0 = ownCpuMs();
const t0 = performance.now();
const done = await workflow(n);
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
await DBOS.shutdown();
if (done !== n) throw new Error(`dbos ran ${done} steps`);
const bytes = (await size()) - before;
await client.query(`DROP SCHEMA ${schema} CASCADE`);
await client.end();
report({ ms, cpuMs, bytes });
