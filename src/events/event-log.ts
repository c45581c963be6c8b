import type { NewEvent, StoredEvent } from './envelope.js';

/** What the writer expects the stream's revision to be. */
export type ExpectedRevision = number | 'no-stream' | 'any';

export interface AppendResult {
  /** Revision of the stream's last event after the append. */
  readonly nextRevision: number;
  /** Global position of the last event appended. */
  readonly position: number;
  readonly events: readonly StoredEvent[];
}

export interface ReadOptions {
  /** Global position (readAll) or stream revision (readStream) to start from, inclusive. */
  readonly from?: number;
  readonly direction?: 'forwards' | 'backwards';
  readonly limit?: number;
}

export interface LogHead {
  readonly position: number;
  readonly hash: string;
}

export interface VerifyProblem {
  readonly position: number;
  readonly problem: string;
}

export interface ChainReport {
  readonly ok: boolean;
  readonly events: number;
  readonly headHash: string;
  readonly problems: readonly VerifyProblem[];
}

/**
 * The append-only, hash-chained event log (R-1..R-4). Positions are 1-based and
 * contiguous; stream revisions are 0-based. Every backend passes `logContract`.
 */
/** A stored event's fields with its data and metadata as the stored JSON text. */
export interface RawStoredEvent {
  readonly position: number;
  readonly streamId: string;
  readonly revision: number;
  readonly type: string;
  readonly schemaVersion: number;
  readonly dataJson: string;
  readonly metadataJson: string;
  readonly prevHash: string;
  readonly hash: string;
}

export interface EventLog {
  append(streamId: string, events: readonly NewEvent[], expected: ExpectedRevision): Promise<AppendResult>;
  readAll(options?: ReadOptions): Promise<StoredEvent[]>;
  readStream(streamId: string, options?: ReadOptions): Promise<StoredEvent[]>;
  /** The last event's position and hash, or null for an empty log. */
  head(): Promise<LogHead | null>;
  /** Revision of a stream's last event, or -1 when the stream does not exist. */
  streamRevision(streamId: string): Promise<number>;
  /** Walk the chain end to end; reports the first bad position and stops there. */
  verifyChain(): Promise<ChainReport>;
  /**
   * The chain head anchor the backend keeps beside the events (written with every append), or
   * null when it has none: a log whose last event is not the anchor was cut or forged.
   */
  anchor(): Promise<LogHead | null>;
  /** The hashes of up to `limit` events from position `from` on, in order (the Merkle leaves, R-34). */
  readHashes(from: number, limit: number): Promise<string[]>;
  /**
   * Optional: up to `limit` events from `from` on as stored, one canonical JSON line each
   * (`storedLine`), with their type — for an export that must carry the stored bytes as they are.
   * A backend without it is exported by re-serialising what `readAll` parsed.
   */
  readStoredLines?(from: number, limit: number): Promise<{ readonly type: string; readonly line: string }[]>;
  /**
   * Optional: up to `limit` events from position `from` on as stored (data and metadata unparsed),
   * in order — a reader that only checks the chain hashes the stored bytes (`storedBytesHash`).
   */
  readStoredRows?(from: number, limit: number): Promise<RawStoredEvent[]>;
  /**
   * Optional group commit (decision 0017): after `hold()`, appends are visible to this log object
   * (reads, further appends) but durable only at `sync()`, all together in one commit. A backend
   * without it makes every append durable on its own. `close()` drops what was held and not synced.
   */
  hold?(): void;
  sync?(): void | Promise<void>;
  close(): Promise<void>;
}
