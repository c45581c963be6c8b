import { attemptOf, jobOf } from '../src/projections/build-state.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { logicalClock } from '../src/adapters/clock.js';
import type { DomainEvent, NodeKind } from '../src/events/catalogue.js';
import { canonicalSha256 } from '../src/events/hash.js';
import { compactMilestone, summaryIdOf, type CompactionVerdict } from '../src/commands/compaction.js';
import { deriveCheckpoint } from '../src/commands/checkpoint.js';
import { nextAction } from '../src/commands/next-action.js';
import type { BuildState } from '../src/projections/build-state.js';
import { rankReadyWave, readyListBytes } from '../src/projections/graph.js';
import { ProjectionStore } from '../src/projections/engine.js';
import { allProjections } from '../src/projections/all-projections.js';
import { dagArb, dagToProposal, type NodeFate } from './support/arbitraries.js';
import {
  acceptNode, attemptFinished, attemptStarted, buildInitialized, given, horizonSealed, integrationStarted, milestone, node, type BuildSpec,
} from './support/given.js';

const RUNS = { numRuns: 60 };
const clock = logicalClock();

function checkpointed(spec: BuildSpec, milestoneId: string): BuildSpec {
  const cp = deriveCheckpoint(spec.state, milestoneId, clock.now(spec.state.position + 1));
  if (!cp.ok) throw new Error(`checkpoint ${milestoneId}: ${cp.reason}`);
  return spec.when({ type: 'CheckpointWritten', data: { checkpoint: cp.checkpoint, checkpointSha256: cp.sha256, graphRevision: spec.state.graphRevision } });
}

/** A checkpoint written whatever the graph says (a forged or buggy log): the decider must still refuse. */
function forcedCheckpoint(spec: BuildSpec, milestoneId: string): BuildSpec {
  const accepted = given(buildInitialized(), horizonSealed({ detailed: [milestone(milestoneId, [node('stand-in', [], { kind: 'read-only', accepted: true })])], coarse: [] }));
  const cp = deriveCheckpoint(accepted.state, milestoneId, clock.now(1));
  if (!cp.ok) throw new Error(cp.reason);
  return spec.when({ type: 'CheckpointWritten', data: { checkpoint: cp.checkpoint, checkpointSha256: cp.sha256, graphRevision: spec.state.graphRevision } });
}

function compacted(verdict: CompactionVerdict): Extract<CompactionVerdict, { replay: false }> {
  if (!verdict.ok) throw new Error(`expected a compaction, got ${verdict.rule}: ${verdict.reason}`);
  if (verdict.replay) throw new Error('expected a new compaction, got a replay');
  return verdict;
}

function refusal(verdict: CompactionVerdict): { rule: string; reason: string } {
  if (verdict.ok) throw new Error('expected a refusal');
  return verdict;
}

const compactEvent = (v: Extract<CompactionVerdict, { replay: false }>): DomainEvent => ({ type: 'MilestoneCompacted', data: v.data });

/** m1: api (writable) <- doc (read-only, decision); m2: ui <- doc, solo. m1 accepted and checkpointed. */
function twoMilestones(compaction = false): BuildSpec {
  const sealed = given(
    buildInitialized({ compaction }),
    horizonSealed({
      detailed: [
        milestone('m1', [node('base', [], { kind: 'read-only', accepted: true, contract: 'api@1' }), node('api', ['base']), node('doc', ['api'], { kind: 'read-only' })]),
        milestone('m2', [node('ui', ['doc']), node('solo')]),
      ],
      coarse: [],
    }),
  ).when(...acceptNode('api', 'writable', 'job-1'), attemptStarted('doc'), attemptFinished('doc', 'recorded', 1, 'use REST'));
  return checkpointed(sealed, 'm1');
}

describe('R-21 compaction keeps the lineage in one summary node', () => {
  it('R-21 a checkpointed milestone and its accepted-only ancestors become one content-addressed read-only summary', () => {
    const spec = twoMilestones();
    const before = spec.state;
    const v = compacted(compactMilestone(before, 'm1', 't-compact'));
    const s = v.data.summary;
    expect(v.data.summaryId).toBe(summaryIdOf(canonicalSha256(s)));
    expect(v.data.summaryId).toMatch(/^summary-[0-9a-f]{16}$/);
    expect(v.data.summarySha256).toBe(canonicalSha256(s));
    expect(s.compactedNodeIds).toEqual(['api', 'base', 'doc']);
    expect(s.absorbedSummaryIds).toEqual([]);
    expect(s.checkpoint).toEqual({ milestoneId: 'm1', sha256: before.checkpoints['m1']!.sha256 });
    expect(s.graphBefore.revision).toBe(before.graphRevision);
    expect(s.integrationHead).toBe(before.checkpoints['m1']!.checkpoint.integrationHead);
    expect(s.acceptedCommits).toEqual([{ nodeId: 'api', commit: before.nodes['api']!.commit }]);
    expect(s.boundary).toEqual([{ nodeId: 'doc', commit: null, consumers: ['ui'] }]);
    expect(s.contracts).toEqual(['api@1']);
    expect(s.decisions).toEqual([{ nodeId: 'doc', decision: 'use REST' }]);
    expect(s.completedAt).toBe('t-compact');
    // Every evidence SHA: both attempts, the verification and the receipt.
    const receipt = jobOf(before, 'job-1')!.receipt!;
    expect(s.evidenceSha256s).toEqual(expect.arrayContaining([attemptOf(before, 'api.1')!.evidenceSha256!, attemptOf(before, 'doc.1')!.evidenceSha256!, ...receipt.evidenceSha256s]));

    spec.when(compactEvent(v)).then((after) => {
      expect(Object.keys(after.nodes).sort()).toEqual([v.data.summaryId, 'solo', 'ui'].sort());
      expect(after.nodes[v.data.summaryId]).toMatchObject({ kind: 'read-only', state: 'accepted', milestone: 'm1', deps: [], summary: true });
      expect(after.nodes['ui']!.deps).toEqual([v.data.summaryId]);
      expect(after.graphRevision).toBe(before.graphRevision + 1);
      expect(after.summaries[v.data.summaryId]).toMatchObject({ absorbedBy: null, sha256: v.data.summarySha256 });
      expect(readyListBytes(rankReadyWave(after))).toBe(readyListBytes(rankReadyWave(before)));
    });
  });

  it('R-22 an exact replay returns the existing summary and does not advance the graph revision', () => {
    const spec = twoMilestones();
    const v = compacted(compactMilestone(spec.state, 'm1', 't1'));
    const once = spec.when(compactEvent(v));
    const again = compactMilestone(once.state, 'm1', 't2');
    expect(again).toMatchObject({ ok: true, replay: true, summaryId: v.data.summaryId });
    // Even a duplicated event in the log changes nothing.
    const twice = once.when(compactEvent(v));
    expect(twice.state.graphRevision).toBe(once.state.graphRevision);
    expect({ ...twice.state, position: 0 }).toEqual({ ...once.state, position: 0 });
  });

  it('R-22 a later compaction absorbs the earlier summary; the earlier record stays in history', () => {
    let spec = twoMilestones();
    const first = compacted(compactMilestone(spec.state, 'm1', 't1'));
    spec = spec.when(compactEvent(first), ...acceptNode('ui', 'writable', 'job-2'), ...acceptNode('solo', 'writable', 'job-3'));
    spec = checkpointed(spec, 'm2');
    const second = compacted(compactMilestone(spec.state, 'm2', 't2'));
    expect(second.data.summary.absorbedSummaryIds).toEqual([first.data.summaryId]);
    expect(second.data.summary.compactedNodeIds).toEqual(['solo', 'ui']);
    expect(second.data.summary.contracts).toEqual(['api@1']); // carried from the absorbed summary
    spec.when(compactEvent(second)).then((s) => {
      expect(Object.keys(s.nodes)).toEqual([second.data.summaryId]);
      expect(s.summaries[first.data.summaryId]!.absorbedBy).toBe(second.data.summaryId);
      expect(Object.keys(s.summaries).sort()).toEqual([first.data.summaryId, second.data.summaryId].sort());
    });
  });
});

describe('R-22 compaction refusals', () => {
  const base = () => given(
    buildInitialized(),
    horizonSealed({ detailed: [milestone('m1', [node('w'), node('r', [], { kind: 'read-only' })]), milestone('m2', [node('next', ['w'])])], coarse: [] }),
  );

  it('R-21 a milestone without a checkpoint is refused', () => {
    expect(refusal(compactMilestone(base().state, 'm1', 't'))).toMatchObject({ rule: 'R-21', reason: expect.stringContaining('no checkpoint') });
  });

  const cases: [string, DomainEvent[], RegExp][] = [
    ['queued', [], /'w' of milestone 'm1' is queued/],
    ['running', [attemptStarted('w')], /'w' .* is running/],
    ['validating', [attemptStarted('w'), attemptFinished('w', 'committed')], /'w' .* is validating/],
    ['revising', [attemptStarted('w'), attemptFinished('w', 'failed')], /'w' .* is revising/],
    ['blocked', [1, 2, 3].flatMap((k) => [attemptStarted('w', k), attemptFinished('w', 'failed', k)]), /'w' .* is blocked/],
    ['evidence-incomplete (writable without a receipt)', [attemptStarted('w'), attemptFinished('w', 'recorded')], /evidence-incomplete/],
    ['retry-relevant (an integration in flight)', [...acceptNode('w', 'writable', 'job-1'), attemptStarted('r'), attemptFinished('r', 'recorded'), integrationStarted('job-2', ['r'])], /retry-relevant: integration job-2 is in flight/],
  ];
  for (const [what, events, reason] of cases) {
    it(`R-22 an included node that is ${what} is refused with the reason`, () => {
      const spec = forcedCheckpoint(base().when(...events, ...(what.startsWith('retry') ? [] : [attemptStarted('r'), attemptFinished('r', 'recorded')])), 'm1');
      const r = refusal(compactMilestone(spec.state, 'm1', 't'));
      expect(r.rule).toBe('R-22');
      expect(r.reason).toMatch(reason);
    });
  }

  it('R-22 R-10 a summary never reorders the ready list: live nodes keep their plan\'s order, so the compaction is made at once', () => {
    // Over the compacted graph Kahn would emit 'c' before 'b' (the summary id sorts after 'c'),
    // which once made this compaction wait; the plan's own order ('a', 'b', 'c') does not move.
    const spec = checkpointed(given(
      buildInitialized({ compaction: true }),
      horizonSealed({ detailed: [milestone('m1', [node('a', [], { kind: 'read-only', accepted: true })]), milestone('m2', [node('b', ['a']), node('c')])], coarse: [] }),
    ), 'm1');
    expect(rankReadyWave(spec.state)).toEqual(['b', 'c']);
    expect(nextAction(spec.state)).toEqual({ kind: 'compact', milestoneId: 'm1' });
    const v = compactMilestone(spec.state, 'm1', 't');
    if (!v.ok || v.replay) throw new Error('expected a compaction');
    const after = spec.when(compactEvent(v)).state;
    expect(after.nodes.b!.deps).toEqual([v.data.summaryId]);
    expect(rankReadyWave(after)).toEqual(['b', 'c']);
  });
});

// ---- properties over random graphs -----------------------------------------------------

interface Case { spec: BuildSpec; events: DomainEvent[] }

/**
 * A random DAG in one or two milestones: the first fully accepted and checkpointed, nodes of the
 * second meeting random fates (accepted, left, running, committed, failed).
 */
const caseArb = dagArb({ minNodes: 2, maxNodes: 12, maxMilestones: 2 }).chain((dag) =>
  fc.record({
    dag: fc.constant(dag),
    fates: fc.array(fc.constantFrom<NodeFate>('accept', 'accept', 'leave', 'run', 'commit', 'fail'), { minLength: dag.nodes.length, maxLength: dag.nodes.length }),
    preaccepted: fc.array(fc.boolean(), { minLength: dag.nodes.length, maxLength: dag.nodes.length }),
  }),
).map(({ dag, fates, preaccepted }): Case => {
  // Read-only nodes of the first milestone without deps may start accepted (like `accepted: true`).
  const proposal = dagToProposal(dag);
  const starts = new Set<string>();
  for (const m of proposal.detailed.slice(0, 1)) {
    for (const n of m.nodes) {
      const i = dag.nodes.findIndex((d) => d.id === n.id);
      if (n.kind === 'read-only' && n.deps.length === 0 && preaccepted[i]) (n as { accepted?: boolean }).accepted = true, starts.add(n.id);
    }
  }
  const events: DomainEvent[] = [buildInitialized(), horizonSealed(proposal)];
  const accepted = new Set(starts);
  let job = 0;
  const accept = (id: string, kind: NodeKind) => {
    events.push(...acceptNode(id, kind, `job-${++job}`));
    accepted.add(id);
  };
  for (const n of dag.nodes) if (n.milestone === 0 && !accepted.has(n.id)) accept(n.id, n.kind);
  let spec = given(...events);
  spec = checkpointed(spec, dag.milestones[0]!);
  dag.nodes.forEach((n, i) => {
    if (n.milestone !== 1 || !n.deps.every((d) => accepted.has(d))) return;
    const fate = fates[i]!;
    if (fate === 'accept') {
      spec = spec.when(...acceptNode(n.id, n.kind, `job-${++job}`));
      accepted.add(n.id);
    } else if (fate === 'run') spec = spec.when(attemptStarted(n.id));
    else if (fate === 'commit' && n.kind === 'writable') spec = spec.when(attemptStarted(n.id), attemptFinished(n.id, 'committed'));
    else if (fate === 'fail') spec = spec.when(attemptStarted(n.id), attemptFinished(n.id, 'failed'));
  });
  return { spec, events };
});

function liveAndRebuiltDumps(spec: BuildSpec): { live: string; rebuilt: string } {
  const live = ProjectionStore.open(':memory:', allProjections());
  const rebuilt = ProjectionStore.open(':memory:', allProjections());
  try {
    for (const e of spec.log) live.catchUp([e]); // incremental, one event at a time, like the controller
    rebuilt.rebuild(spec.log);
    return { live: live.dumpSha256(), rebuilt: rebuilt.dumpSha256() };
  } finally {
    live.close();
    rebuilt.close();
  }
}

describe('R-22 properties of compaction over random accepted graphs', () => {
  it('R-22 the ordered ready list is byte-identical before and after every compaction the host makes; the only refusal of a checkpointed, accepted milestone is a changed ready list', () => {
    let made = 0;
    fc.assert(
      fc.property(caseArb, ({ spec }) => {
        const m1 = Object.keys(spec.state.checkpoints)[0]!;
        const before = readyListBytes(rankReadyWave(spec.state));
        const v = compactMilestone(spec.state, m1, 't');
        if (!v.ok) {
          expect(v.rule).toBe('R-22');
          expect(v.reason).toContain('would change the ordered ready list');
          return;
        }
        made++;
        const after = spec.when(compactEvent(compacted(v))).state; // the catalogue-validated event, folded the log's way
        expect(readyListBytes(rankReadyWave(after))).toBe(before);
        // Nothing unfinished was compacted; everything compacted was accepted.
        for (const id of compacted(v).data.summary.compactedNodeIds) expect(spec.state.nodes[id]!.state).toBe('accepted');
        for (const id in spec.state.nodes) if (spec.state.nodes[id]!.state !== 'accepted') expect(after.nodes[id]).toEqual(expect.objectContaining({ state: spec.state.nodes[id]!.state }));
      }),
      RUNS,
    );
    expect(made).toBeGreaterThan(RUNS.numRuns / 2);
  });

  it('R-22 compacting twice equals compacting once', () => {
    fc.assert(
      fc.property(caseArb, ({ spec }) => {
        const m1 = Object.keys(spec.state.checkpoints)[0]!;
        const v = compactMilestone(spec.state, m1, 't');
        if (!v.ok) return;
        const once = spec.when(compactEvent(compacted(v)));
        const replay = compactMilestone(once.state, m1, 'later');
        expect(replay).toMatchObject({ ok: true, replay: true, summaryId: compacted(v).data.summaryId });
        const twice = once.when(compactEvent(compacted(v)));
        expect({ ...twice.state, position: 0 }).toEqual({ ...once.state, position: 0 });
      }),
      RUNS,
    );
  });

  it('R-5 rebuilding the projections from the log after compactions gives the live dump SHA', () => {
    fc.assert(
      fc.property(caseArb, ({ spec }) => {
        const m1 = Object.keys(spec.state.checkpoints)[0]!;
        const v = compactMilestone(spec.state, m1, 't');
        const done = v.ok && !v.replay ? spec.when(compactEvent(v)) : spec;
        const { live, rebuilt } = liveAndRebuiltDumps(done);
        expect(live).toBe(rebuilt);
      }),
      { numRuns: 25 },
    );
  });
});

export type { BuildState };
