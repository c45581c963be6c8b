import { attemptOf, buildView } from '../src/projections/build-state.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deriveCheckpoint } from '../src/commands/checkpoint.js';
import { plannerInputOf } from '../src/commands/effect-inputs.js';
import { nextAction } from '../src/commands/next-action.js';
import { attemptIdOf, jobIdOf, plannerCallId } from '../src/commands/call-ids.js';
import { inFlightNodes, rankReadyWave } from '../src/projections/graph.js';
import { progressCaseArb } from './support/arbitraries.js';
import {
  acceptNode, attemptFinished, attemptStarted, BuildSpec, buildInitialized, coarse, given, horizonRenewed, horizonSealed, integrationFailed,
  integrationPromoted, integrationStarted, milestone, mustValidate, node, progressedBuild, sha256Of,
} from './support/given.js';

/** m1: api (depth 1: ui needs it) and solo; m2: home. */
function sealed(): BuildSpec {
  return given(
    buildInitialized(),
    horizonSealed({ detailed: [milestone('m1', [node('api'), node('solo'), node('ui', ['api'])]), milestone('m2', [node('home', ['ui'])])], coarse: [coarse('release')] }),
  );
}

function checkpointed(spec: BuildSpec, id: string): BuildSpec {
  const v = deriveCheckpoint(spec.state, id, '2026-01-03T00:00:00.000Z');
  if (!v.ok) throw new Error(v.reason);
  return spec.when({ type: 'CheckpointWritten', data: { checkpoint: v.checkpoint, checkpointSha256: v.sha256, graphRevision: spec.state.graphRevision } });
}

describe('R-17 controller decision order', () => {
  it('R-17 an empty log is uninitialized; an initialized build seals a horizon first', () => {
    expect(nextAction(given().state)).toEqual({ kind: 'uninitialized' });
    expect(nextAction(given(buildInitialized()).state)).toEqual({ kind: 'plan', purpose: 'seal', callId: 'plan.seal.0', inDoubt: false });
    const invoked = given(buildInitialized(), { type: 'PlannerInvoked', data: { callId: 'plan.seal.0', purpose: 'seal', horizonRevision: 0, graphRevision: 0 } });
    expect(nextAction(invoked.state)).toEqual({ kind: 'plan', purpose: 'seal', callId: 'plan.seal.0', inDoubt: true });
  });

  it('R-17 a rejected proposal blocks with its reason instead of planning again', () => {
    const rejected = given(
      buildInitialized(),
      { type: 'PlannerInvoked', data: { callId: 'plan.seal.0', purpose: 'seal', horizonRevision: 0, graphRevision: 0 } },
      { type: 'PlannerReturned', data: { callId: 'plan.seal.0', proposal: { detailed: [] }, proposalSha256: sha256Of('p'), graphRevision: 0 } },
      { type: 'ProposalRejected', data: { callId: 'plan.seal.0', rule: 'R-13', reason: 'a horizon holds one or two detailed milestones, the proposal has 0', graphRevision: 0 } },
    );
    expect(nextAction(rejected.state)).toEqual({ kind: 'blocked', reason: 'a horizon holds one or two detailed milestones, the proposal has 0; `longbuild replan [--reason TEXT]` asks the planner again', planning: { purpose: 'seal', horizonRevision: 0, callId: 'plan.seal.0' } });
  });

  it('R-28 (property) for every ask limit A and every k refusals so far, the round asks again (ask k+1, its own id) while k < A, settles an in-doubt ask under the same id, and blocks at k = A naming the count (the same on the build\'s view)', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 }), fc.nat(10), fc.boolean(), (asks, refusals, inDoubtLast) => {
      const k = Math.min(refusals, asks);
      const id = (n: number) => (n === 1 ? 'plan.seal.0' : `plan.seal.0.ask${n}`); // oracle: the documented id scheme
      const events: Parameters<typeof given> = [buildInitialized({ plannerAsks: asks })];
      for (let n = 1; n <= k; n++) {
        events.push(
          { type: 'PlannerInvoked', data: { callId: id(n), purpose: 'seal', horizonRevision: 0, graphRevision: 0 } },
          { type: 'PlannerReturned', data: { callId: id(n), proposal: { n }, proposalSha256: sha256Of(`p${n}`), graphRevision: 0 } },
          { type: 'ProposalRejected', data: { callId: id(n), rule: 'R-28', reason: `bad ${n}`, graphRevision: 0 } },
        );
      }
      const pendingAsk = k < asks && inDoubtLast;
      if (pendingAsk) events.push({ type: 'PlannerInvoked', data: { callId: id(k + 1), purpose: 'seal', horizonRevision: 0, graphRevision: 0 } });
      const state = given(...events).state;
      // Reading commands decide on the view (decision 0020): it keeps the refused asks.
      expect(nextAction(buildView(state))).toEqual(nextAction(state));
      if (k < asks) {
        expect(nextAction(state)).toEqual({ kind: 'plan', purpose: 'seal', callId: id(k + 1), inDoubt: pendingAsk });
        expect(plannerInputOf(state, 'seal', id(k + 1)).feedback ?? []).toEqual(Array.from({ length: k }, (_, i) => ({ callId: id(i + 1), rule: 'R-28', reason: `bad ${i + 1}` })));
      } else {
        expect(nextAction(state)).toEqual({ kind: 'blocked', reason: `bad ${asks}${asks > 1 ? ` (refused ${asks} times; the planner was asked again with the reasons each time)` : ''}; \`longbuild replan [--reason TEXT]\` asks the planner again`, planning: { purpose: 'seal', horizonRevision: 0, callId: id(asks) } });
      }
    }), { numRuns: 200 });
  });

  it('R-17 a fully accepted milestone is checkpointed before anything else, in milestone order', () => {
    const done = sealed().when(...acceptNode('api', 'writable', 'job-1'), ...acceptNode('solo', 'writable', 'job-2'), ...acceptNode('ui', 'writable', 'job-3'));
    expect(nextAction(done.state)).toEqual({ kind: 'checkpoint', milestoneId: 'm1' });
    const next = checkpointed(done, 'm1');
    expect(nextAction(next.state)).toEqual({ kind: 'dispatch', nodeId: 'home', attempt: 1, attemptId: 'home.1' });
  });

  it('R-17 renew when every detailed milestone is checkpointed and coarse work remains; complete when none remains', () => {
    let spec = sealed();
    for (const [i, id] of ['api', 'solo', 'ui', 'home'].entries()) spec = spec.when(...acceptNode(id, 'writable', `job-${i + 1}`));
    spec = checkpointed(checkpointed(spec, 'm1'), 'm2');
    expect(nextAction(spec.state)).toEqual({ kind: 'plan', purpose: 'renew', callId: 'plan.renew.1', inDoubt: false });
    const plan = mustValidate({ detailed: [milestone('release', [])], coarse: [] }, spec.state);
    const renewed = spec.when(horizonRenewed(plan, 1, spec.state.graphRevision));
    expect(nextAction(renewed.state)).toEqual({ kind: 'checkpoint', milestoneId: 'release' });
    const final = checkpointed(renewed, 'release');
    expect(nextAction(final.state)).toEqual({ kind: 'complete' });
    expect(nextAction(final.when({ type: 'BuildCompleted', data: { graphRevision: final.state.graphRevision, integrationHead: final.state.integrationHead! } }).state)).toEqual({ kind: 'completed' });
  });

  it('R-17 a node blocked after its last attempt leaves the milestone stuck, naming it', () => {
    let spec = given(buildInitialized({ maxAttempts: 2 }), horizonSealed({ detailed: [milestone('m1', [node('api')])], coarse: [] }));
    spec = spec.when(attemptStarted('api', 1), attemptFinished('api', 'failed', 1));
    expect(spec.state.nodes['api']!.state).toBe('revising');
    expect(nextAction(spec.state)).toEqual({ kind: 'dispatch', nodeId: 'api', attempt: 2, attemptId: 'api.2' });
    spec = spec.when(attemptStarted('api', 2), attemptFinished('api', 'failed', 2));
    const action = nextAction(spec.state);
    expect(action.kind).toBe('stuck');
    expect(action.kind === 'stuck' && action.nodeIds).toEqual(['api']);
    expect(action.kind === 'stuck' && action.reason).toContain('api is blocked');
  });
});

describe('R-11 in-flight work is resumed before fresh work', () => {
  it('R-11 a running attempt is settled before any dispatch', () => {
    const s = sealed().when(attemptStarted('solo')).state;
    expect(rankReadyWave(s)).toEqual(['api']);
    expect(nextAction(s)).toEqual({ kind: 'settle-attempt', attemptId: 'solo.1' });
  });

  it('R-11 a validating node (committed, not integrated) is integrated before any dispatch', () => {
    const s = sealed().when(attemptStarted('solo'), attemptFinished('solo', 'committed')).state;
    expect(s.nodes['solo']!.state).toBe('validating');
    expect(inFlightNodes(s)).toEqual(['solo']);
    const action = nextAction(s);
    expect(action).toEqual({ kind: 'integrate', jobId: 'job-1', candidates: [{ nodeId: 'solo', attemptId: 'solo.1', commit: attemptOf(s, 'solo.1')!.commit }] });
  });

  it('R-11 a started or verified integration job is settled before any dispatch', () => {
    const started = sealed().when(attemptStarted('solo'), attemptFinished('solo', 'committed'), integrationStarted('job-1', ['solo']));
    expect(nextAction(started.state)).toEqual({ kind: 'settle-job', jobId: 'job-1' });
    const verified = started.when({
      type: 'VerificationFinished',
      data: { jobId: 'job-1', resultCommit: null, tree: null, passed: true, evidence: [], evidenceSha256: sha256Of('v'), graphRevision: 0 },
    });
    expect(nextAction(verified.state)).toEqual({ kind: 'settle-job', jobId: 'job-1' });
    expect(nextAction(verified.when(integrationPromoted('job-1', ['solo'])).state)).toEqual({ kind: 'dispatch', nodeId: 'api', attempt: 1, attemptId: 'api.1' });
  });

  it('R-11 a node whose integration failed is retried (revising) before fresh work', () => {
    const s = sealed().when(attemptStarted('solo'), attemptFinished('solo', 'committed'), integrationStarted('job-1', ['solo']), integrationFailed('job-1', ['solo'])).state;
    expect(s.nodes['solo']!.state).toBe('revising');
    expect(nextAction(s)).toEqual({ kind: 'dispatch', nodeId: 'solo', attempt: 2, attemptId: 'solo.2' });
  });

  it('R-11/R-12 property: in-flight work always comes first; a dispatch picks exactly the top of the ranked wave', () => {
    let dispatches = 0;
    let recoveries = 0;
    fc.assert(
      fc.property(progressCaseArb({ maxNodes: 10, maxMilestones: 2 }), (c) => {
        const s = progressedBuild(c).state;
        const action = nextAction(s);
        const inFlight = Object.values(s.nodes).filter((n) => n.state === 'running' || n.state === 'validating');
        if (inFlight.length > 0) {
          recoveries++;
          expect(['settle-attempt', 'integrate', 'settle-job', 'checkpoint']).toContain(action.kind);
          if (action.kind === 'settle-attempt') expect(attemptOf(s, action.attemptId)!.status).toBe('started');
          if (action.kind === 'integrate') expect(s.nodes[action.candidates[0]!.nodeId]!.state).toBe('validating');
        }
        if (action.kind === 'dispatch') {
          dispatches++;
          expect(inFlight).toEqual([]);
          const revising = Object.values(s.nodes).filter((n) => n.state === 'revising' && n.milestone === s.nodes[action.nodeId]!.milestone).map((n) => n.id).sort();
          expect(action.nodeId).toBe(revising[0] ?? rankReadyWave(s)[0]);
          expect(action.attempt).toBe(s.nodes[action.nodeId]!.attempts + 1);
          expect(action.attemptId).toBe(`${action.nodeId}.${action.attempt}`);
        }
        if (inFlight.length === 0 && rankReadyWave(s).length > 0 && action.kind !== 'checkpoint') expect(action.kind).toBe('dispatch');
      }),
      { numRuns: 200 },
    );
    expect(dispatches).toBeGreaterThan(20);
    expect(recoveries).toBeGreaterThan(20);
  });
});

describe('R-12 dispatch reveals the wave but sends only its top node', () => {
  it('R-12 with two ready nodes only the top one is dispatched, from the current integration head', () => {
    const s = sealed().state;
    expect(rankReadyWave(s)).toEqual(['api', 'solo']);
    expect(nextAction(s)).toEqual({ kind: 'dispatch', nodeId: 'api', attempt: 1, attemptId: 'api.1' });
    const after = sealed().when(...acceptNode('api', 'writable', 'job-1')).state;
    expect(rankReadyWave(after)).toEqual(['ui', 'solo']);
    expect(nextAction(after)).toEqual({ kind: 'dispatch', nodeId: 'ui', attempt: 1, attemptId: 'ui.1' });
  });
});

describe('R-18 deterministic ids', () => {
  it('R-18 attempt, job and planner call ids are deterministic', () => {
    expect(attemptIdOf('catalog-api', 3)).toBe('catalog-api.3');
    expect(plannerCallId('seal', 0)).toBe('plan.seal.0');
    expect(plannerCallId('renew', 4)).toBe('plan.renew.4');
    const s = sealed().when(...acceptNode('api', 'writable', 'job-1')).state;
    expect(jobIdOf(s)).toBe('job-2');
  });
});
