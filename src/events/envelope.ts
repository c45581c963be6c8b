import { jsonString, type JsonValue } from './canonical.js';
import { GENESIS_HASH, canonicalSha256, sha256Hex } from './hash.js';
import type { LogHead } from './event-log.js';

/**
 * Metadata every event carries. `recordedAt` comes from an injected clock. Checked on
 * append by `EventMetadataSchema` (metadata-schema.ts: zod, kept out of what a reader loads).
 */
export type EventMetadata = {
  recordedAt: string;
  causationId?: string | undefined;
  correlationId?: string | undefined;
} & { [key: string]: JsonValue | undefined };

/** An event as a caller proposes it, before the log gives it a place. */
export interface NewEvent {
  readonly type: string;
  readonly schemaVersion?: number;
  readonly data: JsonValue;
  readonly metadata: EventMetadata;
}

/** An event as stored: its place in the log and its link in the hash chain. */
export interface StoredEvent {
  readonly position: number;
  readonly streamId: string;
  readonly revision: number;
  readonly type: string;
  readonly schemaVersion: number;
  readonly data: JsonValue;
  readonly metadata: EventMetadata;
  readonly prevHash: string;
  readonly hash: string;
}

/** The part of a stored event its hash covers: everything but the hash itself. */
export function hashedPart(e: Omit<StoredEvent, 'hash'>): Record<string, unknown> {
  return {
    position: e.position,
    streamId: e.streamId,
    revision: e.revision,
    type: e.type,
    schemaVersion: e.schemaVersion,
    data: e.data,
    metadata: e.metadata,
    prevHash: e.prevHash,
  };
}

/** SHA-256 over the canonical JSON of everything but the hash. */
export function computeEventHash(e: Omit<StoredEvent, 'hash'>): string {
  return canonicalSha256(hashedPart(e));
}

/**
 * Seals a run of consecutive events of one stream after a head: each gets the next
 * position and revision, and the same hash as computeEventHash, from data and metadata already
 * in canonical JSON. The keys of the hashed part are written in code-point order by hand, and
 * the stream id and each type are quoted once per run, so a hot append path canonicalises each
 * body once and builds one string per event.
 */
export class ChainSealer {
  /** Position, revision and hash of the last event sealed (the head's before the first). */
  position: number;
  revision: number;
  hash: string;
  private hashJson: string;
  private readonly streamIdJson: string;
  private readonly typeJson = new Map<string, string>();

  constructor(streamId: string, head: LogHead | null, currentRevision: number) {
    this.position = head?.position ?? 0;
    this.revision = currentRevision;
    this.hash = head?.hash ?? GENESIS_HASH;
    this.hashJson = jsonString(this.hash);
    this.streamIdJson = jsonString(streamId);
  }

  /** Seal the next event and return its hash; `position`, `revision` and `hash` move to it. */
  next(type: string, schemaVersion: number, dataJson: string, metadataJson: string): string {
    let typeJson = this.typeJson.get(type);
    if (typeJson === undefined) this.typeJson.set(type, (typeJson = jsonString(type)));
    this.position += 1;
    this.revision += 1;
    const hash = sha256Hex(hashedText(dataJson, metadataJson, this.position, this.hashJson, this.revision, schemaVersion, this.streamIdJson, typeJson));
    this.hash = hash;
    this.hashJson = `"${hash}"`; // lower-case hex needs no escaping
    return hash;
  }
}

/**
 * A stored event as one canonical JSON line (its `hash` member between `data` and `metadata`,
 * R-2), assembled from the stored bytes of its data and metadata without parsing them: an export
 * carries the log exactly as stored, so an edit to stored bytes stays visible to the auditor.
 */
export function storedLine(e: { position: number; streamId: string; revision: number; type: string; schemaVersion: number; dataJson: string; metadataJson: string; prevHash: string; hash: string }): string {
  return `{"data":${e.dataJson},"hash":${jsonString(e.hash)},"metadata":${e.metadataJson},"position":${e.position},"prevHash":${jsonString(e.prevHash)},"revision":${e.revision},"schemaVersion":${e.schemaVersion},"streamId":${jsonString(e.streamId)},"type":${jsonString(e.type)}}`;
}

/**
 * The hash of an event straight from its stored bytes (data and metadata as stored, unparsed), in
 * the form `ChainSealer` hashes: equal to `computeEventHash` of the parsed event whenever the
 * stored bytes are canonical JSON, as every writer stores them. A reader that finds it equal to
 * the stored hash has checked the event without parsing and re-encoding it (decision 0017);
 * one that does not must fall back to `computeEventHash` (bytes not canonical, or edited).
 */
export function storedBytesHash(e: { position: number; streamId: string; revision: number; type: string; schemaVersion: number; dataJson: string; metadataJson: string; prevHash: string }): string {
  return sha256Hex(hashedText(e.dataJson, e.metadataJson, e.position, jsonString(e.prevHash), e.revision, e.schemaVersion, jsonString(e.streamId), jsonString(e.type)));
}

/**
 * The canonical JSON of an event's hashed part, its members in code-point order, from parts
 * already encoded (the string members quoted): what the sealer and the stored-bytes check hash.
 */
function hashedText(dataJson: string, metadataJson: string, position: number, prevHashJson: string, revision: number, schemaVersion: number, streamIdJson: string, typeJson: string): string {
  return `{"data":${dataJson},"metadata":${metadataJson},"position":${position},"prevHash":${prevHashJson},"revision":${revision},"schemaVersion":${schemaVersion},"streamId":${streamIdJson},"type":${typeJson}}`;
}

/** Seal an event: give it its hash. */
export function sealEvent(e: Omit<StoredEvent, 'hash'>): StoredEvent {
  return { ...e, hash: computeEventHash(e) };
}
