import { z } from 'zod';
import type { JsonValue } from './canonical.js';
import { canonicalSha256, sha256Hex } from './hash.js';

/** Metadata every event carries. `recordedAt` comes from an injected clock. */
export const EventMetadataSchema = z
  .object({
    recordedAt: z.string().min(1),
    causationId: z.string().optional(),
    correlationId: z.string().optional(),
  })
  .catchall(z.json());
export type EventMetadata = z.infer<typeof EventMetadataSchema>;

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
 * The same hash as computeEventHash, from data and metadata already in canonical JSON:
 * the keys of the hashed part are written in code-point order by hand, so a hot append
 * path canonicalises each body once.
 */
export function hashFromCanonicalParts(p: {
  position: number; streamId: string; revision: number; type: string; schemaVersion: number;
  dataJson: string; metadataJson: string; prevHash: string;
}): string {
  const text = `{"data":${p.dataJson},"metadata":${p.metadataJson},"position":${p.position},"prevHash":${JSON.stringify(p.prevHash)},"revision":${p.revision},"schemaVersion":${p.schemaVersion},"streamId":${JSON.stringify(p.streamId)},"type":${JSON.stringify(p.type)}}`;
  return sha256Hex(text);
}

/** Seal an event: give it its hash. */
export function sealEvent(e: Omit<StoredEvent, 'hash'>): StoredEvent {
  return { ...e, hash: computeEventHash(e) };
}
