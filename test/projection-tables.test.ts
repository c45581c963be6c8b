// Projection rows as SQLite stores them (src/projections/tables.ts). better-sqlite3 binds every
// JavaScript number as a REAL (8 bytes a value); the table writer binds an integral one as an
// INTEGER (none for 0 and 1, one or two bytes for small ones), and every value reads back as it was.
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTableSql, TableWriter } from '../src/projections/tables.js';
import type { TableSpec } from '../src/projections/projection.js';

type Rows = Record<string, { n: number | string | null }>;
const spec: TableSpec<Rows> = { name: 't', columns: ['id', 'n'], keyColumns: 1, entities: (s) => s, toRow: (id, e) => [id, (e as { n: number | string | null }).n] };

function written(values: (number | string | null)[]): { n: unknown; type: string }[] {
  const db = new Database(':memory:');
  db.exec(createTableSql(spec as TableSpec<unknown>));
  new TableWriter(db, spec).writeDiff(null, Object.fromEntries(values.map((n, i) => [String(i).padStart(4, '0'), { n }])));
  const rows = db.prepare('SELECT n, typeof(n) AS type FROM t ORDER BY id').all() as { n: unknown; type: string }[];
  db.close();
  return rows;
}

describe('projection tables store what toRow gives', () => {
  it('integral numbers as INTEGER, fractions and numbers past 2^53 as REAL, text and null as they are: each reads back equal', () => {
    expect(written([0, 1, 300, -5, 1.5, 2 ** 53, 'x', null, 1_796_000_000_000])).toEqual([
      { n: 0, type: 'integer' }, { n: 1, type: 'integer' }, { n: 300, type: 'integer' }, { n: -5, type: 'integer' },
      { n: 1.5, type: 'real' }, { n: 2 ** 53, type: 'real' }, { n: 'x', type: 'text' }, { n: null, type: 'null' },
      { n: 1_796_000_000_000, type: 'integer' },
    ]);
  });

  it('for all numbers a projection can hold, the row reads back as the same number', () => {
    fc.assert(fc.property(fc.array(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.double({ noNaN: true, noDefaultInfinity: true })), { maxLength: 30 }), (values) => {
      const back = written(values).map((r) => r.n);
      // -0 is written as 0: canonical JSON, which the dumps and hashes use, does not tell them apart.
      expect(back).toEqual(values.map((v) => (Object.is(v, -0) ? 0 : v)));
    }), { numRuns: 200 });
  });
});
