import { canonicalJson } from '../../events/canonical.js';
import { CorruptLogError, ValidationError } from '../../events/errors.js';
import { computeEventHash, type StoredEvent } from '../../events/envelope.js';
import { GENESIS_HASH } from '../../events/hash.js';
import type { EventLog, LogHead } from '../../events/event-log.js';
import type { RawEventRow } from './chain.js';

/** A log that can take events already placed and sealed elsewhere (export/import). */
export interface VerbatimImportable {
  /**
   * Append events exactly as given — positions, revisions, metadata, hashes — continuing the
   * log's current head. Refuses (ValidationError, nothing written) a batch that does not link.
   */
  importVerbatim(events: readonly StoredEvent[]): Promise<void>;
}

export type TransferableEventLog = EventLog & VerbatimImportable;

/**
 * Check that a batch continues `head` link by link and that every hash recomputes, and return
 * the rows in the canonical text form every backend stores. Shared by all backends' importVerbatim.
 */
export function prepareVerbatim(events: readonly StoredEvent[], head: LogHead | null): RawEventRow[] {
  let position = head?.position ?? 0;
  let prevHash = head?.hash ?? GENESIS_HASH;
  return events.map((e) => {
    if (e.position !== position + 1) throw new ValidationError(`import: expected position ${position + 1}, got ${e.position}`, 'R-4');
    if (e.prevHash !== prevHash) throw new ValidationError(`import: event at position ${e.position} does not link to the previous hash`, 'R-4');
    if (computeEventHash(e) !== e.hash) throw new ValidationError(`import: hash of the event at position ${e.position} does not recompute`, 'R-4');
    position = e.position;
    prevHash = e.hash;
    return {
      position: e.position,
      streamId: e.streamId,
      revision: e.revision,
      type: e.type,
      schemaVersion: e.schemaVersion,
      dataJson: canonicalJson(e.data),
      metadataJson: canonicalJson(e.metadata),
      prevHash: e.prevHash,
      hash: e.hash,
    };
  });
}

/** A stored row (canonical texts) back into an event; unparseable JSON is a CorruptLogError. */
export function rawRowToEvent(row: RawEventRow): StoredEvent {
  const parse = (text: string, field: string): unknown => {
    try {
      return JSON.parse(text);
    } catch {
      throw new CorruptLogError(row.position, `${field} is not valid JSON`);
    }
  };
  return {
    position: row.position,
    streamId: row.streamId,
    revision: row.revision,
    type: row.type,
    schemaVersion: row.schemaVersion,
    data: parse(row.dataJson, 'data') as StoredEvent['data'],
    metadata: parse(row.metadataJson, 'metadata') as StoredEvent['metadata'],
    prevHash: row.prevHash,
    hash: row.hash,
  };
}
