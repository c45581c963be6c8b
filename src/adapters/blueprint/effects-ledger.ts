/**
 * Effects ledger: an append-only NDJSON file outside the event log where the scripted planner and
 * worker record each invocation BEFORE doing the work, fsynced, so a test can count the
 * real calls across controller kills — including calls whose result never reached the log.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';

export interface LedgerEntry {
  readonly kind: 'planner' | 'worker';
  /** The planner's callId or the worker packet's idempotencyKey. */
  readonly key: string;
  readonly nodeId?: string;
  readonly pid: number;
}

/** The ledger path from an explicit option, else LONGBUILD_EFFECTS_LEDGER, else none. */
export function ledgerPathFrom(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (explicit !== undefined && explicit !== '') return explicit;
  const fromEnv = env['LONGBUILD_EFFECTS_LEDGER'];
  return fromEnv === undefined || fromEnv === '' ? undefined : fromEnv;
}

/** Append one line and fsync it (one write call, so concurrent appenders do not interleave lines). */
export function appendLedger(path: string, entry: LedgerEntry): void {
  const fd = openSync(path, 'a');
  try {
    writeSync(fd, JSON.stringify(entry) + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Read a ledger back (for tests and fuzzing). */
export function readLedger(text: string): LedgerEntry[] {
  return text.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as LedgerEntry);
}
