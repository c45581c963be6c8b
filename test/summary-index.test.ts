/**
 * The summary indexes behind `compactedInto`, `liveSummaryOf` and `summaryOfMilestone`
 * (src/projections/summaries.ts; milestones are shared by several summaries here, as a log not
 * written by the host may have them):
 * one index shared along a line of states (a state gets the one of the state it was folded from
 * and adds its new summaries), which must answer for every state exactly what a scan of that
 * state's own summaries answers — older states (folded before a later compaction), states folded
 * differently from one parent, and a state changed in place alike.
 */
import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import { carrySummaryIndex, compactedInto, liveSummaryOf, summaryOfMilestone, type SummaryRecord } from '../src/projections/summaries.js';

type Summaries = Record<string, SummaryRecord>;
const POOL = Array.from({ length: 12 }, (_, i) => `n${i}`);

/** The oracle: a scan of the state's own summaries. */
function scan(s: Summaries, nodeId: string): string | undefined {
  if (Object.hasOwn(s, nodeId)) return nodeId;
  return Object.keys(s).find((id) => s[id]!.summary.compactedNodeIds.includes(nodeId));
}
/** The oracle of summaryOfMilestone: the first of the state's summaries, in its order, of that milestone. */
function scanMilestone(s: Summaries, milestoneId: string): SummaryRecord | undefined {
  return Object.values(s).find((r) => r.summary.milestoneId === milestoneId);
}
function scanLive(s: Summaries, nodeId: string): string | undefined {
  let id = scan(s, nodeId);
  while (id !== undefined && s[id]!.absorbedBy !== null) id = s[id]!.absorbedBy!;
  return id;
}

let made = 0;
/**
 * Add a summary compacting `nodes` and absorbing every live summary, in a draft (as applyCompaction
 * does). Its id is its place in its line of states, so states folded differently from one parent
 * hold different summaries under one id (as a log not written by the host may).
 */
function addSummary(d: Summaries, nodes: readonly string[]): void {
  made++;
  const id = `summary-${(Object.keys(d).length + 1).toString(16).padStart(16, '0')}`;
  const live = Object.keys(d).filter((k) => d[k]!.absorbedBy === null);
  d[id] = { summaryId: id, sha256: '0'.repeat(64), position: made, absorbedBy: null, summary: { milestoneId: `m${made % 4}`, compactedNodeIds: [...nodes], absorbedSummaryIds: live } } as unknown as SummaryRecord;
  for (const k of live) (d[k] as { absorbedBy: string | null }).absorbedBy = id;
}

/** Nodes not yet compacted in this state, picked by the mask (a node is compacted once in a build, R-13). */
const pick = (s: Summaries, mask: readonly boolean[]): string[] => POOL.filter((n, i) => mask[i] && scan(s, n) === undefined);

const stepArb = fc.record({ from: fc.nat(), mask: fc.array(fc.boolean(), { minLength: POOL.length, maxLength: POOL.length }), look: fc.boolean() });

function expectAnswers(s: Summaries, label: string): void {
  for (const n of [...POOL, ...Object.keys(s), 'summary-ffffffffffffffff', 'constructor']) {
    expect(compactedInto(s, n), `${label}: compactedInto ${n}`).toBe(scan(s, n));
    expect(liveSummaryOf(s, n), `${label}: liveSummaryOf ${n}`).toBe(scanLive(s, n));
  }
  for (const m of ['m0', 'm1', 'm2', 'm3', 'm4']) expect(summaryOfMilestone(s, m), `${label}: summaryOfMilestone ${m}`).toBe(scanMilestone(s, m));
}

describe('the compacted-node index', () => {
  it('property: for states folded from any earlier one (branches, one summary id standing for different summaries in them), each answered before and after later folds, the index answers what a scan does', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 14 }), (steps) => {
        const states: Summaries[] = [{}];
        for (const [k, st] of steps.entries()) {
          const prev = states[st.from % states.length]!;
          if (st.look) compactedInto(prev, 'n0'); // the parent's index exists before the fold, as in a controller
          const next = produce(prev, (d) => addSummary(d, pick(prev, st.mask)));
          carrySummaryIndex(prev, next);
          states.push(next);
          states.forEach((s, i) => expectAnswers(s, `after step ${k}, state ${i}`));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('property: a state changed in place (a fold in place) is answered after every change', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 10 }), (steps) => {
        const s: Summaries = {};
        for (const [k, st] of steps.entries()) {
          if (st.look) expectAnswers(s, `before step ${k}`);
          addSummary(s, pick(s, st.mask));
          expectAnswers(s, `after step ${k}`);
        }
      }),
      { numRuns: 200 },
    );
  });
});
