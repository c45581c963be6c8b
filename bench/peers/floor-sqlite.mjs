// Floor: one durable SQLite commit per step (WAL, synchronous=FULL), the step's result as a row.
// node floor-sqlite.mjs DIR N
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { bytesUnder, ownCpuMs, report, stepResult } from './lib.mjs';

const [dir, nArg] = process.argv.slice(2);
const n = Number(nArg ?? 1000);
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec('CREATE TABLE steps (position INTEGER PRIMARY KEY, data TEXT NOT NULL)');
const insert = db.prepare('INSERT INTO steps (data) VALUES (?)');
const cpu0 = ownCpuMs();
const t0 = performance.now();
for (let i = 0; i < n; i++) insert.run(JSON.stringify(stepResult(i)));
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
db.pragma('wal_checkpoint(TRUNCATE)');
db.close();
report({ ms, cpuMs, bytes: bytesUnder(dir) });
