import { KeyOrderMemo, canonicalJson, type JsonValue } from '../../events/canonical.js';
import { ValidationError } from '../../events/errors.js';
import type { EventMetadata, NewEvent } from '../../events/envelope.js';
import { EventMetadataSchema } from '../../events/metadata-schema.js';
import { formatZodError, type EventCatalogue } from '../../events/catalogue.js';

export interface PreparedEvent {
  readonly type: string;
  readonly schemaVersion: number;
  readonly data: JsonValue;
  readonly metadata: EventMetadata;
  readonly dataJson: string;
  readonly metadataJson: string;
}

/** Refuse a stream id or an event batch that cannot be appended at all. */
export function checkAppendShape(streamId: string, events: readonly NewEvent[]): void {
  if (typeof streamId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(streamId)) {
    throw new ValidationError(`invalid stream id ${JSON.stringify(streamId)}`, 'R-28');
  }
  if (!Array.isArray(events) || events.length === 0) throw new ValidationError('append needs at least one event', 'R-28');
}

/**
 * Validate and canonicalise one event; `i` is its index in the batch, for messages.
 * Backends call it for every event before committing, so one bad event refuses the whole batch.
 */
export function prepareNewEvent(event: NewEvent, i: number, catalogue: EventCatalogue, memo?: BatchMemo): PreparedEvent {
  if (event === null || typeof event !== 'object') throw new ValidationError(`event #${i} is not an object`, 'R-28');
  if (typeof event.type !== 'string' || event.type.length === 0) throw new ValidationError(`event #${i} has no type`, 'R-28');
  const schemaVersion = event.schemaVersion ?? catalogue.currentVersion(event.type);
  const dataJson = canonicalJson(event.data, memo?.keyOrders);
  let metadata: EventMetadata;
  let metadataJson: string;
  if (memo !== undefined && memo.source === event.metadata && memo.source !== undefined) {
    // A batch usually shares one metadata object: validate and encode it once.
    metadata = memo.metadata!;
    metadataJson = memo.json;
  } else {
    metadata = plainMetadata(event.metadata) ?? parseMetadata(event, i);
    metadataJson = canonicalJson(metadata);
    if (memo !== undefined) Object.assign(memo, { source: event.metadata, metadata, json: metadataJson });
  }
  catalogue.validate(event.type, schemaVersion, event.data);
  return { type: event.type, schemaVersion, data: event.data, metadata, dataJson, metadataJson };
}

/**
 * What the events of one batch share (append-local; never shared between appends): the last
 * metadata object and its encoding, and the sorted key orders of the data shapes.
 */
export interface BatchMemo {
  source?: unknown;
  metadata?: EventMetadata;
  json: string;
  readonly keyOrders: KeyOrderMemo;
}

export function newBatchMemo(): BatchMemo {
  return { json: '', keyOrders: new KeyOrderMemo() };
}

/**
 * Validate and canonicalise events before any backend touches storage:
 * a bad event refuses the whole batch and nothing is written. Shared by every log backend.
 */
export function prepareNewEvents(streamId: string, events: readonly NewEvent[], catalogue: EventCatalogue): PreparedEvent[] {
  checkAppendShape(streamId, events);
  const memo = newBatchMemo();
  return events.map((event, i) => prepareNewEvent(event, i, catalogue, memo));
}

const KNOWN_METADATA = new Set(['recordedAt', 'causationId', 'correlationId']);

/**
 * The common metadata shape (only the known keys, all strings) needs no schema run; it is
 * exactly what EventMetadataSchema accepts for those keys. Anything else returns undefined.
 */
function plainMetadata(m: unknown): EventMetadata | undefined {
  if (m === null || typeof m !== 'object' || Object.getPrototypeOf(m) !== Object.prototype) return undefined;
  const rec = m as Record<string, unknown>;
  if (typeof rec.recordedAt !== 'string' || rec.recordedAt.length === 0) return undefined;
  for (const key in rec) if (!KNOWN_METADATA.has(key) || typeof rec[key] !== 'string') return undefined;
  return rec as EventMetadata;
}

function parseMetadata(event: NewEvent, i: number): EventMetadata {
  const meta = EventMetadataSchema.safeParse(event.metadata);
  if (!meta.success) throw new ValidationError(`event #${i} (${event.type}) metadata: ${formatZodError(meta.error)}`, 'R-2');
  return meta.data;
}
