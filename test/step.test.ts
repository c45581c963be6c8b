/**
 * Given/when/then specs of the pure step (issue 15): given the events of a log, when an effect
 * returns a result, then these events are appended and this effect is requested next. No git, no
 * processes, no files: every spec runs the real `decideStep`/`settle` over a real fold, and every
 * event they produce is validated against the catalogue as it is folded (storeEvents).
 */
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../src/events/catalogue.js';
import type { EffectRequest, EffectResults, StepContext } from '../src/commands/decide-step.js';
import { interpretStep, type StepRun } from './support/pure-step.js';
import { attemptFinished, attemptStarted, BASE_HEAD, buildInitialized, given, gitShaOf, horizonSealed, integrationStarted, milestone, node, sha256Of, type BuildSpec } from './support/given.js';

const CTX: StepContext = { now: '2026-01-01T00:00:10.000Z', attemptRefsChecked: true, plannerRoute: 'scripted', workerReworks: false };
type Scripted = { [K in keyof EffectResults]: [K, EffectResults[K]] }[keyof EffectResults];

/**
 * One step, interpreted purely: each effect is answered by the next scripted result (which must be
 * for that kind of effect), until it is done; every scripted result must be used.
 */
function step(spec: BuildSpec, results: Scripted[], ctx: StepContext = CTX): StepRun {
  const queue = [...results];
  const run = interpretStep(spec, ctx, (next) => {
    if (next.kind === 'observe-refs' && queue[0]?.[0] !== 'observe-refs') return undefined;
    const scripted = queue.shift();
    if (scripted === undefined) throw new Error(`no result scripted for the ${next.kind} effect`);
    expect(scripted[0], `the effect requested, after the ones before it`).toBe(next.kind);
    return scripted[1];
  });
  if (!('fail' in run.result)) expect(queue, 'every scripted result was used').toEqual([]);
  return run;
}

const types = (events: readonly DomainEvent[]): string[] => events.map((e) => e.type);
const dataOf = (events: readonly DomainEvent[], type: string): any => events.find((e) => e.type === type)?.data;
const kinds = (effects: readonly EffectRequest[]): string[] => effects.map((e) => e.kind);

/** A sealed build: one milestone `m` with writable `a`, writable `b` (after a) and read-only `r`. */
function sealed(settings: Parameters<typeof buildInitialized>[0] = {}): BuildSpec {
  return given(buildInitialized(settings), horizonSealed({ detailed: [milestone('m', [node('a'), node('b', ['a']), node('r', [], { kind: 'read-only' })])], coarse: [] }));
}

const KEPT = { outcome: 'committed' as const, stdoutSha256: sha256Of('out'), stderrSha256: sha256Of('err'), durationMs: 12 };
const COMMIT = { commit: gitShaOf('commit:a.1'), tree: gitShaOf('tree:a.1') };

describe('the pure step: dispatch and worker results (R-18, R-24)', () => {
  it('a ready node is dispatched: AttemptStarted before the worker runs, the host commits the clone, checks it, records the commit', () => {
    const run = step(sealed(), [
      ['worker', { kept: KEPT, worktree: '/wt/a.1' }],
      ['finish-clone', { kind: 'committed', ...COMMIT }],
      ['check-candidate', { problem: null }],
    ]);
    expect(types(run.events)).toEqual(['AttemptStarted', 'AttemptFinished']);
    expect(kinds(run.effects)).toEqual(['observe-refs', 'worker', 'finish-clone', 'check-candidate']);
    const worker = run.effects[1] as Extract<EffectRequest, { kind: 'worker' }>;
    expect(worker).toMatchObject({ attemptId: 'a.1', key: 'b-test:a.1', invocation: 1, writable: true, rework: null });
    expect(worker.packet).toMatchObject({ nodeId: 'a', baseHead: BASE_HEAD, branch: 'refs/heads/longbuild/attempts/a.1' });
    expect(run.effects[2]).toMatchObject({ commit: { worktree: '/wt/a.1', baseHead: BASE_HEAD, message: 'longbuild: a (attempt 1)' } });
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'committed', ...COMMIT, adopted: false, stdoutSha256: sha256Of('out'), durationMs: 12 });
    expect(run.result).toMatchObject({ outcome: 'dispatched', detail: 'a attempt 1: validating', nodeId: 'a' });
  });

  it('R-62 a build with trailers commits the attempt with trailers naming the build, node and attempt, and the agent that assisted', () => {
    const run = step(sealed({ trailers: { assistedBy: 'claude (claude-sonnet-4-5)' } }), [
      ['worker', { kept: KEPT, worktree: '/wt/a.1' }],
      ['finish-clone', { kind: 'committed', ...COMMIT }],
      ['check-candidate', { problem: null }],
    ]);
    expect((run.effects[2] as { commit: { message: string } }).commit.message).toBe('longbuild: a (attempt 1)\n\nLongbuild-Build: b-test\nLongbuild-Node: a\nLongbuild-Attempt: a.1\nAssisted-by: claude (claude-sonnet-4-5)');
  });

  it('R-29 a candidate that touches a protected path is a failed attempt naming the rule, never a candidate', () => {
    const run = step(sealed(), [
      ['worker', { kept: KEPT, worktree: '/wt/a.1' }],
      ['finish-clone', { kind: 'committed', ...COMMIT }],
      ['check-candidate', { problem: { rule: 'R-29', reason: 'the candidate changes the protected path .longbuild/x' } }],
    ]);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'failed', reason: 'R-29: the candidate changes the protected path .longbuild/x' });
    expect(dataOf(run.events, 'AttemptFinished').commit).toBeUndefined();
    expect(run.spec.state.nodes.a!.state).toBe('revising');
    expect(run.result).toMatchObject({ outcome: 'dispatched', detail: expect.stringContaining('R-29') });
  });

  it('R-31 a clone the host refuses to commit (a symlink out, an oversized file) fails the attempt with the rule; no check follows', () => {
    const run = step(sealed(), [
      ['worker', { kept: KEPT, worktree: '/wt/a.1' }],
      ['finish-clone', { kind: 'refused', rule: 'R-31', reason: 'big.bin is larger than 1048576 bytes' }],
    ]);
    expect(kinds(run.effects)).toEqual(['observe-refs', 'worker', 'finish-clone']);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'failed', reason: 'R-31: big.bin is larger than 1048576 bytes' });
  });

  it('a worker that failed, or changed nothing, is a failed attempt; its clone is removed without a commit', () => {
    const failed = step(sealed(), [['worker', { kept: { ...KEPT, outcome: 'failed', reason: 'exit 2' }, worktree: '/wt/a.1' }], ['finish-clone', { kind: 'unchanged' }]]);
    expect(failed.effects[2]).toMatchObject({ kind: 'finish-clone', commit: null });
    expect(dataOf(failed.events, 'AttemptFinished')).toMatchObject({ outcome: 'failed', reason: 'exit 2' });
    const unchanged = step(sealed(), [['worker', { kept: KEPT, worktree: '/wt/a.1' }], ['finish-clone', { kind: 'unchanged' }]]);
    expect(dataOf(unchanged.events, 'AttemptFinished')).toMatchObject({ outcome: 'failed', reason: 'worker produced no change' });
  });

  it('a read-only node records the worker\'s decision with no git effect at all', () => {
    const ready = given(buildInitialized(), horizonSealed({ detailed: [milestone('m', [node('r', [], { kind: 'read-only' })])], coarse: [] }));
    const run = step(ready, [['worker', { kept: { ...KEPT, outcome: 'recorded', decision: 'use sqlite' }, worktree: '' }]]);
    expect(kinds(run.effects)).toEqual(['observe-refs', 'worker']);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'recorded', decision: 'use sqlite' });
    expect(run.spec.state.nodes.r!.state).toBe('accepted');
  });
});

describe('the pure step: an open attempt after a crash (R-18 adoption)', () => {
  const crashed = () => sealed().when(attemptStarted('a'));

  it('a commit on the attempt branch is adopted (checked like any candidate), the worker is not called again', () => {
    const run = step(crashed(), [
      ['recall-attempt', { found: COMMIT, kept: null, clone: null, started: true }],
      ['check-candidate', { problem: null }],
    ]);
    expect(kinds(run.effects)).toEqual(['observe-refs', 'recall-attempt', 'check-candidate']);
    expect(run.effects[2]).toMatchObject({ removeClone: 'a.1', base: BASE_HEAD, commit: COMMIT.commit });
    expect(types(run.events)).toEqual(['AttemptFinished']);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'committed', adopted: true, ...COMMIT });
    expect(run.result).toMatchObject({ outcome: 'recovered', detail: expect.stringMatching(/^adopted a's commit/) });
  });

  it('R-19 an adopted commit whose worker outcome was kept records that outcome\'s evidence: the same AttemptFinished as an uninterrupted run, but adopted', () => {
    const run = step(crashed(), [['recall-attempt', { found: COMMIT, kept: KEPT, clone: null, started: true }], ['check-candidate', { problem: null }]]);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ adopted: true, stdoutSha256: KEPT.stdoutSha256, stderrSha256: KEPT.stderrSha256, durationMs: 12 });
  });

  it('a kept failure finishes the attempt as failed though its clone is gone (removed before the crash): the worker is not called again', () => {
    const run = step(crashed(), [['recall-attempt', { found: null, kept: { ...KEPT, outcome: 'failed', reason: 'exit 3' }, clone: null, started: true }], ['finish-clone', { kind: 'unchanged' }]]);
    expect(kinds(run.effects)).toEqual(['observe-refs', 'recall-attempt', 'finish-clone']);
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'failed', reason: 'exit 3' });
  });

  it('a kept outcome finishes the attempt from the clone without calling the worker', () => {
    const run = step(crashed(), [
      ['recall-attempt', { found: null, kept: KEPT, clone: '/wt/a.1', started: true }],
      ['finish-clone', { kind: 'committed', ...COMMIT }],
      ['check-candidate', { problem: null }],
    ]);
    expect(kinds(run.effects)).not.toContain('worker');
    expect(dataOf(run.events, 'AttemptFinished')).toMatchObject({ outcome: 'committed', adopted: false, stdoutSha256: KEPT.stdoutSha256 });
  });

  it('a call that started and left nothing is re-invoked once under the same key (EffectReinvoked, invocation 2)', () => {
    const run = step(crashed(), [['recall-attempt', { found: null, kept: null, clone: null, started: true }], ['worker', { kept: KEPT, worktree: '/wt' }], ['finish-clone', { kind: 'committed', ...COMMIT }], ['check-candidate', { problem: null }]]);
    expect(types(run.events)).toEqual(['EffectReinvoked', 'AttemptFinished']);
    expect(dataOf(run.events, 'EffectReinvoked')).toEqual({ effect: 'worker', key: 'b-test:a.1' });
    expect(run.effects[2]).toMatchObject({ kind: 'worker', key: 'b-test:a.1', invocation: 2 });
  });

  it('a call the crash came before is simply made now: nothing re-invoked, invocation 1', () => {
    const run = step(crashed(), [['recall-attempt', { found: null, kept: null, clone: null, started: false }], ['worker', { kept: KEPT, worktree: '/wt' }], ['finish-clone', { kind: 'committed', ...COMMIT }], ['check-candidate', { problem: null }]]);
    expect(types(run.events)).toEqual(['AttemptFinished']);
    expect(run.effects[2]).toMatchObject({ kind: 'worker', invocation: 1 });
  });

  it('recovery comes before any new dispatch (R-11): the open attempt is settled though b and r are waiting', () => {
    const run = step(crashed(), [['recall-attempt', { found: COMMIT, kept: null, clone: null, started: true }], ['check-candidate', { problem: null }]]);
    expect(types(run.events)).not.toContain('AttemptStarted');
  });
});

describe('the pure step: integration, receipts, promotion (R-24, R-29, R-33)', () => {
  const validating = () => sealed().when(attemptStarted('a'), attemptFinished('a', 'committed'));
  const evidence = (cacheHit: boolean, i = 0) => ({ argv: ['npm', 'test'], exitCode: 0, stdoutSha256: sha256Of(`o${i}`), stderrSha256: sha256Of(`e${i}`), durationMs: 5, cacheHit });
  const passed = (ev: ReturnType<typeof evidence>[]) => ({ ok: true as const, resultCommit: gitShaOf('result'), tree: gitShaOf('tree'), passed: true, evidence: ev });

  it('a committed candidate is integrated: verified, promoted with compare-and-set from the logged head, receipt recorded', () => {
    const run = step(validating(), [['verify', passed([evidence(false, 1), evidence(true, 2)])], ['read-ref', { commit: BASE_HEAD }], ['promote', { ok: true }], ['delete-branches', null]]);
    expect(types(run.events)).toEqual(['IntegrationStarted', 'VerificationFinished', 'IntegrationPromoted']);
    expect(run.effects.find((e) => e.kind === 'verify')).toMatchObject({ jobId: 'job-1', baseHead: BASE_HEAD, commits: [gitShaOf('commit:a.1')], commands: [['true']], retestOnFailure: false });
    expect(run.effects.find((e) => e.kind === 'promote')).toMatchObject({ commit: gitShaOf('result'), expectedOld: BASE_HEAD, tries: 1 });
    const receipt = dataOf(run.events, 'IntegrationPromoted').receipt;
    // the receipt names exactly what was verified, and cacheHit only when every command replayed.
    expect(receipt).toEqual({
      jobId: 'job-1', nodeIds: ['a'], baseHead: BASE_HEAD, candidates: [{ nodeId: 'a', commit: gitShaOf('commit:a.1') }],
      resultCommit: gitShaOf('result'), tree: gitShaOf('tree'), evidenceSha256s: [sha256Of('o1'), sha256Of('e1'), sha256Of('o2'), sha256Of('e2')], cacheHit: false,
    });
    expect(run.effects.at(-1)).toMatchObject({ kind: 'delete-branches', attemptIds: ['a.1'] });
    expect(run.spec.state.integrationHead).toBe(gitShaOf('result'));
    expect(run.result).toMatchObject({ outcome: 'integrated' });
  });

  it('R-24 cacheHit: true only when every command was a cache hit; no evidence is never a hit', () => {
    const hit = (ev: ReturnType<typeof evidence>[]) =>
      dataOf(step(validating(), [['verify', passed(ev)], ['read-ref', { commit: BASE_HEAD }], ['promote', { ok: true }], ['delete-branches', null]]).events, 'IntegrationPromoted').receipt.cacheHit;
    expect(hit([evidence(true), evidence(true, 1)])).toBe(true);
    expect(hit([evidence(true), evidence(false, 1)])).toBe(false);
    expect(hit([])).toBe(false);
  });

  it('a failing verification sends the node back to revising with the evidence; nothing is promoted', () => {
    const run = step(validating(), [['verify', { ...passed([{ ...evidence(false), exitCode: 1 }]), passed: false, reason: 'npm test exited 1' }]]);
    expect(types(run.events)).toEqual(['IntegrationStarted', 'VerificationFinished', 'IntegrationFailed']);
    expect(dataOf(run.events, 'IntegrationFailed')).toMatchObject({ nodeIds: ['a'], reason: 'verification failed: npm test exited 1' });
    expect(kinds(run.effects)).not.toContain('promote');
    expect(run.spec.state.nodes.a!.state).toBe('revising');
  });

  it('R-18 a promotion made before the crash is adopted (the ref is at the result): published, not promoted again', () => {
    const spec = validating().when(integrationStarted('job-1', ['a']));
    const run = step(spec, [['verify', passed([evidence(false)])], ['read-ref', { commit: gitShaOf('result') }], ['publish', null], ['delete-branches', null]]);
    expect(kinds(run.effects)).not.toContain('promote');
    expect(dataOf(run.events, 'IntegrationPromoted')).toMatchObject({ adopted: true });
    expect(run.result).toMatchObject({ outcome: 'recovered', detail: expect.stringContaining('(adopted)') });
  });

  it('R-29 R-33 someone else moved the ref: it is reset to the logged head (RefRepaired, nobody blamed) and promoted again', () => {
    const stray = gitShaOf('stray');
    const run = step(validating(), [['verify', passed([evidence(false)])], ['read-ref', { commit: stray }], ['promote', { ok: false, actual: stray }], ['repair-refs', null], ['promote', { ok: true }], ['delete-branches', null]]);
    expect(types(run.events)).toEqual(['IntegrationStarted', 'VerificationFinished', 'RefRepaired', 'IntegrationPromoted']);
    expect(dataOf(run.events, 'RefRepaired')).toMatchObject({ where: 'integrator', found: stray, expected: BASE_HEAD });
    expect(run.effects.filter((e) => e.kind === 'promote').map((e) => (e as { tries: number }).tries)).toEqual([1, 2]);
    expect(run.spec.state.nodes.a!.state).toBe('accepted');
  });

  it('R-29 a ref that keeps moving stops the step with one clear error; nothing is promoted or blamed', () => {
    const stray = gitShaOf('stray');
    const run = step(validating(), [['verify', passed([evidence(false)])], ['read-ref', { commit: stray }], ['promote', { ok: false, actual: stray }], ['repair-refs', null], ['promote', { ok: false, actual: gitShaOf('stray2') }]]);
    expect(run.result).toEqual({ fail: expect.stringMatching(/keeps moving behind the integrator's back/) });
    expect(types(run.events)).not.toContain('IntegrationPromoted');
    expect(types(run.events)).not.toContain('IntegrationFailed');
  });

  it('R-33 a fresh step first repairs refs that disagree with the log, and does nothing else', () => {
    const stray = gitShaOf('stray');
    const run = step(validating(), [['observe-refs', { integration: stray, published: BASE_HEAD, attempts: {} }], ['repair-refs', null]]);
    expect(types(run.events)).toEqual(['RefRepaired']);
    expect(run.result).toMatchObject({ outcome: 'recovered', detail: expect.stringContaining('R-33') });
  });
});

describe('the pure step: batches (R-25 split and retest)', () => {
  const wave = () => {
    const spec = given(buildInitialized({ maxBatch: 2 }), horizonSealed({ detailed: [milestone('m', [node('a'), node('c')])], coarse: [] }));
    return spec.when(attemptStarted('a'), attemptFinished('a', 'committed'), attemptStarted('c'), attemptFinished('c', 'committed'));
  };

  it('a full wave is integrated as one job, verified with a retest on failure', () => {
    const run = step(wave(), [['verify', { ok: true, resultCommit: gitShaOf('r'), tree: gitShaOf('t'), passed: true, evidence: [] }], ['read-ref', { commit: BASE_HEAD }], ['promote', { ok: true }], ['delete-branches', null]]);
    expect(dataOf(run.events, 'IntegrationStarted').nodeIds).toEqual(['a', 'c']);
    expect(run.effects.find((e) => e.kind === 'verify')).toMatchObject({ retestOnFailure: true });
    expect(run.spec.state.nodes.c!.state).toBe('accepted');
  });

  it('a failed batch blames nobody: it is split into halves (BatchSplit), integrated next one by one', () => {
    const run = step(wave(), [['verify', { ok: true, resultCommit: gitShaOf('r'), tree: gitShaOf('t'), passed: false, reason: 'exit 1', evidence: [] }]]);
    expect(types(run.events)).toEqual(['IntegrationStarted', 'VerificationFinished', 'BatchSplit']);
    expect(dataOf(run.events, 'BatchSplit')).toMatchObject({ halves: [['a'], ['c']], reason: `verification failed twice on tree ${gitShaOf('t')}` });
    expect(run.spec.state.nodes.a!.state).toBe('validating');
    const next = step(run.spec, [['verify', { ok: false, reason: 'a does not apply' }]]);
    expect(dataOf(next.events, 'IntegrationStarted').nodeIds).toEqual(['a']);
    // A one-candidate job that fails is blamed: the half holds the culprit.
    expect(types(next.events)).toEqual(['IntegrationStarted', 'VerificationFinished', 'IntegrationFailed']);
  });

  it('candidates that do not apply together are split too, saying so', () => {
    const run = step(wave(), [['verify', { ok: false, reason: 'conflict in x.txt' }]]);
    expect(dataOf(run.events, 'VerificationFinished')).toMatchObject({ passed: false, resultCommit: null, reason: 'conflict in x.txt' });
    expect(dataOf(run.events, 'BatchSplit').reason).toBe('the candidates do not apply together');
  });
});

describe('the pure step: planning (R-13..R-16, R-18, R-28)', () => {
  const fresh = () => given(buildInitialized());
  const proposal = { detailed: [milestone('m', [node('a')])], coarse: [] };

  it('a valid proposal seals the horizon, pinned to the request, head and route (R-14)', () => {
    const run = step(fresh(), [['planner', { answer: proposal }]]);
    expect(types(run.events)).toEqual(['PlannerInvoked', 'PlannerReturned', 'HorizonSealed']);
    expect(run.effects.find((e) => e.kind === 'planner')).toMatchObject({ callId: 'plan.seal.0', invocation: 1, input: { purpose: 'seal', integrationHead: BASE_HEAD } });
    expect(dataOf(run.events, 'HorizonSealed').pins).toMatchObject({ plannerRoute: 'scripted', integrationHead: BASE_HEAD, createdAt: CTX.now, graphRevision: 0 });
    expect(run.result).toMatchObject({ outcome: 'planned' });
  });

  it('R-13 an invalid proposal is recorded and refused with the rule; R-28 a non-canonical one too', () => {
    const bad = step(fresh(), [['planner', { answer: { detailed: [], coarse: [] } }]]);
    expect(types(bad.events)).toEqual(['PlannerInvoked', 'PlannerReturned', 'ProposalRejected']);
    expect(bad.result).toMatchObject({ outcome: 'blocked' });
    const nan = step(fresh(), [['planner', { answer: { n: Number.NaN } }]]);
    expect(dataOf(nan.events, 'ProposalRejected')).toMatchObject({ rule: 'R-28' });
    expect(dataOf(nan.events, 'PlannerReturned')).toMatchObject({ proposal: null });
  });

  it('R-18 an in-doubt planner call: a kept answer is recorded without asking; a lost one is re-asked once', () => {
    const inDoubt = () => fresh().when({ type: 'PlannerInvoked', data: { callId: 'plan.seal.0', purpose: 'seal', horizonRevision: 0, graphRevision: 0 } });
    const kept = step(inDoubt(), [['recall-planner', { kept: { answer: proposal } as never, started: true }]]);
    expect(kinds(kept.effects)).toEqual(['observe-refs', 'recall-planner']);
    expect(types(kept.events)).toEqual(['PlannerReturned', 'HorizonSealed']);
    const lost = step(inDoubt(), [['recall-planner', { kept: null, started: true }], ['planner', { answer: proposal }]]);
    expect(types(lost.events)).toEqual(['EffectReinvoked', 'PlannerReturned', 'HorizonSealed']);
    expect(lost.effects[2]).toMatchObject({ kind: 'planner', invocation: 2 });
  });
});
