import fc from 'fast-check';
import type { NewEvent } from '../../src/events/envelope.js';

const meta = { recordedAt: '2026-01-01T00:00:00Z' };

/** One append: a stream and 1..3 events of the test catalogue, on a few keys so they collide. */
export const appendArb = fc.record({
  stream: fc.constantFrom('s1', 's2', 's3'),
  events: fc.array(
    fc.oneof(
      fc.record({ key: fc.constantFrom('a', 'b', 'c', 'é', '𝔸'), n: fc.integer({ min: -5, max: 5 }), label: fc.option(fc.string({ maxLength: 3 }), { nil: undefined }) }).map(
        ({ key, n, label }): NewEvent => ({ type: 'TestAdded', data: label === undefined ? { key, n } : { key, n, label }, metadata: meta }),
      ),
      fc.constantFrom('a', 'b', 'c').map((key): NewEvent => ({ type: 'TestRemoved', data: { key }, metadata: meta })),
      fc.constantFrom('x', 'y').map((tag): NewEvent => ({ type: 'TestTagged', data: { tag }, metadata: meta })),
      fc.constantFrom('x', 'y').map((tag): NewEvent => ({ type: 'TestUntagged', data: { tag }, metadata: meta })),
      fc.constant<NewEvent>({ type: 'TestNoted', data: {}, metadata: meta }),
    ),
    { minLength: 1, maxLength: 3 },
  ),
});

export const appendsArb = fc.array(appendArb, { minLength: 0, maxLength: 25 });
