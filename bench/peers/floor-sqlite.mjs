// Floor: one durable SQLite commit per step (WAL, synchronous=FULL), the step's result as a row.
// With `mark`, the floor of R-18 as longbuild keeps it: after each commit, a line naming the next
// call appended to a journal and flushed (`fdatasync`) before that call may start — the two
// flushes per node that a commit carrying the intent, then the call's durable mark, cost.
// node floor-sqlite.mjs DIR N [mark]
import Database from 'better-sqlite3';
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { bytesUnder, ownCpuMs, report, stepResult } from './lib.mjs';

const [dir, nArg, variant] = process.argv.slice(2);
const n = Number(nArg ?? 1000);
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec('CREATE TABLE steps (position INTEGER PRIMARY KEY, data TEXT NOT NULL)');
const insert = db.prepare('INSERT INTO steps (data) VALUES (?)');
const journal = variant === 'mark' ? openSync(join(dir, 'journal'), 'a+', 0o600) : null;
const cpu0 = ownCpuMs();
const t0 = performance.now();
for (let i = 0; i < n; i++) {
  insert.run(JSON.stringify(stepResult(i)));
  if (journal !== null) {
    writeSync(journal, `${JSON.stringify({ key: `worker:n${i + 1}.1`, invocation: 1 })}\n`);
    fdatasyncSync(journal);
  }
}
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
if (journal !== null) closeSync(journal);
db.pragma('wal_checkpoint(TRUNCATE)');
db.close();
report({ ms, cpuMs, bytes: bytesUnder(dir) });
