/**
 * Decision 0055: graph revisions' positions are a list in chunks (revision-positions.ts), not a
 * sharded record. The oracle is a plain array of the positions recorded, revision by revision.
 */
import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import {
  appendRevision, nextRevision, REVISION_CHUNK, revisionEntries, revisionPosition, revisionPositionsFrom, type RevisionPositions,
} from '../src/projections/revision-positions.js';
import { buildView, evolveBuild, initialBuildState, positionOfRevision, type BuildState } from '../src/projections/build-state.js';
import { buildLogArb } from './support/build-events.js';
import { ValidationError } from '../src/events/errors.js';

/** Lengths around the chunk boundaries, where an off-by-one would put a revision in the wrong chunk. */
const lengthArb = fc.oneof(
  fc.integer({ min: 0, max: 40 }),
  fc.integer({ min: REVISION_CHUNK - 3, max: REVISION_CHUNK + 3 }),
  fc.integer({ min: 2 * REVISION_CHUNK - 2, max: 2 * REVISION_CHUNK + 2 }),
);

describe('graph revisions\' positions (decision 0055)', () => {
  it('for all first revisions and positions, appended one by one through immer or made at once, every revision answers its own position, and nothing else answers', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), lengthArb, fc.integer({ min: 1, max: 1_000_000 }), (first, n, seed) => {
        const oracle = Array.from({ length: n }, (_, i) => (seed + i * 7) % 1_000_003);
        let r: RevisionPositions = revisionPositionsFrom(first, []);
        for (let i = 0; i < n; i++) {
          const before = r;
          r = produce(r, (d) => appendRevision(d, first + i, oracle[i]!));
          // Structural sharing: every chunk but the last is the one before, not a copy.
          for (let c = 0; c < before.chunks.length - 1; c++) expect(r.chunks[c]).toBe(before.chunks[c]);
        }
        expect(r).toEqual(revisionPositionsFrom(first, oracle));
        expect(nextRevision(r)).toBe(first + n);
        for (let i = 0; i < n; i++) expect(revisionPosition(r, first + i)).toBe(oracle[i]);
        for (const outside of [first - 1, first + n, first + n + REVISION_CHUNK, first + 0.5, Number.NaN]) expect(revisionPosition(r, outside)).toBeUndefined();
        expect([...revisionEntries(r)]).toEqual(oracle.map((p, i) => [first + i, p]));
        expect(r.chunks.every((c, i) => (i < r.chunks.length - 1 ? c.length === REVISION_CHUNK : c.length >= 1 && c.length <= REVISION_CHUNK))).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('a revision that does not follow the last one is refused, in one line that says what to do: it would answer for another revision', () => {
    const r = { first: 5, chunks: [[10, 11]] };
    expect(() => appendRevision(r, 8, 12)).toThrow(ValidationError);
    expect(() => appendRevision(r, 8, 12)).toThrow(/^graph revision 8 recorded after 6 at position 12: .*snapshot that does not follow the log.*run `longbuild rebuild`$/);
    expect(() => appendRevision(r, 6, 12)).toThrow(/graph revision 6 recorded after 6/);
    appendRevision(r, 7, 12);
    expect(r).toEqual({ first: 5, chunks: [[10, 11, 12]] });
    // What reaches it: a state restored from a snapshot whose revision and positions disagree (its
    // hash recomputed by whoever edited it), folded on by an event that changes the graph.
    const refusals = fc.sample(buildLogArb, { numRuns: 20, seed: 7 }).flatMap((events) => {
      let state: BuildState = initialBuildState;
      let forged = false;
      for (const e of events) {
        if (!forged && state.graphRevision > 0) {
          state = { ...state, graphRevision: state.graphRevision + 3 };
          forged = true;
        }
        try {
          state = evolveBuild(state, e);
        } catch (err) {
          return [err];
        }
      }
      return [];
    });
    expect(refusals.length).toBeGreaterThan(0);
    for (const err of refusals) {
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toMatch(/^graph revision \d+ recorded after \d+ at position \d+: /);
    }
  });

  it('for all build logs, the fold holds the position of every revision from 0 (each the event that made it, in order), and the view only its last', () => {
    fc.assert(
      fc.property(buildLogArb, (log) => {
        const oracle = [0];
        let state: BuildState = initialBuildState;
        for (const e of log) {
          const next = evolveBuild(state, e);
          if (next.graphRevision !== state.graphRevision) {
            expect(next.graphRevision).toBe(state.graphRevision + 1);
            oracle.push(e.position);
          }
          state = next;
        }
        expect([...revisionEntries(state.revisionPositions)]).toEqual(oracle.map((p, r) => [r, p]));
        const view = buildView(state);
        expect([...revisionEntries(view.revisionPositions)]).toEqual([[state.graphRevision, oracle[state.graphRevision]]]);
        expect(positionOfRevision(view, state.graphRevision - 1)).toBeUndefined();
        // A view folds on: its next revision follows its last.
        expect(nextRevision(view.revisionPositions)).toBe(state.graphRevision + 1);
      }),
      { numRuns: 80 },
    );
  });
});
