// @ts-check
// The SQLite log's batch writer thread (see sqlite-batch-writer.ts and docs/decisions/0005).
// Plain JavaScript so the same file runs from src/ (tests) and dist/ (the CLI): it only runs the
// statements it is given, on its own connection, inside one write transaction per batch. It never
// validates, encodes or hashes: the caller's thread does that while this one stores rows.
import { workerData } from 'node:worker_threads';

/**
 * @typedef {{ sql: Record<'streamRevision' | 'head' | 'insertMany' | 'insertOne' | 'setAnchor', string>,
 *   rowsPerInsert: number, columns: number, path: string, busyTimeoutMs: number,
 *   synchronous: 'FULL' | 'NORMAL', pageCache: string, signal: SharedArrayBuffer, port: import('node:worker_threads').MessagePort }} WriterData
 */
const data = /** @type {WriterData} */ (workerData);
const signal = new Int32Array(data.signal);
const port = data.port;

// signal[0] counts answers, signal[2] hand-overs done; signal[1] is the start state:
/** 0 while starting, 1 ready, 2 could not start (the caller stops waiting then). */
function started(/** @type {1 | 2} */ state) {
  Atomics.store(signal, 1, state);
  Atomics.notify(signal, 1);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

/** @type {typeof import('better-sqlite3')} */
let Database;
try {
  // Fault injection (docs/cli-extensions.md): the thread fails to start, as if its driver could not load.
  if (process.env.LONGBUILD_FAULT_WRITER === 'startup') throw new Error('LONGBUILD_FAULT_WRITER=startup: the writer thread refuses to start');
  Database = (await import('better-sqlite3')).default;
} catch (err) {
  port.postMessage({ ok: false, error: describe(err), startup: true });
  started(2);
  throw err;
}

/**
 * @typedef {{ db: import('better-sqlite3').Database,
 *   stmts: Record<keyof WriterData['sql'], import('better-sqlite3').Statement> }} Connection
 */
/** @type {Connection | undefined} */
let conn;
/**
 * What ended the open batch early: an error, or the caller's view of the log was stale (another
 * writer committed between its read and this lock). Rows after it are dropped; commit reports it.
 * @type {{ ok: false, error: { name: string, message: string, code?: string } } | { ok: false, stale: { current: number, head: { position: number, hash: string } | null } } | undefined}
 */
let failure;

/** Answer one request: the reply goes on the port first, then the caller is woken. */
function reply(/** @type {unknown} */ message) {
  port.postMessage(message);
  Atomics.add(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function describe(/** @type {unknown} */ err) {
  const e = /** @type {{ name?: string, message?: string, code?: string }} */ (err ?? {});
  return { name: e.name ?? 'Error', message: e.message ?? String(err), ...(e.code ? { code: e.code } : {}) };
}

/** @returns {Connection} */
function open() {
  const db = new Database(data.path);
  db.pragma(`busy_timeout = ${data.busyTimeoutMs}`);
  db.pragma(`synchronous = ${data.synchronous}`);
  db.pragma(data.pageCache); // bounded as the caller's connections are (storage-guard.ts, PAGE_CACHE_KIB)
  // Checkpoints run here after the caller is answered, not inside its commit (see handle 'commit').
  db.pragma('wal_autocheckpoint = 0');
  const sql = data.sql;
  const stmts = {
    streamRevision: db.prepare(sql.streamRevision),
    head: db.prepare(sql.head),
    insertMany: db.prepare(sql.insertMany),
    insertOne: db.prepare(sql.insertOne),
    setAnchor: db.prepare(sql.setAnchor),
  };
  return { db, stmts };
}

function rollback() {
  if (conn?.db.inTransaction) conn.db.exec('ROLLBACK');
}

/** @param {{ op: 'begin', streamId: string, streamKey: string | Uint8Array, current: number, head: { position: number, hash: string } | null } | { op: 'rows', params: (string | number)[] } | { op: 'commit', position: number, hash: string } | { op: 'rollback' } | { op: 'close' }} m */
function handle(m) {
  switch (m.op) {
    case 'begin': {
      // No answer: the caller seals rows meanwhile. It read the head and the stream revision
      // without the lock; if they moved before the lock was taken, the batch is stale.
      failure = undefined;
      try {
        conn ??= open();
        conn.db.exec('BEGIN IMMEDIATE');
        const current = /** @type {{ r: number | null }} */ (conn.stmts.streamRevision.get(m.streamId, typeof m.streamKey === 'string' ? m.streamKey : Buffer.from(m.streamKey))).r ?? -1;
        const head = /** @type {{ position: number, hash: string } | undefined} */ (conn.stmts.head.get()) ?? null;
        if (current !== m.current || head?.position !== m.head?.position || head?.hash !== m.head?.hash) {
          rollback();
          failure = { ok: false, stale: { current, head } };
        }
      } catch (err) {
        try { rollback(); } catch { /* the connection may not have opened */ }
        failure = { ok: false, error: describe(err) };
      }
      return;
    }
    case 'rows': {
      try {
        if (failure !== undefined) return;
        if (conn === undefined || !conn.db.inTransaction) throw new Error('rows arrived outside a batch');
        const stmts = conn.stmts;
        const per = data.rowsPerInsert * data.columns;
        const params = m.params;
        let k = 0;
        for (; k + per <= params.length; k += per) stmts.insertMany.run(params.slice(k, k + per));
        for (; k < params.length; k += data.columns) stmts.insertOne.run(params.slice(k, k + data.columns));
      } catch (err) {
        failure = { ok: false, error: describe(err) };
        try { rollback(); } catch { /* reported through failure */ }
      } finally {
        // Stored or dropped, this hand-over is done: the caller may post another.
        Atomics.add(signal, 2, 1);
        Atomics.notify(signal, 2);
      }
      return;
    }
    case 'commit': {
      if (failure !== undefined) {
        reply(failure);
        failure = undefined;
        return;
      }
      try {
        if (conn === undefined || !conn.db.inTransaction) throw new Error('commit arrived outside a batch');
        conn.stmts.setAnchor.run(m.position, m.hash);
        conn.db.exec('COMMIT');
      } catch (err) {
        try { rollback(); } catch { /* reported below */ }
        reply({ ok: false, error: describe(err) });
        return;
      }
      reply({ ok: true });
      // Durable already (the WAL is synced at COMMIT); copying it into the database file is
      // maintenance, done while the caller goes on. PASSIVE never blocks readers or writers.
      try { conn.db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* retried after the next batch */ }
      return;
    }
    case 'rollback': {
      failure = undefined;
      try {
        rollback();
        reply({ ok: true });
      } catch (err) {
        reply({ ok: false, error: describe(err) });
      }
      return;
    }
    case 'close': {
      try { rollback(); conn?.db.close(); } catch { /* closing anyway */ }
      conn = undefined;
      reply({ ok: true });
      port.close();
      return;
    }
  }
}

port.on('message', handle);
started(1);
