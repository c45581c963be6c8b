/**
 * The controller lease of a build whose log lives in PostgreSQL: controllers on
 * different hosts share the build, and only the lease holder may append.
 *
 * One row, `<schema>.controller_lease (holder, token, expires_at)`, next to the log's tables. Every
 * time comparison uses the server's clock (`clock_timestamp()`), so hosts' clock skew does not
 * matter. Taking the lease is one atomic upsert that succeeds only when the row is absent,
 * released or expired, and bumps the fencing token. The holder renews every third of the timeout;
 * a holder that is SIGKILLed (or partitioned, or paused) stops renewing and the lease expires
 * `timeoutMs` after its last renewal, when a standby takes it.
 *
 * Fencing: every append of the holder checks, inside the append's own transaction and after its
 * expected-revision check, that the lease row still carries its holder id and token (`FOR SHARE`,
 * so a takeover waits for an in-flight append and vice versa). A controller that lost the lease
 * therefore cannot append: its append fails on the expected revision when the new holder has
 * appended since, and on the token otherwise — both a ConcurrencyError (exit 3), nothing written.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { PoolClient } from 'pg';
import { LongbuildError, ValidationError } from '../../events/errors.js';
import type { AppendFence } from '../log/postgres-log.js';
import { fenceOrphans, type ControllerLease } from './lease.js';
import { isConnectionLoss, reconnectWindowMs, withReconnect, type Reconnecting } from '../log/pg-connection.js';

export const DEFAULT_LEASE_TIMEOUT_MS = 10_000;

/** Another controller holds the PostgreSQL lease (exit 3); nothing was changed. */
export class LeaseHeldError extends LongbuildError {
  constructor(holder: string, remainingMs: number) {
    super('CONCURRENCY', `another controller (${holder}) holds the build's controller lease for ${Math.max(0, Math.ceil(remainingMs))} ms more unless it renews; nothing was changed (use --standby to wait and take over)`, 'R-3');
  }
}

/** This controller's lease was taken over: it must not append any more (exit 3). */
export class LeaseLostError extends LongbuildError {
  constructor(holder: string, token: number, now: { holder: string; token: number } | null) {
    super('CONCURRENCY', `controller lease lost: ${holder} held token ${token}, the lease is now ${now ? `held by ${now.holder || '(released)'} with token ${now.token}` : 'gone'}; nothing was appended`, 'R-3');
  }
}

export interface PostgresLeaseOptions {
  readonly url: string;
  readonly schema: string;
  /** How long a lease lives without renewal (default 10 s). */
  readonly timeoutMs?: number;
  /** Wait (polling) for the lease instead of failing with LeaseHeldError. */
  readonly wait?: boolean;
  /** Told once when waiting starts (who holds the lease). */
  readonly onWait?: (holder: string, remainingMs: number) => void;
  /** Orphans of a dead controller on this host to kill once the lease is taken. */
  readonly fencedDirs?: readonly string[];
  readonly holder?: string;
  /** How long a lost server is waited for (default LONGBUILD_PG_RECONNECT_SECONDS, else 30 s); a standby waits out outages the same way. */
  readonly reconnectMs?: number;
  /** Told once per outage. */
  readonly onOutage?: (detail: string) => void;
}

/** This boot of this machine (Linux), so a lease names a holder that can be checked for life. */
function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
  } catch {
    return 'noboot';
  }
}

/** `host:pid:boot:nonce`: the holder of a lease, as it is written in the lease row. */
export function holderId(pid = process.pid, host = hostname(), boot = bootId()): string {
  return `${host}:${pid}:${boot}:${randomUUID().slice(0, 8)}`;
}

/**
 * Whether `holder` is a controller of this host that is certainly dead: this host's name, and
 * either an earlier boot or a pid that no longer exists. Its lease can be taken at once, instead
 * of after its expiry (a `run` right after a crash or an outage exited 3).
 */
export function deadLocalHolder(holder: string, alive: (pid: number) => boolean = pidAlive): boolean {
  const m = /^(.*):(\d+):([0-9a-z]+):[0-9a-f]{8}$/.exec(holder);
  if (m === null || m[1] !== hostname()) return false;
  return m[3] !== bootId() || !alive(Number(m[2]));
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

interface Row {
  holder: string;
  token: string;
  remaining_ms: string;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Take the build's PostgreSQL controller lease (or wait for it), start renewing, fence orphans. */
export async function takePostgresLease(options: PostgresLeaseOptions): Promise<ControllerLease & { readonly holder: string; readonly token: number; readonly lost: () => boolean }> {
  if (!SCHEMA_NAME.test(options.schema)) throw new ValidationError(`invalid PostgreSQL schema name ${JSON.stringify(options.schema)}`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_LEASE_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100) throw new ValidationError(`lease timeout must be an integer ≥ 100 ms, got ${timeoutMs}`);
  const table = `"${options.schema}".controller_lease`;
  const holder = options.holder ?? holderId();
  const pool = new pg.Pool({ connectionString: options.url, max: 1, application_name: 'longbuild-lease' });
  pool.on('error', () => {}); // a dropped idle connection is reported by the next query
  const rc: Reconnecting = { url: options.url, windowMs: options.reconnectMs ?? reconnectWindowMs(), ...(options.onOutage ? { onOutage: options.onOutage } : {}) };
  const query = <R extends pg.QueryResultRow>(sql: string, params: unknown[] = []) => withReconnect(rc, () => pool.query<R>(sql, params));

  try {
    await withReconnect(rc, () => createTable(pool, options.schema, table));
    let token: number | null = null;
    let told = false;
    for (;;) {
      const taken = await query<{ token: string }>(
        `INSERT INTO ${table} AS l (id, holder, token, expires_at) VALUES (1, $1, 1, clock_timestamp() + $2 * interval '1 millisecond')
         ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, token = l.token + 1, expires_at = excluded.expires_at
         WHERE l.expires_at <= clock_timestamp()
         RETURNING token`,
        [holder, timeoutMs],
      );
      if (taken.rows[0]) {
        token = Number(taken.rows[0].token);
        break;
      }
      const cur = (await query<Row>(`SELECT holder, token, (EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * 1000)::bigint AS remaining_ms FROM ${table} WHERE id = 1`)).rows[0];
      if (cur && deadLocalHolder(cur.holder)) {
        // A dead controller of this very host: no need to wait for its lease to expire. Taken
        // only if the row is still exactly that holder's (the token bump fences it, as always).
        const takenOver = await query<{ token: string }>(
          `UPDATE ${table} SET holder = $1, token = token + 1, expires_at = clock_timestamp() + $2 * interval '1 millisecond' WHERE id = 1 AND holder = $3 AND token = $4 RETURNING token`,
          [holder, timeoutMs, cur.holder, cur.token],
        );
        if (takenOver.rows[0]) {
          token = Number(takenOver.rows[0].token);
          break;
        }
        continue;
      }
      const remaining = cur ? Number(cur.remaining_ms) : 0;
      if (!options.wait) throw new LeaseHeldError(cur?.holder ?? '?', remaining);
      if (!told) options.onWait?.(cur?.holder ?? '?', remaining);
      told = true;
      // Poll a little after the current expiry, but often enough to notice a release at once.
      await sleep(Math.max(20, Math.min(remaining + 10, Math.ceil(timeoutMs / 10), 500)));
    }
    const myToken = token;
    let lost = false;
    const renew = async (): Promise<void> => {
      try {
        // Renewed only while the row is still ours: a lease that lapsed during an outage is
        // still ours if nobody took it since (any takeover bumps the token).
        const r = await pool.query(`UPDATE ${table} SET expires_at = clock_timestamp() + $3 * interval '1 millisecond' WHERE id = 1 AND holder = $1 AND token = $2`, [holder, myToken, timeoutMs]);
        if (r.rowCount !== 1) lost = true;
      } catch {
        // The server is unreachable: keep trying. The lease may lapse meanwhile; appends are
        // fenced by the row whatever happens, so nothing is lost by not giving up here.
      }
      if (lost) clearInterval(timer);
    };
    const timer = setInterval(() => void renew(), Math.max(30, Math.floor(timeoutMs / 3)));
    timer.unref();

    const check = async (client: PoolClient, schema: string): Promise<void> => {
      const r = await client.query<{ holder: string; token: string }>(`SELECT holder, token FROM "${schema}".controller_lease WHERE id = 1 FOR SHARE`);
      const row = r.rows[0];
      if (!row || row.holder !== holder || Number(row.token) !== myToken) {
        lost = true;
        throw new LeaseLostError(holder, myToken, row ? { holder: row.holder, token: Number(row.token) } : null);
      }
    };
    // The same check inside the statement that writes a held batch (its row locked FOR SHARE as above).
    const appendFence: AppendFence = Object.assign(check, {
      select: (schema: string, first: number) => ({
        sql: `SELECT 1 FROM "${schema}".controller_lease WHERE id = 1 AND holder = $${first}::text AND token = $${first + 1}::bigint FOR SHARE`,
        params: [holder, myToken],
      }),
    });

    const fenced = options.fencedDirs ? await fenceOrphans(options.fencedDirs) : [];
    let released = false;
    return {
      holder,
      token: myToken,
      fenced,
      appendFence,
      lost: () => lost,
      async confirm() {
        if (lost) throw new LeaseLostError(holder, myToken, null);
        const row = (await pool.query<{ holder: string; token: string }>(`SELECT holder, token FROM ${table} WHERE id = 1`)).rows[0];
        if (!row || row.holder !== holder || Number(row.token) !== myToken) {
          lost = true;
          throw new LeaseLostError(holder, myToken, row ? { holder: row.holder, token: Number(row.token) } : null);
        }
      },
      async release() {
        if (released) return;
        released = true;
        clearInterval(timer);
        try {
          // Expire it now (the token stays, so the next holder's is higher); only if still ours.
          await pool.query(`UPDATE ${table} SET holder = '', expires_at = clock_timestamp() WHERE id = 1 AND holder = $1 AND token = $2`, [holder, myToken]);
        } catch (err) {
          // The server is gone: the lease expires by itself, and this host's next controller
          // takes it at once (this process will be dead). Whatever failed first is what is told.
          if (!isConnectionLoss(err)) throw err;
        } finally {
          await pool.end().catch(() => {});
        }
      },
    };
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
}

async function createTable(pool: pg.Pool, schema: string, table: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    // Concurrent CREATE ... IF NOT EXISTS from two processes can collide; serialise them.
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`longbuild-schema:${schema}`]);
    await c.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await c.query(`CREATE TABLE IF NOT EXISTS ${table} (
      id         INTEGER     PRIMARY KEY CHECK (id = 1),
      holder     TEXT        NOT NULL,
      token      BIGINT      NOT NULL,
      expires_at TIMESTAMPTZ NOT NULL
    )`);
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    c.release();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
