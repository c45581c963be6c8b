import { ValidationError } from '../../src/events/errors.js';
import type { EventCatalogue } from '../../src/events/catalogue.js';

/**
 * The catalogue the log contract runs with: any type named `Test*` at schema version 1 whose
 * data is a JSON object; everything else is refused. Backend-agnostic on purpose.
 */
export const testCatalogue: EventCatalogue = {
  validate(type, schemaVersion, data) {
    if (!/^Test[A-Za-z0-9]*$/.test(type)) throw new ValidationError(`unknown event type '${type}'`, 'R-28');
    if (schemaVersion !== 1) throw new ValidationError(`event type '${type}' has no schema version ${schemaVersion} (current 1)`, 'R-7');
    if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new ValidationError(`invalid ${type} event: data must be an object`, 'R-28');
  },
  currentVersion() {
    return 1;
  },
};
