/**
 * What a summary holds (`holdings`, src/projections/view.ts): everything it compacted, the summaries
 * it absorbed and, through them, theirs. `show`, `status` and the viewer list it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BuildState } from '../src/projections/build-state.js';
import type { SummaryRecord } from '../src/projections/summaries.js';
import { compactedCount, holdings } from '../src/projections/view.js';

type Spec = Record<string, { nodes: string[]; absorbed: string[] }>;

function stateOf(spec: Spec): BuildState {
  const summaries: Record<string, SummaryRecord> = {};
  for (const [id, s] of Object.entries(spec)) {
    summaries[id] = { summaryId: id, sha256: '0'.repeat(64), position: 1, absorbedBy: null, summary: { milestoneId: `m-${id}`, compactedNodeIds: s.nodes, absorbedSummaryIds: s.absorbed } } as unknown as SummaryRecord;
  }
  return { summaries } as unknown as BuildState;
}

/** The reference: the definition read literally, recursively (fine for shallow graphs). */
function reference(spec: Spec, id: string, seen = new Set<string>()): string[] {
  const s = Object.hasOwn(spec, id) ? spec[id] : undefined;
  if (s === undefined || seen.has(id)) return [];
  seen.add(id);
  return [...s.nodes, ...s.absorbed.flatMap((a) => [a, ...reference(spec, a, seen)])];
}

/** Random summary graphs: up to 12 summaries, each absorbing any others (shared ones, cycles and unknown ids too). */
const specArb = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc.array(fc.record({ nodes: fc.array(fc.constantFrom('a', 'b', 'c', 'd', 'constructor'), { maxLength: 3 }), absorbed: fc.array(fc.nat(n + 1), { maxLength: 3 }) }), { minLength: n, maxLength: n })
    .map((xs) => Object.fromEntries(xs.map((x, i) => [`s${i}`, { nodes: x.nodes.map((v) => `${v}${i}`), absorbed: x.absorbed.map((k) => (k === n + 1 ? 'constructor' : `s${k}`)) }])) as Spec),
);

describe('holdings', () => {
  it('property: the same ids in the same order as the recursive definition, for every summary of any summary graph', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const st = stateOf(spec);
        for (const id of [...Object.keys(spec), 'missing', 'constructor']) expect(holdings(st, id)).toEqual(reference(spec, id));
      }),
      { numRuns: 300 },
    );
  });

  it('property: compactedCount is the number of distinct ids the recursive definition lists that are not summaries, for every summary of any summary graph', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const st = stateOf(spec);
        for (const id of [...Object.keys(spec), 'missing', 'constructor']) expect(compactedCount(st, id), id).toBe(new Set(reference(spec, id).filter((x) => !Object.hasOwn(spec, x))).size);
      }),
      { numRuns: 300 },
    );
  });

  it("a chain of 20,000 summaries each absorbing the one before (a long build's live summary) is listed and counted whole, not a stack overflow", () => {
    const N = 20_000;
    const spec: Spec = {};
    for (let i = 0; i < N; i++) spec[`s${i}`] = { nodes: [`n${i}`], absorbed: i > 0 ? [`s${i - 1}`] : [] };
    const held = holdings(stateOf(spec), `s${N - 1}`);
    expect(held).toHaveLength(2 * N - 1);
    expect(held.slice(0, 3)).toEqual([`n${N - 1}`, `s${N - 2}`, `n${N - 2}`]);
    expect(held.at(-1)).toBe('n0');
    expect(compactedCount(stateOf(spec), `s${N - 1}`)).toBe(N);
  });
});
