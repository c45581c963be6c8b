import fc from 'fast-check';
import type { Draft } from 'immer';
import { describe, expect, it } from 'vitest';
import { canonicalJson, stripUndefined, type JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { buildView, evolveBuild, evolveBuildInPlace, initialBuildState, wholeCheckpoint, type BuildState } from '../src/projections/build-state.js';
import { wholeSummary } from '../src/projections/summaries.js';
import { graphSha256 } from '../src/projections/graph.js';
import { buildLogArb } from './support/build-events.js';

// The two cheap ways through the build fold that time travel and the audit take:
// folding in place on a private copy, and starting from the view of a state (closed history
// dropped). The oracle for both is the ordinary immutable fold, event by event from the start.

const bytes = (s: BuildState): string => canonicalJson(stripUndefined(s) as unknown as JsonValue);

function foldImmutable(events: readonly StoredEvent[], from: BuildState = initialBuildState): BuildState {
  let s = from;
  for (const e of events) s = evolveBuild(s, e);
  return s;
}

const split = buildLogArb.chain((log) => fc.tuple(fc.constant(log), fc.integer({ min: 0, max: log.length })));

/** The commuting law of a view: view(fold(view(fold(E[0..k])), E[k..])) = view(fold(E)). */
function viewCommutes(view: (s: BuildState) => BuildState, log: readonly StoredEvent[], k: number): void {
  const whole = view(foldImmutable(log));
  const resumed = view(foldImmutable(log.slice(k), view(foldImmutable(log.slice(0, k)))));
  expect(bytes(resumed)).toBe(bytes(whole));
  expect(resumed.graphRevision).toBe(whole.graphRevision);
  expect(graphSha256(resumed.nodes)).toBe(graphSha256(whole.nodes));
}

describe('R-6 R-37 the build fold in place and from a view', () => {
  it('R-6 (property) for all build logs, folding in place on a private copy gives the immutable fold at every position', () => {
    fc.assert(
      fc.property(buildLogArb, (log) => {
        const mine = structuredClone(initialBuildState) as Draft<BuildState>;
        let oracle = initialBuildState;
        for (const e of log) {
          evolveBuildInPlace(mine, e);
          oracle = evolveBuild(oracle, e);
          expect(bytes(mine as BuildState)).toBe(bytes(oracle));
          expect(graphSha256(mine.nodes as BuildState['nodes'])).toBe(graphSha256(oracle.nodes));
        }
        expect(bytes(initialBuildState)).toBe(bytes(foldImmutable([]))); // the shared initial state is never touched
      }),
      {
        numRuns: 300,
        // Seen once: a renewal naming a node compacted by a fold in place read a stale index of
        // compacted ids (cached by the identity of a summaries object that had since grown).
        examples: [[[
          { position: 1, streamId: 's', revision: 0, type: 'BuildInitialized', schemaVersion: 1, data: { buildId: 'b', settings: { maxAttempts: 3, compaction: true } }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 2, streamId: 's', revision: 1, type: 'HorizonSealed', schemaVersion: 1, data: { horizonId: 'h', revision: 1, nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 3, streamId: 's', revision: 2, type: 'HorizonRenewed', schemaVersion: 1, data: { horizonId: 'h', revision: 2, nodes: [{ id: 'b', kind: 'writable', deps: ['a'], milestone: 'm2' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 4, streamId: 's', revision: 3, type: 'MilestoneCompacted', schemaVersion: 1, data: { summaryId: 'summary-0000000000000001', summarySha256: 'f', summary: { milestoneId: 'm1', compactedNodeIds: ['a'], absorbedSummaryIds: [] } }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 5, streamId: 's', revision: 4, type: 'HorizonRenewed', schemaVersion: 1, data: { horizonId: 'h', revision: 3, nodes: [{ id: 'c', kind: 'writable', deps: ['a'], milestone: 'm2' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
        ] as StoredEvent[]]],
      },
    );
  });

  it('R-6 (property) for all build logs and every cut k, folding on from the view at k gives the view of the whole fold (same graph, same SHA-256)', () => {
    fc.assert(fc.property(split, ([log, k]) => viewCommutes(buildView, log, k)), { numRuns: 400 });
  });

  it('R-6 the property catches a view that drops what the fold reads: without summaries, without jobs, or with summary heads that drop the compacted ids, it fails', () => {
    const noSummaries = (s: BuildState): BuildState => ({ ...buildView(s), summaries: {} });
    const noJobs = (s: BuildState): BuildState => ({ ...buildView(s), jobs: {} });
    // Decision 0032: a summary's head keeps its compacted ids, which the fold maps dependencies by.
    const noCompactedIds = (s: BuildState): BuildState => {
      const v = buildView(s);
      return { ...v, summaries: Object.fromEntries(Object.entries(v.summaries).map(([id, r]) => [id, { ...r, summary: { ...r.summary, compactedNodeIds: [] } }])) };
    };
    for (const [name, broken] of [['no summaries', noSummaries], ['no jobs', noJobs], ['no compacted ids', noCompactedIds]] as const) {
      const run = fc.check(fc.property(split, ([log, k]) => viewCommutes(broken, log, k)), { numRuns: 2000, seed: 42 });
      expect(run.failed, `a broken view (${name}) passed 2000 runs`).toBe(true);
    }
  });

  it('R-6 (property) a view is its own view, and keeps of each checkpoint and absorbed summary its head only, live summaries whole: asked for a head whole, it refuses in one line (decision 0032)', () => {
    fc.assert(
      fc.property(buildLogArb, (log) => {
        const s = foldImmutable(log);
        const v = buildView(s);
        expect(bytes(buildView(v))).toBe(bytes(v));
        expect(Object.keys(v.checkpoints)).toEqual(Object.keys(s.checkpoints));
        expect(Object.keys(v.summaries)).toEqual(Object.keys(s.summaries));
        for (const id of Object.keys(v.checkpoints)) {
          expect(Object.keys(v.checkpoints[id]!.checkpoint).some((k) => ['acceptedNodes', 'contracts', 'foundations', 'decisions', 'nextHorizon'].includes(k))).toBe(false);
          expect(() => wholeCheckpoint(v.checkpoints[id]!)).toThrow(/^checkpoint of milestone .* is held as its head only \(the build view\): this needs the whole build state$/);
        }
        for (const id of Object.keys(v.summaries)) {
          const { summary, ...rest } = v.summaries[id]!;
          const { summary: whole, ...wholeRest } = s.summaries[id]!;
          expect(rest).toEqual(wholeRest);
          expect(summary.compactedNodeIds).toEqual(whole.compactedNodeIds);
          expect(summary.absorbedSummaryIds).toEqual(whole.absorbedSummaryIds);
          if (wholeRest.absorbedBy === null) expect(summary).toBe(whole);
          else expect(() => wholeSummary(v.summaries[id]!)).toThrow(/^summary .* is held as its head only \(an absorbed summary in the build view\): this needs the whole build state$/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('R-6 a checkpoint and an absorbed summary as the log carries them are whole in the build state and heads in its view', () => {
    const cp = {
      milestoneId: 'm1', horizonId: 'h', horizonRevision: 1, graphRevision: 2, graphSha256: 'a'.repeat(64), integrationHead: 'b'.repeat(40),
      acceptedNodes: [{ id: 'a', kind: 'writable', commit: 'c'.repeat(40) }], contracts: ['api@1'], foundations: [], decisions: [{ nodeId: 'a', decision: 'd' }],
      metrics: { attempts: 1, integrations: 1, nodes: 1 }, nextHorizon: { detailed: ['m2'], coarse: [] }, createdAt: 't',
    };
    const summary = {
      milestoneId: 'm1', checkpoint: { milestoneId: 'm1', sha256: 'e'.repeat(64) }, graphBefore: { revision: 2, sha256: 'a'.repeat(64) }, contracts: ['api@1'], foundations: [],
      integrationHead: 'b'.repeat(40), acceptedCommits: [{ nodeId: 'a', commit: 'c'.repeat(40) }], boundary: [], evidenceSha256s: ['f'.repeat(64)], decisions: [{ nodeId: 'a', decision: 'd' }],
      completedAt: 't', compactedNodeIds: ['a'], absorbedSummaryIds: [],
    };
    const later = { ...summary, milestoneId: 'm2', compactedNodeIds: [], absorbedSummaryIds: ['summary-0000000000000001'] };
    const e = (position: number, type: string, data: Record<string, unknown>): StoredEvent => ({ position, streamId: 's', revision: position - 1, type, schemaVersion: 1, data: data as JsonValue, metadata: { recordedAt: 't' }, prevHash: '', hash: '' });
    const s = foldImmutable([
      e(1, 'BuildInitialized', { buildId: 'b', settings: { maxAttempts: 3, compaction: true } }),
      e(2, 'HorizonSealed', { horizonId: 'h', revision: 1, nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }] }),
      e(3, 'CheckpointWritten', { checkpoint: cp, checkpointSha256: 'e'.repeat(64) }),
      e(4, 'MilestoneCompacted', { summaryId: 'summary-0000000000000001', summarySha256: 'f'.repeat(64), summary, graphRevision: 3 }),
      e(5, 'MilestoneCompacted', { summaryId: 'summary-0000000000000002', summarySha256: 'd'.repeat(64), summary: later, graphRevision: 4 }),
    ]);
    expect(wholeCheckpoint(s.checkpoints['m1']!)).toEqual(cp);
    expect(wholeSummary(s.summaries['summary-0000000000000001']!)).toEqual(summary);
    const v = buildView(s);
    const { acceptedNodes: _a, contracts: _c, foundations: _f, decisions: _d, nextHorizon: _n, ...cpHead } = cp;
    expect(v.checkpoints['m1']).toEqual({ checkpoint: cpHead, sha256: 'e'.repeat(64), position: 3 });
    const { contracts: _sc, foundations: _sf, acceptedCommits: _sa, boundary: _sb, evidenceSha256s: _se, decisions: _sd, ...summaryHead } = summary;
    expect(v.summaries['summary-0000000000000001']!.summary).toEqual(summaryHead);
    expect(v.summaries['summary-0000000000000001']!.absorbedBy).toBe('summary-0000000000000002');
    expect(v.summaries['summary-0000000000000002']!.summary).toEqual(later); // live: whole
  });

  it('R-6 a view keeps what is open, each node\'s latest attempt and the planner calls, and drops finished attempts before the latest', () => {
    const e = (position: number, type: string, data: Record<string, unknown>): StoredEvent => ({ position, streamId: 's', revision: position - 1, type, schemaVersion: 1, data: data as JsonValue, metadata: { recordedAt: 't' }, prevHash: '', hash: '' });
    const s = foldImmutable([
      e(1, 'BuildInitialized', { buildId: 'b', settings: { maxAttempts: 3 } }),
      e(2, 'HorizonSealed', { horizonId: 'h', revision: 1, nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }, { id: 'b', kind: 'writable', deps: [], milestone: 'm1' }] }),
      e(3, 'PlannerInvoked', { callId: 'c1', purpose: 'plan' }),
      e(4, 'PlannerInvoked', { callId: 'c2', purpose: 'renewal' }),
      e(5, 'PlannerReturned', { callId: 'c1' }),
      e(6, 'AttemptStarted', { attemptId: 'a.1', nodeId: 'a', attempt: 1 }),
      e(7, 'AttemptStarted', { attemptId: 'b.1', nodeId: 'b', attempt: 1 }),
      e(8, 'AttemptFinished', { attemptId: 'a.1', nodeId: 'a', outcome: 'failed', adopted: false }),
      e(9, 'AttemptFinished', { attemptId: 'b.1', nodeId: 'b', outcome: 'failed', adopted: false }),
      e(10, 'AttemptStarted', { attemptId: 'a.2', nodeId: 'a', attempt: 2 }),
    ]);
    const v = buildView(s);
    // Every planner call (one per round) stays; a finished attempt stays only while it is its node's latest.
    expect(Object.keys(v.plannerCalls).sort()).toEqual(['c1', 'c2']);
    expect(JSON.stringify(v.attempts)).toContain('"a.2"');
    expect(JSON.stringify(v.attempts)).toContain('"b.1"');
    expect(JSON.stringify(v.attempts)).not.toContain('"a.1"');
    expect(JSON.stringify(v.revisionPositions)).toBe(JSON.stringify(buildView(v).revisionPositions));
    expect(v.nodes).toBe(s.nodes);
    expect(graphSha256(v.nodes)).toBe(graphSha256(s.nodes));
  });
});
