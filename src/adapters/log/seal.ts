import type { StoredEvent } from '../../events/envelope.js';
import { ChainSealer } from '../../events/envelope.js';
import type { LogHead } from '../../events/event-log.js';
import type { PreparedEvent } from './prepare.js';
import type { RawEventRow } from './chain.js';

export interface SealedBatch {
  /** Canonical text rows, ready to store. */
  readonly rows: RawEventRow[];
  readonly events: StoredEvent[];
}

/**
 * Give prepared events their places after `head` and seal each link of the chain:
 * position head+1.., revision currentRevision+1.., prev-hash = the previous event's hash.
 */
export function sealPrepared(streamId: string, prepared: readonly PreparedEvent[], head: LogHead | null, currentRevision: number): SealedBatch {
  const sealer = new ChainSealer(streamId, head, currentRevision);
  const rows: RawEventRow[] = [];
  const events: StoredEvent[] = [];
  for (const p of prepared) {
    const prevHash = sealer.hash;
    const hash = sealer.next(p.type, p.schemaVersion, p.dataJson, p.metadataJson);
    const { position, revision } = sealer;
    rows.push({ position, streamId, revision, type: p.type, schemaVersion: p.schemaVersion, dataJson: p.dataJson, metadataJson: p.metadataJson, prevHash, hash });
    events.push({ position, streamId, revision, type: p.type, schemaVersion: p.schemaVersion, data: p.data, metadata: p.metadata, prevHash, hash });
  }
  return { rows, events };
}
