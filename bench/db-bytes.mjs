// Where a build directory's bytes are: each SQLite file's tables and indexes, from SQLite's
// `dbstat` table (page bytes, payload, unused), and every other file's size. Run on demand:
//   node bench/db-bytes.mjs [BUILD_DIR]   (default .longbuild)
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const dir = process.argv[2] ?? '.longbuild';
const kb = (n) => `${(n / 1024).toFixed(1)} KB`.padStart(10);
for (const name of readdirSync(dir).sort()) {
  const path = join(dir, name);
  const st = statSync(path);
  if (!name.endsWith('.db')) {
    if (st.isFile()) console.log(`${name.padEnd(44)} ${kb(st.size)}`);
    continue;
  }
  const db = new Database(path, { readonly: true });
  try {
    const free = db.pragma('freelist_count', { simple: true }) * db.pragma('page_size', { simple: true });
    console.log(`${name.padEnd(44)} ${kb(st.size)}  (free pages ${kb(free).trim()})`);
    const rows = db.prepare('SELECT name, sum(pgsize) AS bytes, sum(payload) AS payload, sum(unused) AS unused, sum(ncell) AS cells FROM dbstat GROUP BY name ORDER BY bytes DESC').all();
    for (const r of rows) console.log(`  ${r.name.padEnd(42)} ${kb(r.bytes)}  payload ${kb(r.payload)}  unused ${kb(r.unused)}  cells ${r.cells}`);
  } finally {
    db.close();
  }
}
