import fc from 'fast-check';
import type { Draft } from 'immer';
import { describe, expect, it } from 'vitest';
import { canonicalJson, stripUndefined, type JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import type { Checkpoint, CompactionSummary } from '../src/events/catalogue.js';
import { buildView, checkpointHeadOf, evolveBuild, evolveBuildInPlace, initialBuildState, wholeCheckpoint, type BuildState } from '../src/projections/build-state.js';
import { summaryHeadOf, wholeSummary } from '../src/projections/summaries.js';
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
          { position: 2, streamId: 's', revision: 1, type: 'HorizonSealed', schemaVersion: 1, data: { horizonId: 'h', detailed: [], revision: 1, nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 3, streamId: 's', revision: 2, type: 'HorizonRenewed', schemaVersion: 1, data: { horizonId: 'h', detailed: [], revision: 2, nodes: [{ id: 'b', kind: 'writable', deps: ['a'], milestone: 'm2' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 4, streamId: 's', revision: 3, type: 'MilestoneCompacted', schemaVersion: 1, data: { summaryId: 'summary-0000000000000001', summarySha256: 'f', summary: { milestoneId: 'm1', compactedNodeIds: ['a'], absorbedSummaryIds: [] } }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
          { position: 5, streamId: 's', revision: 4, type: 'HorizonRenewed', schemaVersion: 1, data: { horizonId: 'h', detailed: [], revision: 3, nodes: [{ id: 'c', kind: 'writable', deps: ['a'], milestone: 'm2' }] }, metadata: { recordedAt: 't' }, prevHash: '', hash: '' },
        ] as StoredEvent[]]],
      },
    );
  });

  it('R-6 (property) for all build logs and every cut k, folding on from the view at k gives the view of the whole fold (same graph, same SHA-256)', () => {
    fc.assert(fc.property(split, ([log, k]) => viewCommutes(buildView, log, k)), { numRuns: 400 });
  });

  it('R-6 the property catches a view that drops what the fold reads: without summaries, without jobs, or with summary heads that drop the compacted ids, it fails', () => {
    const noSummaries = (s: BuildState): BuildState => ({ ...buildView(s), summaries: {} });
    const noJobs = (s: BuildState): BuildState => ({ ...buildView(s), jobs: [] });
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

  it('R-16 (property) for all build logs, the state keeps whole the checkpoints written while their window was open and still in it, and live summaries; of every other checkpoint, and of every absorbed summary, its head (decision 0032)', () => {
    fc.assert(
      fc.property(buildLogArb, (log) => {
        const s = foldImmutable(log);
        // From the log alone: each milestone's last checkpoint and whether its window has stayed
        // open since, each summary's first compaction and whether a later one absorbed it.
        const checkpoints = new Map<string, { checkpoint: Checkpoint; open: boolean }>();
        const summaries = new Map<string, { summary: CompactionSummary; absorbed: boolean }>();
        let window: string[] = [];
        for (const e of log) {
          const d = e.data as Record<string, unknown>;
          if (e.type === 'HorizonSealed' || e.type === 'HorizonRenewed') {
            window = (d.detailed as { id: string }[]).map((m) => m.id);
            for (const [m, c] of checkpoints) if (!window.includes(m)) c.open = false;
          }
          if (e.type === 'CheckpointWritten') {
            const checkpoint = d.checkpoint as Checkpoint;
            checkpoints.set(checkpoint.milestoneId, { checkpoint, open: window.includes(checkpoint.milestoneId) });
          }
          if (e.type === 'MilestoneCompacted' && !summaries.has(d.summaryId as string)) {
            const summary = d.summary as CompactionSummary;
            for (const id of summary.absorbedSummaryIds) if (summaries.has(id)) summaries.get(id)!.absorbed = true;
            summaries.set(d.summaryId as string, { summary, absorbed: false });
          }
        }
        expect(Object.keys(s.checkpoints).sort()).toEqual([...checkpoints.keys()].sort());
        for (const [m, c] of checkpoints) {
          if (c.open) expect(s.checkpoints[m]!.checkpoint, m).toBe(c.checkpoint);
          else expect(s.checkpoints[m]!.checkpoint, m).toEqual(checkpointHeadOf(c.checkpoint));
        }
        expect(Object.keys(s.summaries).sort()).toEqual([...summaries.keys()].sort());
        for (const [id, r] of summaries) {
          expect(s.summaries[id]!.absorbedBy !== null, id).toBe(r.absorbed);
          if (r.absorbed) expect(s.summaries[id]!.summary, id).toEqual(summaryHeadOf(r.summary));
          else expect(s.summaries[id]!.summary, id).toBe(r.summary);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('R-16 a checkpoint keeps its head once a renewal closes its window, and a summary once a later one absorbs it; asked for whole then, each refuses in one line naming the event that has it (decision 0032)', () => {
    const cp = (milestoneId: string) => ({
      milestoneId, horizonId: 'h', horizonRevision: 1, graphRevision: 2, graphSha256: 'a'.repeat(64), integrationHead: 'b'.repeat(40),
      acceptedNodes: [{ id: 'a', kind: 'writable', commit: 'c'.repeat(40) }], contracts: ['api@1'], foundations: [], decisions: [{ nodeId: 'a', decision: 'd' }],
      metrics: { attempts: 1, integrations: 1, nodes: 1 }, nextHorizon: { detailed: ['m2'], coarse: [] }, createdAt: 't',
    });
    const summary = {
      milestoneId: 'm1', checkpoint: { milestoneId: 'm1', sha256: 'e'.repeat(64) }, graphBefore: { revision: 2, sha256: 'a'.repeat(64) }, contracts: ['api@1'], foundations: [],
      integrationHead: 'b'.repeat(40), acceptedCommits: [{ nodeId: 'a', commit: 'c'.repeat(40) }], boundary: [], evidenceSha256s: ['f'.repeat(64)], decisions: [{ nodeId: 'a', decision: 'd' }],
      completedAt: 't', compactedNodeIds: ['a'], absorbedSummaryIds: [],
    };
    const later = { ...summary, milestoneId: 'm2', compactedNodeIds: [], absorbedSummaryIds: ['summary-0000000000000001'] };
    const e = (position: number, type: string, data: Record<string, unknown>): StoredEvent => ({ position, streamId: 's', revision: position - 1, type, schemaVersion: 1, data: data as JsonValue, metadata: { recordedAt: 't' }, prevHash: '', hash: '' });
    const horizon = (revision: number, detailed: string[]) => ({ horizonId: 'h', revision, planSha256: String(revision).repeat(64), detailed: detailed.map((id) => ({ id, title: id })), coarse: [], pins: {}, callId: `c${revision}`, nodes: [] });
    const upTo = (n: number): BuildState => foldImmutable([
      e(1, 'BuildInitialized', { buildId: 'b', settings: { maxAttempts: 3, compaction: true } }),
      e(2, 'HorizonSealed', { ...horizon(1, ['m1']), nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }] }),
      e(3, 'CheckpointWritten', { checkpoint: cp('m1'), checkpointSha256: 'e'.repeat(64) }),
      e(4, 'MilestoneCompacted', { summaryId: 'summary-0000000000000001', summarySha256: 'f'.repeat(64), summary, graphRevision: 3 }),
      e(5, 'HorizonRenewed', horizon(2, ['m2'])),
      e(6, 'MilestoneCompacted', { summaryId: 'summary-0000000000000002', summarySha256: 'd'.repeat(64), summary: later, graphRevision: 4 }),
    ].slice(0, n));
    const open = upTo(4);
    expect(wholeCheckpoint(open.checkpoints['m1']!)).toEqual(cp('m1'));
    expect(wholeSummary(open.summaries['summary-0000000000000001']!)).toEqual(summary);
    const renewed = upTo(6);
    const { acceptedNodes: _a, contracts: _c, foundations: _f, decisions: _d, nextHorizon: _n, ...cpHead } = cp('m1');
    expect(renewed.checkpoints['m1']).toEqual({ checkpoint: cpHead, sha256: 'e'.repeat(64), position: 3 });
    expect(() => wholeCheckpoint(renewed.checkpoints['m1']!)).toThrow(/^checkpoint of milestone m1 is held as its head only \(its window was renewed\): read it from its CheckpointWritten event$/);
    const { contracts: _sc, foundations: _sf, acceptedCommits: _sa, boundary: _sb, evidenceSha256s: _se, decisions: _sd, ...summaryHead } = summary;
    expect(renewed.summaries['summary-0000000000000001']!.summary).toEqual(summaryHead);
    expect(renewed.summaries['summary-0000000000000001']!.absorbedBy).toBe('summary-0000000000000002');
    expect(() => wholeSummary(renewed.summaries['summary-0000000000000001']!)).toThrow(/^summary summary-0000000000000001 is held as its head only \(it was absorbed\): read it from its MilestoneCompacted event$/);
    expect(wholeSummary(renewed.summaries['summary-0000000000000002']!)).toEqual(later); // live: whole
    // The view keeps what the state keeps of them.
    const v = buildView(renewed);
    expect(v.checkpoints).toBe(renewed.checkpoints);
    expect(v.summaries).toBe(renewed.summaries);
  });

  it('R-6 a view keeps what is open, each node\'s latest attempt and the planner calls, and drops finished attempts before the latest', () => {
    const e = (position: number, type: string, data: Record<string, unknown>): StoredEvent => ({ position, streamId: 's', revision: position - 1, type, schemaVersion: 1, data: data as JsonValue, metadata: { recordedAt: 't' }, prevHash: '', hash: '' });
    const s = foldImmutable([
      e(1, 'BuildInitialized', { buildId: 'b', settings: { maxAttempts: 3 } }),
      e(2, 'HorizonSealed', { horizonId: 'h', detailed: [], revision: 1, nodes: [{ id: 'a', kind: 'writable', deps: [], milestone: 'm1' }, { id: 'b', kind: 'writable', deps: [], milestone: 'm1' }] }),
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
