import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { ValidationError } from '../../events/errors.js';
import { EventMetadataSchema, type EventMetadata, type NewEvent } from '../../events/envelope.js';
import { formatZodError, type EventCatalogue } from '../../events/catalogue.js';

export interface PreparedEvent {
  readonly type: string;
  readonly schemaVersion: number;
  readonly data: JsonValue;
  readonly metadata: EventMetadata;
  readonly dataJson: string;
  readonly metadataJson: string;
}

/**
 * Validate and canonicalise events before any backend touches storage:
 * a bad event refuses the whole batch and nothing is written. Shared by every log backend.
 */
export function prepareNewEvents(streamId: string, events: readonly NewEvent[], catalogue: EventCatalogue): PreparedEvent[] {
  if (typeof streamId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(streamId)) {
    throw new ValidationError(`invalid stream id ${JSON.stringify(streamId)}`, 'R-28');
  }
  if (!Array.isArray(events) || events.length === 0) throw new ValidationError('append needs at least one event', 'R-28');
  return events.map((event, i) => {
    if (event === null || typeof event !== 'object') throw new ValidationError(`event #${i} is not an object`, 'R-28');
    if (typeof event.type !== 'string' || event.type.length === 0) throw new ValidationError(`event #${i} has no type`, 'R-28');
    const schemaVersion = event.schemaVersion ?? catalogue.currentVersion(event.type);
    const dataJson = canonicalJson(event.data);
    const meta = EventMetadataSchema.safeParse(event.metadata);
    if (!meta.success) throw new ValidationError(`event #${i} (${event.type}) metadata: ${formatZodError(meta.error)}`, 'R-2');
    const metadataJson = canonicalJson(meta.data);
    catalogue.validate(event.type, schemaVersion, event.data);
    return { type: event.type, schemaVersion, data: event.data, metadata: meta.data, dataJson, metadataJson };
  });
}
