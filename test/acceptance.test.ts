/**
 * System-level acceptance (issue 16), given/when/then over the pure step: trusted acceptance
 * commands run on the head of every milestone checkpoint (intent, then result: R-18), a failing
 * run is the planner's evidence at its next call, a build whose result fails acceptance asks for
 * repair windows (bounded) and then blocks saying why, and an operator can run it again.
 * No git, no processes: the step's effects are answered by scripted results.
 */
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../src/events/catalogue.js';
import type { EffectRequest, EffectResults, StepContext, StepResult } from '../src/commands/decide-step.js';
import { interpretStep } from './support/pure-step.js';
import { nextAction } from '../src/commands/next-action.js';
import { decideAcceptanceRun } from '../src/commands/operator.js';
import { decideRepair } from '../src/commands/horizon.js';
import { buildInitialized, given, gitShaOf, horizonSealed, milestone, node, sha256Of, type BuildSpec } from './support/given.js';

const CTX: StepContext = { now: '2026-01-01T00:00:10.000Z', attemptRefsChecked: true, plannerRoute: 'scripted', workerReworks: false };
const ACCEPT = [['node', 'e2e.js']];

type Answer = (e: EffectRequest) => EffectResults[keyof EffectResults];

/** The world, scripted: read-only workers record, the planner proposes what `plans` says by call id, acceptance passes unless told. */
function world(o: { plans?: Record<string, unknown>; acceptance?: (head: string, runId: string) => boolean } = {}): Answer {
  return (e) => {
    switch (e.kind) {
      case 'observe-refs':
        throw new Error('answered by drive()');
      case 'worker':
        return { kept: { outcome: 'recorded', stdoutSha256: sha256Of('out'), stderrSha256: sha256Of('err') }, worktree: '' };
      case 'planner':
        if (!(e.callId in (o.plans ?? {}))) throw new Error(`no plan scripted for ${e.callId}`);
        return { answer: o.plans![e.callId] };
      case 'recall-planner':
        return { kept: null, started: false };
      case 'accept': {
        const passed = o.acceptance?.(e.head, e.runId) ?? true;
        return {
          tree: gitShaOf(`tree:${e.head}`), passed, ...(passed ? {} : { reason: '["node","e2e.js"] exited with 1' }),
          evidence: [{ argv: ['node', 'e2e.js'], exitCode: passed ? 0 : 1, stdoutSha256: sha256Of(`out:${e.runId}`), stderrSha256: sha256Of(`err:${e.runId}`), durationMs: 5, cacheHit: false }],
        };
      }
      case 'delete-branches':
      case 'repair-refs':
        return null;
      default:
        throw new Error(`no answer scripted for the ${e.kind} effect`);
    }
  };
}

interface Steps {
  readonly spec: BuildSpec;
  readonly results: StepResult[];
  readonly effects: EffectRequest[];
  readonly events: DomainEvent[];
}

/** Steps of the pure controller until `until` says stop (or `max` steps), every effect answered by `answer`. */
function drive(spec: BuildSpec, answer: Answer, until: (r: StepResult) => boolean, max = 40): Steps {
  const results: StepResult[] = [];
  const effects: EffectRequest[] = [];
  const events: DomainEvent[] = [];
  for (let i = 0; i < max; i++) {
    const run = interpretStep(spec, CTX, (e) => (e.kind === 'observe-refs' ? undefined : answer(e)));
    spec = run.spec;
    effects.push(...run.effects);
    events.push(...run.events);
    if ('fail' in run.result) throw new Error(run.result.fail);
    results.push(run.result);
    if (until(run.result)) return { spec, results, effects, events };
  }
  throw new Error(`not done after ${max} steps: ${results.map((r) => r.outcome).join(', ')}`);
}

/** A build with acceptance commands: milestone m1 (read-only a), then coarse m2 unless `coarse` is false. */
function build(o: { coarse?: boolean; repairs?: number } = {}): BuildSpec {
  const init = buildInitialized({ detailedWindow: 1, ...(o.repairs !== undefined ? { acceptanceRepairs: o.repairs } : {}) });
  const withAcceptance = { ...init, data: { ...(init.data as object), acceptance: ACCEPT } } as DomainEvent;
  return given(withAcceptance, horizonSealed({ detailed: [milestone('m1', [node('a', [], { kind: 'read-only' })])], coarse: o.coarse === false ? [] : [{ id: 'm2', title: 'two' }] }));
}

const M2 = { detailed: [{ id: 'm2', title: 'two', nodes: [{ id: 'b', kind: 'read-only', deps: [] }] }], coarse: [] };
const REPAIR = { detailed: [{ id: 'fix', title: 'fix the e2e test', nodes: [{ id: 'fix-e2e', kind: 'read-only', deps: [] }] }], coarse: [] };
const byType = (events: readonly DomainEvent[], type: string): any[] => events.filter((e) => e.type === type).map((e) => e.data);

describe('system-level acceptance (issue 16)', () => {
  it('R-18 a checkpointed milestone is accepted on its checkpoint\'s head: the intent is recorded before the commands run, then the result with every command\'s evidence', () => {
    const run = drive(build(), world({ plans: { 'plan.renew.1': M2 } }), (r) => r.outcome === 'acceptance');
    const cp = byType(run.events, 'CheckpointWritten')[0];
    const kinds = run.events.map((e) => e.type);
    expect(kinds.indexOf('AcceptanceStarted')).toBeGreaterThan(kinds.indexOf('CheckpointWritten'));
    expect(byType(run.events, 'AcceptanceStarted')).toEqual([{ runId: 'accept-1', milestoneId: 'm1', head: cp.checkpoint.integrationHead, graphRevision: expect.any(Number) }]);
    expect(run.effects.filter((e) => e.kind === 'accept')).toEqual([{ kind: 'accept', runId: 'accept-1', head: cp.checkpoint.integrationHead, commands: ACCEPT, recovering: false }]);
    expect(byType(run.events, 'AcceptanceFinished')[0]).toMatchObject({ runId: 'accept-1', passed: true, evidence: [expect.objectContaining({ argv: ['node', 'e2e.js'], exitCode: 0 })] });
    expect(run.results.at(-1)!.detail).toMatch(/^acceptance passed on [0-9a-f]{12} \(milestone m1\)$/);
  });

  it('a failing acceptance is the planner\'s evidence at its next call (a renewal, whose window can repair it); the run is not repeated for the same checkpoint', () => {
    const run = drive(build(), world({ plans: { 'plan.renew.1': M2 }, acceptance: (_h, id) => id !== 'accept-1' }), (r) => r.outcome === 'renewed');
    const renewal = run.effects.find((e): e is Extract<EffectRequest, { kind: 'planner' }> => e.kind === 'planner' && e.purpose === 'renew')!;
    expect(renewal.input.acceptance).toEqual([{ runId: 'accept-1', milestoneId: 'm1', head: expect.stringMatching(/^[0-9a-f]{40}$/), passed: false, reason: '["node","e2e.js"] exited with 1', evidence: [sha256Of('out:accept-1'), sha256Of('err:accept-1')] }]);
    expect(byType(run.events, 'AcceptanceStarted')).toHaveLength(1);
  });

  it('the build completes only once acceptance passed on its result', () => {
    const run = drive(build({ coarse: false }), world(), (r) => r.outcome === 'horizon_complete');
    const kinds = run.events.map((e) => e.type);
    expect(kinds.indexOf('AcceptanceFinished')).toBeLessThan(kinds.indexOf('BuildCompleted'));
  });

  it('acceptance failing on the result with no coarse work left: the planner is asked for a repair window (purpose repair); its work is accepted, acceptance runs on the new head and passes, the build completes', () => {
    let fixed = false;
    const answer = world({ plans: { 'plan.repair.1': REPAIR }, acceptance: () => fixed });
    const run = drive(build({ coarse: false }), (e) => {
      if (e.kind === 'worker' && e.packet.nodeId === 'fix-e2e') fixed = true;
      return answer(e);
    }, (r) => r.outcome === 'horizon_complete');
    const repair = run.effects.find((e): e is Extract<EffectRequest, { kind: 'planner' }> => e.kind === 'planner')!;
    expect(repair).toMatchObject({ purpose: 'repair', callId: 'plan.repair.1' });
    expect(repair.input.acceptance?.at(-1)).toMatchObject({ passed: false, milestoneId: 'm1' });
    expect(byType(run.events, 'PlannerInvoked')[0]).toMatchObject({ purpose: 'repair' });
    expect(byType(run.events, 'HorizonRenewed')[0]).toMatchObject({ revision: 2, fromRevision: 1, detailed: [{ id: 'fix' }], coarse: [] });
    expect(byType(run.events, 'AcceptanceStarted').map((d) => d.milestoneId)).toEqual(['m1', 'fix']);
    expect(byType(run.events, 'AcceptanceFinished').map((d) => d.passed)).toEqual([false, true]);
  });

  it('repair windows are bounded (acceptanceRepairs): then the build is blocked, naming the failure, its evidence and `longbuild accept`; an operator\'s request runs it again on the head as it is and the build completes', () => {
    let broken = true;
    const blocked = drive(build({ coarse: false, repairs: 0 }), world({ acceptance: () => !broken }), (r) => r.outcome === 'blocked');
    expect(blocked.results.at(-1)!.reason).toMatch(/^acceptance failed on [0-9a-f]{12} \(milestone 'm1'\): \["node","e2e\.js"\] exited with 1; no repair window is allowed \(acceptanceRepairs 0\); see `longbuild evidence accept-1`; `longbuild accept` runs it again$/);
    expect(nextAction(blocked.spec.state)).toMatchObject({ kind: 'blocked' });
    // The environment is fixed; the operator asks for another run.
    broken = false;
    const verdict = decideAcceptanceRun(blocked.spec.state, 'the staging database is back', 'ops');
    expect(verdict.ok).toBe(true);
    const asked = blocked.spec.when((verdict as { event: DomainEvent }).event);
    expect(decideAcceptanceRun(asked.state, undefined, 'ops')).toEqual({ ok: false, reason: 'an acceptance run is already asked for: `longbuild run` makes it' });
    const done = drive(asked, world({ acceptance: () => !broken }), (r) => r.outcome === 'horizon_complete');
    expect(byType(done.events, 'AcceptanceStarted')).toEqual([{ runId: 'accept-2', milestoneId: null, head: asked.state.integrationHead, graphRevision: expect.any(Number) }]);
  });

  it('R-16 a repair proposal adds one or two new detailed milestones and nothing coarse, against the expected revision; an exact replay is a no-op', () => {
    const s = drive(build({ coarse: false, repairs: 0 }), world({ acceptance: () => false }), (r) => r.outcome === 'blocked').spec.state;
    expect(decideRepair(s, 1, REPAIR)).toMatchObject({ ok: true, noop: false });
    expect(decideRepair(s, 1, { ...REPAIR, coarse: [{ id: 'later', title: 'later' }] })).toMatchObject({ ok: false, rule: 'R-16', reason: expect.stringMatching(/adds no coarse milestones \(the proposal has later\)/) });
    expect(decideRepair(s, 1, { detailed: [{ id: 'm1', title: 'again', nodes: [] }], coarse: [] })).toMatchObject({ ok: false, rule: 'R-13' });
    expect(decideRepair(s, 0, REPAIR)).toMatchObject({ ok: false, rule: 'R-16', reason: expect.stringMatching(/stale horizon revision/) });
    expect(decideAcceptanceRun(given(buildInitialized()).state, undefined, undefined)).toMatchObject({ ok: false, reason: expect.stringMatching(/no acceptance commands/) });
  });
});
