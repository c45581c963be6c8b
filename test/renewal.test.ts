import { countingWorker, throwingPlanner } from './support/drivers.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initFromBlueprint } from '../src/adapters/build-init.js';
import { openBuild } from '../src/adapters/session.js';
import { parseBlueprint } from '../src/adapters/blueprint/blueprint.js';
import { ScriptedPlanner } from '../src/adapters/blueprint/scripted-planner.js';
import type { Planner } from '../src/commands/ports.js';
import type { MilestoneRef } from '../src/events/catalogue.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { compactMilestone } from '../src/commands/compaction.js';
import { decideRenewal, validateRenewal } from '../src/commands/horizon.js';
import { renewalCaseArb, type RenewalCase } from './support/arbitraries.js';
import { earlierWindow, horizonRenewed } from './support/given.js';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';



describe('R-16 R-23 a three-milestone build: two horizons, compaction after every milestone, exact resume', () => {
  it('R-16 R-19 R-23 helios: SIGKILL between checkpoint and compaction, then after the renewal; resume compacts before any dispatch and never calls the planner again', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });

    // 1: a real SIGKILL after the first checkpoint, before its compaction.
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'before-append:MilestoneCompacted:1' } }).signal).toBe('SIGKILL');
    const mid = cliJson(['status'], { cwd: repo });
    expect(mid.checkpoints).toEqual(['interfaces-and-api']);
    expect(mid.summaries).toEqual([]);

    // 2: resume; a real SIGKILL right after the renewal is appended.
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-append:HorizonRenewed:1' } }).signal).toBe('SIGKILL');
    const renewed = cliJson(['status'], { cwd: repo });
    expect(renewed.horizon).toMatchObject({ revision: 2, detailed: ['release-preview'], coarse: [] });
    expect(renewed.calls.planner).toBe(2);

    // 3: resume in process with a planner that throws if called: the log already has both plans.
    const workerCalls: string[] = [];
    const s = await openBuild({ repo, planner: throwingPlanner, worker: countingWorker(HELIOS, workerCalls) });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await s.advance();
        outcomes.push(r.outcome);
        if (r.outcome === 'horizon_complete') break;
      }
      // The kill came once the renewal was durable, with the next dispatch's intent in the same
      // commit (decision 0017): the resume starts that call (never started, so no re-invocation).
      expect(outcomes).toEqual(['recovered', 'integrated', 'checkpointed', 'compacted', 'horizon_complete']);
      expect(workerCalls).toEqual(['release-notes']);
      const st = s.controller.current;
      expect(st.calls.planner).toBe(2);
      expect(Object.keys(st.checkpoints)).toEqual(['interfaces-and-api', 'running-home', 'release-preview']);

      const log: StoredEvent[] = await s.log.readAll({ from: 1, limit: 10_000 });
      const types = log.map((e) => e.type);
      expect(types.filter((t) => t === 'PlannerInvoked')).toHaveLength(2);
      expect(types).not.toContain('EffectReinvoked');
      // Each milestone is compacted right after its checkpoint, before any other controller event.
      log.forEach((e, i) => {
        if (e.type === 'CheckpointWritten') expect(log[i + 1]!.type).toBe('MilestoneCompacted');
      });
      expect(types.filter((t) => t === 'MilestoneCompacted')).toHaveLength(3);
      // Two horizons in one row: sealed r1 with release-preview coarse, renewed r2 promoting exactly it.
      const sealed = log.find((e) => e.type === 'HorizonSealed')!.data as { horizonId: string; coarse: MilestoneRef[] };
      const renewal = log.find((e) => e.type === 'HorizonRenewed')!.data as { horizonId: string; revision: number; fromRevision: number; detailed: MilestoneRef[] };
      expect(renewal).toMatchObject({ horizonId: sealed.horizonId, revision: 2, fromRevision: 1 });
      expect(renewal.detailed.map((m) => m.id)).toEqual(sealed.coarse.slice(0, 1).map((m) => m.id));
      // The later summaries absorbed the earlier ones; all three stay in history.
      expect(Object.values(st.summaries).map((r) => r.absorbedBy === null)).toEqual([false, false, true]);
      expect(Object.keys(st.nodes)).toEqual([Object.keys(st.summaries)[2]]);
    } finally {
      await s.close();
    }

    // Time travel across compaction: before the first compaction the original nodes; a checkpoint as it was.
    const firstCp = cliJson(['show', '--checkpoint', 'interfaces-and-api'], { cwd: repo });
    expect(firstCp.nodes.map((n: { id: string }) => n.id)).toEqual(['caregiver-home', 'catalog-api', 'interfaces']);
    const atCp2 = cliJson(['show', '--checkpoint', 'running-home'], { cwd: repo });
    expect(atCp2.nodes).toHaveLength(2);
    expect(atCp2.nodes.find((n: { id: string }) => n.id === 'caregiver-home')).toMatchObject({ state: 'accepted', deps: [expect.stringMatching(/^summary-/)] });
    const byRevision = cliJson(['show', '--revision', firstCp.graphRevision], { cwd: repo });
    expect(byRevision.nodes).toEqual(firstCp.nodes);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  });
});

describe('R-16 rejected renewals block with a message naming the rule', () => {
  it('R-16 a planner that skips the first coarse milestone is refused, recorded, and the build blocks without asking again', async () => {
    const repo = tempDir();
    const milestones = ['a', 'b', 'c', 'd'].map((id) => ({ id, title: `Milestone ${id}`, nodes: [{ id: `${id}-1`, kind: 'read-only', deps: [] }] }));
    const path = join(repo, 'bp.json');
    writeFileSync(path, JSON.stringify({ request: { goal: 'skip' }, verify: [['true']], detailedWindow: 1, coarseWindow: 12, milestones }));
    await initFromBlueprint(path, { repo });
    const scripted = new ScriptedPlanner(parseBlueprint(readFileSync(path, 'utf8')));
    const calls: string[] = [];
    const skipping: Planner = {
      route: 'scripted:blueprint',
      async propose(input) {
        calls.push(input.callId);
        if (input.purpose === 'seal') return scripted.propose(input);
        // Promote 'c' and keep 'd': 'b' is skipped.
        return { detailed: [{ id: 'c', title: 'Milestone c', nodes: [{ id: 'c-1', kind: 'read-only', deps: [] }] }], coarse: [{ id: 'd', title: 'Milestone d' }] };
      },
    };
    const s = await openBuild({ repo, planner: skipping });
    try {
      const outcomes: string[] = [];
      let last;
      for (let i = 0; i < 10; i++) {
        last = await s.advance();
        outcomes.push(last.outcome);
        if (last.outcome === 'blocked') break;
      }
      expect(outcomes).toEqual(['planned', 'dispatched', 'checkpointed', 'compacted', 'blocked']);
      expect(last!.reason).toMatch(/^proposal refused \(R-16\): .*skips 'b'/);
      const again = await s.advance();
      expect(again.outcome).toBe('blocked');
      expect(again.reason).toMatch(/^renewal refused \(R-16\): .*skips 'b' \(promotes 'c'\)/);
      expect(calls).toEqual(['plan.seal.0', 'plan.renew.1']);
      const st = s.controller.current;
      expect(st.horizon!.revision).toBe(1);
      expect(st.horizon!.coarse.map((m) => m.id)).toEqual(['b', 'c', 'd']);
      expect(st.plannerCalls['plan.renew.1']).toMatchObject({ status: 'rejected', rejection: { rule: 'R-16' } });
      expect(Object.keys(st.nodes).some((id) => id.startsWith('c-'))).toBe(false);
    } finally {
      await s.close();
    }
  });
});

// ---- R-16 on a compacted graph --------------------------------------------------------------

/** The reference: an exact prefix promotion against the expected revision, suffix untouched, ≤ 12 coarse, no repeats. */
function exactPrefixPromotion(c: RenewalCase): boolean {
  if (c.expectedRevision !== c.current.revision) return false;
  const k = c.proposal.detailed.length;
  if (k < 1 || k > 2 || k > c.current.coarse.length) return false;
  if (!c.proposal.detailed.every((m, i) => m.id === c.current.coarse[i]!.id)) return false;
  const suffix = c.current.coarse.slice(k);
  const same = (a: MilestoneRef, b: MilestoneRef | undefined) => b !== undefined && a.id === b.id && a.title === b.title && a.intent === b.intent;
  if (!suffix.every((m, i) => same(m, c.proposal.coarse[i]))) return false;
  const ids = [...c.proposal.detailed, ...c.proposal.coarse].map((m) => m.id);
  return new Set(ids).size === ids.length && c.proposal.coarse.length <= 12;
}

describe('R-16 renewal properties over a compacted graph', () => {
  it('R-16 property: a random renewal is accepted exactly when it is an exact prefix promotion; success increments the revision once; an exact replay is a no-op', () => {
    let accepted = 0;
    fc.assert(
      fc.property(renewalCaseArb(['base-a', 'base-b']), (c) => {
        // The earlier window (base-a, base-b) is checkpointed and compacted into one summary.
        let spec = earlierWindow(c.current.coarse as MilestoneRef[]);
        const v = compactMilestone(spec.state, 'd0', 't');
        if (!v.ok || v.replay) throw new Error(`compaction refused: ${v.ok ? 'replay' : v.reason}`);
        spec = spec.when({ type: 'MilestoneCompacted', data: v.data });
        const state = { ...spec.state, horizon: { ...spec.state.horizon!, revision: c.current.revision } };
        const verdict = decideRenewal(state, c.expectedRevision, c.proposal);
        expect(verdict.ok && !verdict.noop, verdict.ok ? 'accepted' : `${verdict.rule}: ${verdict.reason}`).toBe(exactPrefixPromotion(c));
        if (!verdict.ok) {
          expect(['R-16', 'R-13']).toContain(verdict.rule);
          return;
        }
        if (verdict.noop) throw new Error('a first renewal cannot be a replay');
        accepted++;
        // The same checks the controller makes (compare-and-set against the horizon row) agree.
        expect(validateRenewal(state.horizon, c.expectedRevision, verdict.plan)).toEqual({ ok: true });
        const after = spec.when(horizonRenewed(verdict.plan, c.current.revision, spec.state.graphRevision)).state;
        expect(after.horizon!.revision).toBe(c.current.revision + 1);
        // Dependencies on compacted work now name the live summary.
        for (const n of verdict.plan.nodes) {
          for (const d of after.nodes[n.id]!.deps) expect(after.nodes[d], `${n.id} -> ${d}`).toBeDefined();
        }
        expect(decideRenewal(after, c.current.revision, c.proposal)).toEqual({ ok: true, noop: true });
      }),
      { numRuns: 150 },
    );
    expect(accepted).toBeGreaterThan(10);
  });
});
