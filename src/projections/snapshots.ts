import { canonicalJson, stripUndefined } from '../events/canonical.js';
import { ValidationError } from '../events/errors.js';
import { sha256Hex } from '../events/hash.js';

/**
 * A projection's state as of a position, cached. Never authority: `sha256` binds the
 * projection name, the position, the hash of the event at that position and the state bytes,
 * so a snapshot from another log, another position or with edited bytes is refused.
 */
export interface Snapshot {
  readonly projection: string;
  readonly position: number;
  /** Hash of the log event at `position`; the next event's prevHash must equal it. */
  readonly eventHash: string;
  readonly stateJson: string;
  readonly sha256: string;
}

/** Where snapshots are kept. `candidates` yields those at or before `position`, newest first. */
export interface SnapshotStore {
  put(snapshot: Snapshot): void;
  candidates(projection: string, position: number): Iterable<Snapshot>;
  clear(projection?: string): void;
  /** Drop snapshots below `keepFrom` whose position is not a multiple of `stride` (optional). */
  thin?(projection: string, keepFrom: number, stride: number): void;
  /** The position of the projection's newest snapshot, or undefined (optional). */
  newestPosition?(projection: string): number | undefined;
  /** Drop all but the projection's `count` newest snapshots (optional). */
  keepNewest?(projection: string, count: number): void;
}

/** The hash a snapshot must carry. */
export function snapshotSha256(projection: string, position: number, eventHash: string, stateJson: string): string {
  return sha256Hex(`${JSON.stringify(projection)}\n${position}\n${eventHash}\n${stateJson}`);
}

/**
 * Encode a state as a snapshot. States must be plain JSON (records and arrays, no Maps);
 * keys holding `undefined` are dropped, which optional fields tolerate.
 */
export function makeSnapshot(projection: string, position: number, eventHash: string, state: unknown): Snapshot {
  let stateJson: string;
  try {
    stateJson = canonicalJson(stripUndefined(state));
  } catch (err) {
    throw new ValidationError(`projection ${projection}: state is not plain JSON, cannot snapshot (${(err as Error).message})`, 'R-6');
  }
  return { projection, position, eventHash, stateJson, sha256: snapshotSha256(projection, position, eventHash, stateJson) };
}

/** Decode a snapshot's state, or null when the snapshot does not verify. */
export function openSnapshot<S>(s: Snapshot): S | null {
  if (snapshotSha256(s.projection, s.position, s.eventHash, s.stateJson) !== s.sha256) return null;
  try {
    return JSON.parse(s.stateJson) as S;
  } catch {
    return null;
  }
}
