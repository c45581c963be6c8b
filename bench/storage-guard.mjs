// What the storage guard (issue 17) costs per statement call: interleaved rounds of 200k point reads, plain vs guarded.
// Run: npm run build && node bench/storage-guard.mjs
import Database from 'better-sqlite3';
import { guardDatabase } from '../dist/projections/storage-guard.js';
const mk = (g) => { const db = new Database(':memory:'); db.exec('create table t(k integer primary key, v text)'); const ins = db.prepare('insert into t values (?, ?)'); for (let i = 0; i < 1000; i++) ins.run(i, 'x' + i); return g ? guardDatabase(db, '/x') : db; };
const plain = mk(false), guarded = mk(true);
const sp = plain.prepare('select v from t where k = ?'), sg = guarded.prepare('select v from t where k = ?');
function run(s, n) { const t = process.hrtime.bigint(); for (let i = 0; i < n; i++) s.get(i % 1000); return Number(process.hrtime.bigint() - t) / n; }
for (let r = 0; r < 5; r++) { const a = run(sp, 200000), b = run(sg, 200000); console.log(`plain ${a.toFixed(0)} ns/get, guarded ${b.toFixed(0)} ns/get, +${(b - a).toFixed(0)} ns`); }
