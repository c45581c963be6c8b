import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { LogHead } from '../../events/event-log.js';
import { codeFile } from '../package-files.js';

/** The statements the writer thread runs; the SQLite log owns their text. */
export interface BatchWriterSql {
  readonly streamRevision: string;
  readonly head: string;
  readonly insertMany: string;
  readonly insertOne: string;
  readonly setAnchor: string;
}

export interface BatchWriterOptions {
  readonly path: string;
  readonly busyTimeoutMs: number;
  readonly synchronous: 'FULL' | 'NORMAL';
  /** The writer connection's page cache pragma (PAGE_CACHE_PRAGMA, storage-guard.ts). */
  readonly pageCache: string;
  readonly sql: BatchWriterSql;
  readonly rowsPerInsert: number;
  readonly columns: number;
}

/**
 * The writer thread's batch failed: `code` is SQLite's (SQLITE_BUSY, SQLITE_FULL, ...) when
 * SQLite refused it; `startup` when the thread itself could not start (nothing was written).
 */
export class BatchWriterError extends Error {
  constructor(message: string, readonly code: string | undefined, readonly startup = false) {
    super(message);
    this.name = 'BatchWriterError';
  }
}

/** What the caller assumed when it sealed the batch, as seen under the thread's lock instead. */
export interface StaleView {
  readonly current: number;
  readonly head: LogHead | null;
}

type Reply =
  | { ok: true }
  | { ok: false; stale: StaleView }
  | { ok: false; error: { name: string; message: string; code?: string }; startup?: boolean };

/** How long past the busy timeout the caller waits for an answer before giving the thread up. */
const ANSWER_GRACE_MS = 120_000;

/** Hand-overs the thread may hold unstored before `rows` waits: bounds memory if it falls behind. */
const MAX_IN_FLIGHT = 16;

/** Slots of the shared signal: answers given, start state (0 starting, 1 ready, 2 failed), hand-overs done. */
const ANSWERS = 0;
const STATE = 1;
const HANDED = 2;

/**
 * A second thread that stores one big append's rows while the caller's thread validates,
 * encodes and hashes the next ones (docs/decisions/0005). Only `commit` and `rollback` wait:
 * `begin` names the stream revision and head the caller read (without the lock) and sealed
 * against; the thread takes the write lock on its own connection and checks them. `rows`
 * hands over sealed rows. `commit` writes the chain-head anchor and commits, or reports why
 * not: stale (another writer committed first; seal again) or an error. Either way a batch
 * that does not commit leaves nothing behind.
 */
export class SqliteBatchWriter {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly signal: Int32Array;
  private readonly answerTimeoutMs: number;
  private broken: Error | undefined;
  /** Hand-overs posted over the thread's life (compared with the HANDED slot). */
  private posted = 0;

  constructor(options: BatchWriterOptions) {
    const shared = new SharedArrayBuffer(12);
    this.signal = new Int32Array(shared);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.answerTimeoutMs = options.busyTimeoutMs + ANSWER_GRACE_MS;
    this.worker = new Worker(codeFile('adapters', 'log', 'sqlite-batch-writer.worker.js'), {
      workerData: { ...options, signal: shared, port: port2 },
      transferList: [port2],
    });
    // Neither keeps the process alive: an exiting process just loses the thread's idle time.
    this.worker.unref();
    this.port.unref();
    this.worker.on('error', (err) => { this.broken = err; });
  }

  /**
   * Open a batch sealed against `current` and `head`; the thread checks them under its lock.
   * `streamKey`: the stream's key in `row_names`, or its id when it has none (decision 0034).
   */
  begin(streamId: string, streamKey: string | Buffer, current: number, head: LogHead | null): void {
    if (this.broken !== undefined) throw this.brokenError();
    this.port.postMessage({ op: 'begin', streamId, streamKey, current, head });
  }

  /**
   * Hand over sealed rows (columns × n values, in insert order); errors surface at commit. Waits
   * only while the thread holds MAX_IN_FLIGHT hand-overs it has not stored yet.
   */
  rows(params: (string | number)[]): void {
    let deadline: number | undefined;
    for (;;) {
      const handled = Atomics.load(this.signal, HANDED);
      if (this.posted - handled < MAX_IN_FLIGHT || this.failedToStart()) break;
      deadline ??= Date.now() + this.answerTimeoutMs;
      const left = deadline - Date.now();
      if (left <= 0) throw this.giveUp('rows');
      Atomics.wait(this.signal, HANDED, handled, Math.min(left, 1000));
    }
    this.port.postMessage({ op: 'rows', params });
    this.posted += 1;
  }

  /**
   * Write the anchor and commit. Returns 'committed', or the view under the lock when the
   * caller's was stale (nothing written); throws what the thread met anywhere in the batch.
   */
  commit(anchor: LogHead): 'committed' | StaleView {
    const r = this.ask({ op: 'commit', position: anchor.position, hash: anchor.hash });
    return 'stale' in r ? r.stale : 'committed';
  }

  /** Roll the open batch back (safe to call when none is open). */
  rollback(): void {
    this.ask({ op: 'rollback' });
  }

  /** Stop the thread: it closes its connection first unless it never started or failed. */
  async close(): Promise<void> {
    if (this.broken === undefined && !this.failedToStart()) {
      try { this.ask({ op: 'close' }); } catch { /* terminating anyway */ }
    }
    this.broken ??= new Error('closed');
    await this.worker.terminate();
  }

  /** signal[1] is 2 once the thread has reported that it cannot start (it has exited then). */
  private failedToStart(): boolean {
    return Atomics.load(this.signal, STATE) === 2;
  }

  /** The thread stopped answering: it is not used again, and the outcome of the batch is unknown. */
  private giveUp(op: string): BatchWriterError {
    this.broken = new Error(`no answer to '${op}' within ${this.answerTimeoutMs} ms`);
    void this.worker.terminate();
    // Not a refusal: a commit may still have landed, so the caller must not retry blindly.
    return new BatchWriterError(`the log's batch writer thread did not answer '${op}' within ${this.answerTimeoutMs} ms; whether the batch was stored is unknown (read the log's head)`, undefined);
  }

  /** Why the thread is not used any more (it could not start, stopped answering, or was closed). */
  get failure(): string | undefined {
    return this.broken?.message;
  }

  private brokenError(): BatchWriterError {
    return new BatchWriterError(`the log's batch writer thread failed earlier: ${this.broken?.message}`, undefined, this.failedToStart());
  }

  private ask(message: { op: string; [k: string]: unknown }): { ok: true } | { ok: false; stale: StaleView } {
    if (this.broken !== undefined) throw this.brokenError();
    this.port.postMessage(message);
    const deadline = Date.now() + this.answerTimeoutMs;
    let reply: { message: Reply } | undefined;
    for (;;) {
      // Load the counter before looking for the answer: the thread posts first and counts
      // after, so an answer missed here wakes the wait below.
      const seen = Atomics.load(this.signal, ANSWERS);
      reply = receiveMessageOnPort(this.port) as { message: Reply } | undefined;
      if (reply !== undefined) break;
      if (this.failedToStart()) {
        this.broken = new Error('it could not start');
        throw new BatchWriterError("the log's batch writer thread could not start", undefined, true);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw this.giveUp(message.op);
      Atomics.wait(this.signal, ANSWERS, seen, Math.min(left, 1000));
    }
    const r = reply.message;
    if (r.ok || 'stale' in r) return r;
    if (r.startup === true) this.broken = new Error(r.error.message);
    throw new BatchWriterError(r.error.message, r.error.code, r.startup === true);
  }
}
