import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { prepareNewEvent } from '../src/adapters/log/prepare.js';
import { canonicalJson } from '../src/events/canonical.js';
import { EventMetadataSchema } from '../src/events/metadata-schema.js';
import { ValidationError } from '../src/events/errors.js';
import { testCatalogue } from './contract/test-catalogue.js';

describe('R-2 event preparation', () => {
  it('R-2 (property) metadata canonicalises to the same bytes on the fast path and through the schema', () => {
    const metaArb = fc.record(
      { recordedAt: fc.string({ minLength: 1 }), causationId: fc.string(), correlationId: fc.string(), extra: fc.jsonValue() },
      { requiredKeys: ['recordedAt'] },
    );
    fc.assert(
      fc.property(metaArb, (metadata) => {
        const p = prepareNewEvent({ type: 'TestA', data: {}, metadata: metadata as never }, 0, testCatalogue);
        expect(p.metadataJson).toBe(canonicalJson(EventMetadataSchema.parse(metadata)));
      }),
      { numRuns: 200 },
    );
  });

  it('R-28 metadata the schema refuses is refused on every path', () => {
    for (const metadata of [{}, { recordedAt: '' }, { recordedAt: 1 }, { recordedAt: 't', causationId: 5 }, null, 'x']) {
      expect(() => prepareNewEvent({ type: 'TestA', data: {}, metadata: metadata as never }, 3, testCatalogue)).toThrow(ValidationError);
    }
    expect(() => prepareNewEvent({ type: 'TestA', data: {}, metadata: {} as never }, 3, testCatalogue)).toThrow(/event #3 \(TestA\) metadata: recordedAt/);
  });
});
