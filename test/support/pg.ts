import { randomBytes } from 'node:crypto';
import type { EventCatalogue } from '../../src/events/catalogue.js';
import { ValidationError } from '../../src/events/errors.js';
import { PostgresEventLog } from '../../src/adapters/log/postgres-log.js';

/**
 * The PostgreSQL URL for tests (LONGBUILD_PG_URL, set by .ci/run via scripts/start-postgres.sh).
 * Unset → PostgreSQL tests skip, saying so once per file.
 */
export function pgUrl(file: string): string | undefined {
  const url = process.env.LONGBUILD_PG_URL;
  if (!url) console.warn(`[${file}] SKIPPED PostgreSQL tests: LONGBUILD_PG_URL is not set (run: export LONGBUILD_PG_URL="$(scripts/start-postgres.sh)")`);
  return url || undefined;
}

/** A schema name no other test (or process) uses. */
export function freshSchema(prefix = 't'): string {
  return `${prefix}_${process.pid}_${randomBytes(5).toString('hex')}`;
}

/** A fresh PostgreSQL log in its own schema, and a cleanup that drops the schema. */
export async function freshPgLog(url: string, catalogue?: EventCatalogue): Promise<{ log: PostgresEventLog; cleanup: () => Promise<void> }> {
  const schema = freshSchema();
  const log = await PostgresEventLog.open({ url, schema, ...(catalogue ? { catalogue } : {}) });
  return {
    log,
    // The contract suite closes the log before cleanup; closing twice is harmless.
    cleanup: async () => {
      await log.close();
      await PostgresEventLog.dropSchema(url, schema);
    },
  };
}

/** Accepts `Tick` and `Tock` events whose data is an object (backend tests do not need the domain). */
export const tickCatalogue: EventCatalogue = {
  validate(type, schemaVersion, data) {
    if (type !== 'Tick' && type !== 'Tock') throw new ValidationError(`unknown event type '${type}'`);
    if (schemaVersion !== 1) throw new ValidationError(`no schema version ${schemaVersion} of ${type}`);
    if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new ValidationError(`${type} data must be an object`);
  },
  currentVersion: () => 1,
};

export const tick = (n: number, extra: Record<string, string | number> = {}) => ({
  type: 'Tick',
  data: { n, ...extra },
  metadata: { recordedAt: '2025-01-01T00:00:00.000Z' },
});
