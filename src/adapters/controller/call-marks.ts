import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import type { JsonValue } from '../../events/canonical.js';
import { join } from 'node:path';
import { sha256Hex } from '../../events/hash.js';
import { guarded } from '../../projections/storage-guard.js';
import { writeAtomically } from '../atomic-write.js';

/**
 * Durable marks of calls about to start. The controller marks each invocation of a planner or
 * worker call (by its idempotency key and invocation number) just before the process starts;
 * after a crash, an open intent whose last recorded invocation has no mark is a call that never
 * started: it is made now, and no `EffectReinvoked` is recorded for it — so a resume that fails
 * before the call starts (a full disk, another crash) records nothing, however often it is tried.
 * A mark is the only thing written: a file, fsynced, with its directory.
 */
export interface CallMarks {
  /** Mark invocation `invocation` (1 = the first call, 2 = its first re-invocation, ...) of the call `key` as started. */
  mark(key: string, invocation: number): void;
  started(key: string, invocation: number): boolean;
  /** Keep what invocation `invocation` of `key` returned, durably, before the host acts on it. */
  keep(key: string, invocation: number, outcome: JsonValue): void;
  /** What that invocation returned, if it was kept. */
  kept(key: string, invocation: number): JsonValue | null;
}

export class FileCallMarks implements CallMarks {
  constructor(private readonly dir: string) {}

  mark(key: string, invocation: number): void {
    guarded(this.path(key, invocation), () => this.write(key, invocation));
  }

  private write(key: string, invocation: number): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const fd = openSync(this.path(key, invocation), 'w', 0o600);
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }

  started(key: string, invocation: number): boolean {
    return existsSync(this.path(key, invocation));
  }

  keep(key: string, invocation: number, outcome: JsonValue): void {
    writeAtomically(`${this.path(key, invocation)}.returned`, JSON.stringify({ key, invocation, outcome }), { fsync: true });
  }

  kept(key: string, invocation: number): JsonValue | null {
    try {
      const kept = JSON.parse(readFileSync(`${this.path(key, invocation)}.returned`, 'utf8')) as { key: string; invocation: number; outcome: JsonValue };
      return kept.key === key && kept.invocation === invocation ? kept.outcome : null;
    } catch {
      return null; // none kept (or torn: the rename is atomic, so only a foreign file can be)
    }
  }

  /** The first invocation's mark is named by the key's SHA-256 alone (as before re-invocations were numbered). */
  private path(key: string, invocation: number): string {
    const name = sha256Hex(Buffer.from(key));
    return join(this.dir, invocation === 1 ? name : `${name}.${invocation}`);
  }
}
