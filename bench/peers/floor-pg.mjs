// Floor: one PostgreSQL INSERT transaction per step (synchronous_commit=on), the result as a row.
// node floor-pg.mjs DIR N   (LONGBUILD_PG_URL names the database)
import pg from 'pg';
import { ownCpuMs, report, stepResult } from './lib.mjs';

const n = Number(process.argv[3] ?? 1000);
const client = new pg.Client({ connectionString: process.env.LONGBUILD_PG_URL });
await client.connect();
const table = `floor_${process.pid}`;
await client.query(`CREATE TABLE ${table} (position BIGSERIAL PRIMARY KEY, data JSONB NOT NULL)`);
const cpu0 = ownCpuMs();
const t0 = performance.now();
for (let i = 0; i < n; i++) await client.query(`INSERT INTO ${table} (data) VALUES ($1)`, [JSON.stringify(stepResult(i))]);
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
const { rows } = await client.query(`SELECT pg_total_relation_size('${table}') AS b`);
await client.query(`DROP TABLE ${table}`);
await client.end();
report({ ms, cpuMs, bytes: Number(rows[0].b) });
