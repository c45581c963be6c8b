import type pg from 'pg';
import type { PoolClient } from 'pg';
import { StorageError } from '../../events/errors.js';

/**
 * Losing the PostgreSQL server (fault 3): what counts as a lost connection, how long to
 * keep trying, and the one line that says so when it is not back in time.
 */

/** Connection-class failures: the server is down, restarting, or the network dropped. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND',
  '57P01', '57P02', '57P03', // admin_shutdown, crash_shutdown, cannot_connect_now
  '08000', '08001', '08003', '08004', '08006', // connection exceptions
]);
const CONNECTION_MESSAGES = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|terminating connection|the database system is (starting up|shutting down|in recovery mode)/i;

export function isConnectionLoss(err: unknown): boolean {
  if (err instanceof StorageError) return err.problem === 'unreachable';
  const e = err as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && CONNECTION_MESSAGES.test(e.message)) return true;
  // Node's AggregateError of a dual-stack connect (ECONNREFUSED on ::1 and 127.0.0.1).
  return Array.isArray(e.errors) && e.errors.some(isConnectionLoss);
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return 'postgres:(invalid URL)';
  }
}

/** A PostgreSQL log as messages name it: its server URL with the schema (`redactedUrl` hides the password). */
export function withSchema(url: string, schema: string): string {
  return `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`;
}

/** The one line said when an outage of the log at `url` starts. */
export function outageLine(url: string, windowMs: number, detail: string): string {
  return `longbuild: the log at ${redactedUrl(url)} is unreachable (${detail}); retrying for up to ${Math.round(windowMs / 1000)} s\n`;
}

/** How long an outage is waited out before a command gives up (LONGBUILD_PG_RECONNECT_SECONDS, default 30). */
export function reconnectWindowMs(env: Readonly<Record<string, string | undefined>> = process.env): number {
  const raw = env.LONGBUILD_PG_RECONNECT_SECONDS;
  if (raw === undefined || raw === '') return 30_000;
  const s = Number(raw);
  return Number.isFinite(s) && s >= 0 ? Math.round(s * 1000) : 30_000;
}

export interface Reconnecting {
  readonly url: string;
  readonly windowMs: number;
  /** Told once per outage, when the first attempt fails (a line on stderr). */
  readonly onOutage?: (detail: string) => void;
}

/**
 * Run `op`; while it fails with a lost connection, try again (200 ms, doubling to 2 s) until the
 * window closes, then throw StorageError 'unreachable' naming the server. `op` must be safe to
 * run again after a connection loss (reads are; appends check what was committed first).
 */
export async function withReconnect<T>(r: Reconnecting, op: (retry: number) => Promise<T>): Promise<T> {
  const deadline = Date.now() + r.windowMs;
  let delay = 200;
  for (let retry = 0; ; retry++) {
    try {
      return await op(retry);
    } catch (err) {
      if (!isConnectionLoss(err)) throw err;
      const detail = connectionDetail(err);
      if (Date.now() + delay > deadline) throw new StorageError(redactedUrl(r.url), 'unreachable', detail);
      if (retry === 0) r.onOutage?.(detail);
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(2000, delay * 2);
    }
  }
}

function connectionDetail(err: unknown): string {
  if (err instanceof StorageError) return err.detail;
  const e = err as { code?: string; message?: string; errors?: { message?: string }[] };
  const message = e.message || e.errors?.[0]?.message || String(err);
  return message.split('\n')[0]!;
}

/** Run `body` in a transaction on a client of `pool` opened by `begin`; committed when it returns, rolled back when it throws. */
export async function inTransaction<T>(pool: pg.Pool, body: (client: PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A server that goes away mid-transaction makes the checked-out client emit 'error': without
  // a listener that is an uncaught exception; the query in flight rejects and reports it anyway.
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const result = await body(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: Error) => {
      broken = rollbackErr;
    });
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
