import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_COARSE, validateProposal, validateRenewal, type PlanVerdict, type Proposal } from '../src/commands/horizon.js';
import type { MilestoneRef } from '../src/events/catalogue.js';
import type { BuildState } from '../src/projections/build-state.js';
import { initialBuildState } from '../src/projections/build-state.js';
import { horizonConflict } from '../src/projections/build-fold.js';
import { CorruptLogError } from '../src/events/errors.js';
import { RESERVED_IDS } from '../src/events/ids.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initFromBlueprint } from '../src/adapters/build-init.js';
import { openBuild } from '../src/adapters/session.js';
import { tempDir } from './support/cli.js';
import type { DomainEvent } from '../src/events/catalogue.js';
import { anyProposalArb, renewalCaseArb, type RenewalCase } from './support/arbitraries.js';
import { buildInitialized, coarse, earlierWindow, foldBuild, horizonSealed, milestone, mustValidate, node, storeEvents } from './support/given.js';

const RUNS = { numRuns: 200 };

function refused(verdict: PlanVerdict | { ok: true } | { ok: false; rule: string; reason: string }): { rule: string; reason: string } {
  if (verdict.ok) throw new Error('expected a refusal, the proposal was accepted');
  return verdict;
}

/** Assert a refusal under `rule` whose reason names every one of `ids`. */
function expectRefused(verdict: PlanVerdict | { ok: boolean }, rule: string, ...ids: string[]): string {
  const r = refused(verdict as PlanVerdict);
  expect(r.rule).toBe(rule);
  for (const id of ids) expect(r.reason).toContain(`'${id}'`);
  return r.reason;
}

const empty = initialBuildState;

// ---- an independent reference for R-13 (simple, obviously right) --------------------

const SAFE = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const refSafe = (id: unknown): boolean => typeof id === 'string' && SAFE.test(id) && !id.includes('..') && !id.endsWith('.');

function referenceAcceptsProposal(p: Proposal, state: Pick<BuildState, 'nodes' | 'checkpoints'>): boolean {
  if (p.detailed.length < 1 || p.detailed.length > 2) return false;
  if (p.coarse.length > 12) return false;
  const milestoneIds = [...p.detailed, ...p.coarse].map((m) => m.id);
  if (!milestoneIds.every(refSafe)) return false;
  if (new Set(milestoneIds).size !== milestoneIds.length) return false;
  if (milestoneIds.some((id) => id in state.checkpoints)) return false;
  const milestoneOf = new Map<string, number>();
  const all: { id: string; deps: readonly string[]; at: number }[] = [];
  p.detailed.forEach((m, at) => {
    for (const n of m.nodes) all.push({ id: n.id, deps: n.deps, at });
  });
  for (const [at, m] of p.detailed.entries()) {
    for (const n of m.nodes) {
      if (!refSafe(n.id) || !n.deps.every(refSafe)) return false;
      if (milestoneOf.has(n.id) || n.id in state.nodes) return false;
      if (n.accepted === true && n.kind === 'writable') return false;
      milestoneOf.set(n.id, at);
    }
  }
  for (const n of all) {
    for (const d of n.deps) {
      if (d in state.nodes) continue;
      const at = milestoneOf.get(d);
      if (at === undefined || at > n.at) return false;
    }
  }
  // Acyclic: peel off nodes whose proposal dependencies are all peeled; a cycle never peels.
  let left = all;
  for (;;) {
    const ids = new Set(left.map((n) => n.id));
    const next = left.filter((n) => n.deps.some((d) => ids.has(d)));
    if (next.length === left.length) break;
    left = next;
  }
  return left.length === 0;
}

// ---- an independent reference for R-16 ----------------------------------------------

const sameRef = (a: MilestoneRef, b: MilestoneRef | undefined): boolean =>
  b !== undefined && a.id === b.id && a.title === b.title && a.intent === b.intent;

function referenceAcceptsRenewal(c: RenewalCase, state: Pick<BuildState, 'nodes' | 'checkpoints'>): boolean {
  if (c.expectedRevision !== c.current.revision) return false;
  if (!referenceAcceptsProposal(c.proposal, state)) return false;
  const k = c.proposal.detailed.length;
  if (k > c.current.coarse.length) return false;
  if (!c.proposal.detailed.every((m, i) => m.id === c.current.coarse[i]!.id)) return false;
  const suffix = c.current.coarse.slice(k);
  if (!suffix.every((s, i) => sameRef(s, c.proposal.coarse[i]))) return false;
  return c.proposal.coarse.length <= 12;
}

/** The host's whole check of a renewal: the proposal and then the promotion. */
function hostRenewal(c: RenewalCase, state: Pick<BuildState, 'nodes' | 'checkpoints'>) {
  const v = validateProposal(c.proposal, state);
  if (!v.ok) return v;
  return validateRenewal(c.current, c.expectedRevision, v.plan);
}

// ---- R-13 ------------------------------------------------------------------------

describe('R-13 horizon proposals', () => {
  const m1 = () => milestone('m1', [node('api'), node('ui', ['api'])]);

  it('R-13 a proposal with one or two detailed milestones and ≤ 12 coarse is accepted', () => {
    const v = validateProposal({ detailed: [m1(), milestone('m2', [node('docs', ['ui'])])], coarse: Array.from({ length: 12 }, (_, i) => coarse(`c${i}`)) }, empty);
    expect(v.ok).toBe(true);
    if (v.ok) {
      expect(v.plan.nodes.map((n) => [n.id, n.milestone])).toEqual([['api', 'm1'], ['ui', 'm1'], ['docs', 'm2']]);
      expect(v.plan.planSha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('R-13 zero detailed milestones are refused', () => {
    const reason = expectRefused(validateProposal({ detailed: [], coarse: [coarse('c1')] }, empty), 'R-13');
    expect(reason).toContain('has 0');
  });

  it('R-13 three detailed milestones are refused, naming them', () => {
    const v = validateProposal({ detailed: [m1(), milestone('m2'), milestone('m3')], coarse: [] }, empty);
    const reason = expectRefused(v, 'R-13');
    expect(reason).toContain('has 3');
    expect(reason).toContain('m1, m2, m3');
  });

  it('R-13 thirteen coarse milestones are refused, naming the one over the limit', () => {
    const v = validateProposal({ detailed: [m1()], coarse: Array.from({ length: 13 }, (_, i) => coarse(`c${i + 1}`)) }, empty);
    const reason = expectRefused(v, 'R-13');
    expect(reason).toContain('has 13');
    expect(reason).toContain('c13 over the limit');
  });

  it('R-13 a node in two milestones is refused, naming the node and both milestones', () => {
    const v = validateProposal({ detailed: [m1(), milestone('m2', [node('api')])], coarse: [] }, empty);
    expectRefused(v, 'R-13', 'api', 'm1', 'm2');
  });

  it('R-13 a node listed twice in one milestone is refused', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('api'), node('api')])], coarse: [] }, empty);
    expectRefused(v, 'R-13', 'api', 'm1');
  });

  it('R-13 a dependency omitted from the horizon (nowhere) is refused, naming consumer and dependency', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('ui', ['api'])])], coarse: [] }, empty);
    const reason = expectRefused(v, 'R-13', 'ui', 'api');
    expect(reason).toContain('cannot be omitted');
  });

  it('R-13 a dependency on work that is only coarse is refused', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('ui', ['release'])])], coarse: [coarse('release')] }, empty);
    expectRefused(v, 'R-13', 'ui', 'release');
  });

  it('R-13 a dependency placed in a later milestone than its consumer is refused', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('ui', ['api'])]), milestone('m2', [node('api')])], coarse: [] }, empty);
    expectRefused(v, 'R-13', 'ui', 'm1', 'api', 'm2');
  });

  it('R-13 a dependency cycle is refused, naming the cycle', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('a', ['c']), node('b', ['a']), node('c', ['b'])])], coarse: [] }, empty);
    const reason = expectRefused(v, 'R-13');
    expect(reason).toContain('a -> c -> b -> a');
  });

  it('R-13 a self-dependency is refused', () => {
    expectRefused(validateProposal({ detailed: [milestone('m1', [node('a', ['a'])])], coarse: [] }, empty), 'R-13', 'a');
  });

  it('R-13 duplicate milestone ids are refused (detailed/detailed, detailed/coarse, coarse/coarse)', () => {
    expectRefused(validateProposal({ detailed: [m1(), milestone('m1')], coarse: [] }, empty), 'R-13', 'm1');
    expectRefused(validateProposal({ detailed: [m1()], coarse: [coarse('m1')] }, empty), 'R-13', 'm1');
    expectRefused(validateProposal({ detailed: [m1()], coarse: [coarse('c1'), coarse('c1')] }, empty), 'R-13', 'c1');
  });

  it('R-13 a writable node marked accepted is refused (R-8: only a receipt accepts a writable node)', () => {
    const v = validateProposal({ detailed: [milestone('m1', [node('api', [], { accepted: true })])], coarse: [] }, empty);
    const reason = expectRefused(v, 'R-8', 'api');
    expect(reason).toContain('receipt');
    expect(validateProposal({ detailed: [milestone('m1', [node('iface', [], { kind: 'read-only', accepted: true })])], coarse: [] }, empty).ok).toBe(true);
  });

  it('R-13 a node already in the graph, or a checkpointed milestone, cannot be planned again', () => {
    const state = earlierWindow().state;
    expectRefused(validateProposal({ detailed: [milestone('m1', [node('base-a')])], coarse: [] }, state), 'R-13', 'base-a', 'd0');
    expectRefused(validateProposal({ detailed: [milestone('m1')], coarse: [coarse('d0')] }, state), 'R-13', 'd0');
    // A dependency on accepted graph truth is neither omitted nor later.
    expect(validateProposal({ detailed: [milestone('m1', [node('next', ['base-b'])])], coarse: [] }, state).ok).toBe(true);
  });

  it("R-8 the id 'constructor' is refused as a milestone, node or dependency id (a plain record already answers to it: it looked checkpointed, present or accepted)", () => {
    expect([...RESERVED_IDS]).toEqual(['constructor']);
    for (const state of [empty, earlierWindow().state]) {
      expect(expectRefused(validateProposal({ detailed: [milestone('constructor', [node('a')])], coarse: [] }, state), 'R-8', 'constructor')).toContain('milestone id');
      expect(expectRefused(validateProposal({ detailed: [m1()], coarse: [coarse('constructor')] }, state), 'R-8', 'constructor')).toContain('milestone id');
      expect(expectRefused(validateProposal({ detailed: [milestone('m1', [node('constructor')])], coarse: [] }, state), 'R-8', 'constructor')).toContain('node id');
      expect(expectRefused(validateProposal({ detailed: [milestone('m1', [node('a', ['constructor'])])], coarse: [] }, state), 'R-8', 'constructor')).toContain('dependency id');
    }
  });

  it("R-8 R-13 a planner's plan that depends on a node 'constructor' that exists nowhere is refused, not sealed (it was sealed, and the build blocked on a node that could never be ready)", async () => {
    const repo = tempDir();
    const bp = join(repo, 'bp.json');
    writeFileSync(bp, JSON.stringify({
      request: { goal: 'reserved ids' }, verify: [['true']], detailedWindow: 1,
      milestones: [{ id: 'm1', title: 'M1', nodes: [{ id: 'a', kind: 'read-only', deps: [] }] }],
    }));
    await initFromBlueprint(bp, { repo });
    // The planner is an agent: it may name anything. This one asks for a dependency on 'constructor'.
    const asked: number[] = [];
    const planner = {
      route: 'scripted:blueprint',
      propose: async () => (asked.push(1), { detailed: [{ id: 'm1', title: 'M1', nodes: [{ id: 'a', kind: 'read-only', deps: ['constructor'], title: 'a', description: 'a', acceptance: ['a'] }] }], coarse: [] }),
    };
    const s = await openBuild({ repo, planner });
    try {
      let r = await s.advance();
      for (let i = 0; i < 10 && r.outcome !== 'blocked'; i++) r = await s.advance();
      expect(r.outcome).toBe('blocked');
      expect(JSON.stringify(r)).toContain("dependency id 'constructor' is reserved");
      expect(asked.length).toBeGreaterThan(0);
      const types = (await s.log.readAll({ from: 1, limit: 1000 })).map((e) => e.type);
      expect(types).not.toContain('HorizonSealed');
      expect(Object.keys(s.controller.current.nodes)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('R-13 a malformed proposal is refused under R-28 with the field named', () => {
    const r = refused(validateProposal({ detailed: [{ id: 'm1', title: 'x', nodes: [{ id: 'a', kind: 'magic', deps: [] }] }], coarse: [] }, empty));
    expect(r.rule).toBe('R-28');
    expect(r.reason).toContain('detailed.0.nodes.0.kind');
    expect(refused(validateProposal({ detailed: [], coarse: [], extra: 1 }, empty)).rule).toBe('R-28');
    expect(refused(validateProposal('not a plan', empty)).rule).toBe('R-28');
  });

  it('R-13 planSha256 is the same for the same plan and differs for a different plan', () => {
    const p = { detailed: [m1()], coarse: [coarse('c1')] };
    expect(mustValidate(p).planSha256).toBe(mustValidate(JSON.parse(JSON.stringify(p))).planSha256);
    expect(mustValidate({ ...p, coarse: [coarse('c2')] }).planSha256).not.toBe(mustValidate(p).planSha256);
  });

  it('R-13 property: over random valid and mutated plans, validateProposal accepts exactly the valid ones', () => {
    const state = earlierWindow().state;
    let accepted = 0;
    let total = 0;
    fc.assert(
      fc.property(anyProposalArb({ maxNodes: 8, external: ['base-a', 'base-b'] }, ['base-a', 'base-b'], ['d0']), (p) => {
        const verdict = validateProposal(p, state);
        const expected = referenceAcceptsProposal(p, state);
        total++;
        if (verdict.ok) accepted++;
        expect(verdict.ok, verdict.ok ? 'accepted' : `${verdict.rule}: ${verdict.reason}`).toBe(expected);
        if (!verdict.ok) expect(verdict.reason.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
    // Both sides of the property were exercised.
    expect(accepted).toBeGreaterThan(total / 10);
    expect(total - accepted).toBeGreaterThan(total / 10);
  });
});

// ---- R-16 ------------------------------------------------------------------------

describe('R-16 horizon renewal', () => {
  const current = { revision: 3, coarse: [coarse('c1'), coarse('c2'), coarse('c3')] };
  const state = () => earlierWindow(current.coarse).state;
  const plan = (detailed: string[], coarseList: MilestoneRef[]) =>
    mustValidate({ detailed: detailed.map((id) => milestone(id, [node(`${id}-work`)])), coarse: coarseList }, state());

  it('R-16 promoting the first one or two coarse milestones with the suffix untouched is accepted', () => {
    expect(validateRenewal(current, 3, plan(['c1'], [coarse('c2'), coarse('c3')]))).toEqual({ ok: true });
    expect(validateRenewal(current, 3, plan(['c1', 'c2'], [coarse('c3')]))).toEqual({ ok: true });
    expect(validateRenewal(current, 3, plan(['c1', 'c2'], [coarse('c3'), coarse('c4'), coarse('c5')]))).toEqual({ ok: true });
  });

  it('R-16 skipping a coarse milestone is refused', () => {
    expectRefused(validateRenewal(current, 3, plan(['c2'], [coarse('c3')])), 'R-16', 'c1');
  });

  it('R-16 renaming a promoted or a suffix milestone is refused', () => {
    expectRefused(validateRenewal(current, 3, plan(['c1-new'], [coarse('c2'), coarse('c3')])), 'R-16', 'c1-new', 'c1');
    expectRefused(validateRenewal(current, 3, plan(['c1'], [coarse('c2', 'Another title'), coarse('c3')])), 'R-16', 'c2');
    expectRefused(validateRenewal(current, 3, plan(['c1'], [coarse('c2'), coarse('c3b')])), 'R-16', 'c3');
  });

  it('R-16 reordering promoted or suffix milestones is refused', () => {
    expectRefused(validateRenewal(current, 3, plan(['c2', 'c1'], [coarse('c3')])), 'R-16', 'c1', 'c2');
    expectRefused(validateRenewal(current, 3, plan(['c1'], [coarse('c3'), coarse('c2')])), 'R-16', 'c2');
  });

  it('R-16 repeating a coarse milestone is refused', () => {
    // Through the host's pipeline the duplicate is an R-13 refusal...
    const dup = validateProposal({ detailed: [milestone('c1')], coarse: [coarse('c2'), coarse('c3'), coarse('c2')] }, state());
    expectRefused(dup, 'R-13', 'c2');
    // ...and validateRenewal refuses a repeat on its own too.
    const repeated = { ...plan(['c1'], [coarse('c2'), coarse('c3')]) };
    const twice = { ...repeated, detailed: [repeated.detailed[0]!, repeated.detailed[0]!] };
    expectRefused(validateRenewal(current, 3, twice), 'R-16', 'c1');
    const suffixTwice = { ...repeated, coarse: [coarse('c2'), coarse('c3'), coarse('c3')] };
    expectRefused(validateRenewal(current, 3, suffixTwice), 'R-16', 'c3');
  });

  it('R-16 losing a coarse milestone is refused', () => {
    expectRefused(validateRenewal(current, 3, plan(['c1'], [coarse('c2')])), 'R-16', 'c3');
    expectRefused(validateRenewal(current, 3, plan(['c1'], [])), 'R-16', 'c2');
  });

  it('R-16 inventing a detailed milestone beyond the remaining coarse ones is refused', () => {
    const one = { revision: 1, coarse: [coarse('c1')] };
    expectRefused(validateRenewal(one, 1, mustValidate({ detailed: [milestone('c1'), milestone('extra')], coarse: [] })), 'R-16');
  });

  it('R-16 more than twelve coarse milestones after renewal is refused', () => {
    const twelve = { revision: 1, coarse: Array.from({ length: 12 }, (_, i) => coarse(`c${i + 1}`)) };
    const p = mustValidate({ detailed: [milestone('c1')], coarse: twelve.coarse.slice(1) });
    expect(validateRenewal(twelve, 1, p)).toEqual({ ok: true });
    const over = { ...p, coarse: [...p.coarse, coarse('c13'), coarse('c14')] };
    const reason = expectRefused(validateRenewal(twelve, 1, over), 'R-16');
    expect(reason).toContain(`${MAX_COARSE}`);
  });

  it('R-16 a stale expected revision is refused (compare-and-set)', () => {
    const reason = expectRefused(validateRenewal(current, 2, plan(['c1'], [coarse('c2'), coarse('c3')])), 'R-16');
    expect(reason).toContain('stale');
    expect(reason).toContain('revision 3');
    expect(refused(validateRenewal(current, 4, plan(['c1'], [coarse('c2'), coarse('c3')]))).rule).toBe('R-16');
  });

  it('R-16 property: a renewal is accepted exactly when it is an exact prefix promotion', () => {
    const byMutation = new Map<string, { ok: number; all: number }>();
    fc.assert(
      fc.property(renewalCaseArb(['base-a', 'base-b']), (c) => {
        const s = earlierWindow(c.current.coarse as MilestoneRef[]).state;
        const verdict = hostRenewal(c, s);
        const expected = referenceAcceptsRenewal(c, s);
        const tally = byMutation.get(c.mutation) ?? { ok: 0, all: 0 };
        byMutation.set(c.mutation, { ok: tally.ok + (verdict.ok ? 1 : 0), all: tally.all + 1 });
        expect(verdict.ok, verdict.ok ? 'accepted' : `${verdict.rule}: ${verdict.reason}`).toBe(expected);
      }),
      RUNS,
    );
    // Exact promotions (no mutation) were generated and accepted.
    expect(byMutation.get('none')?.ok).toBeGreaterThan(0);
    expect(byMutation.get('none')?.ok).toBe(byMutation.get('none')?.all);
  });
});

describe('R-15 a sealed identity is never reused for another plan', () => {
  const first = horizonSealed({ detailed: [milestone('m1', [node('api')])], coarse: [] });
  const other = horizonSealed({ detailed: [milestone('m1', [node('api'), node('ui', ['api'])])], coarse: [] });
  const sameId = (e: DomainEvent, from: DomainEvent): DomainEvent => ({ ...e, data: { ...(e.data as object), horizonId: (from.data as { horizonId: string }).horizonId } } as DomainEvent);

  it('the fold treats the same plan sealed again as a no-op, and another plan under the same identity as a corrupt log, naming its position', () => {
    const once = foldBuild(storeEvents([buildInitialized(), first]));
    const twice = foldBuild(storeEvents([buildInitialized(), first, first]));
    expect(twice.horizon).toEqual(once.horizon);
    expect(twice.graphRevision).toBe(once.graphRevision);
    expect(() => foldBuild(storeEvents([buildInitialized(), first, sameId(other, first)]))).toThrow(CorruptLogError);
    expect(() => foldBuild(storeEvents([buildInitialized(), first, sameId(other, first)]))).toThrow(/corrupt log at position 3: R-15: a seal of h-\w+ r1 \(plan \w+\) would replace h-\w+ r1/);
  });

  it('the decider refuses the same conflicts: a renewal must be the next revision of the horizon in force', () => {
    const h = { horizonId: 'h-1', revision: 2, planSha256: 'a'.repeat(64) };
    expect(horizonConflict(null, 'HorizonSealed', h)).toBeNull();
    expect(horizonConflict(h, 'HorizonSealed', h)).toBe('same');
    expect(horizonConflict(h, 'HorizonSealed', { ...h, planSha256: 'b'.repeat(64) })).toMatch(/^R-15: a seal of h-1 r2/);
    expect(horizonConflict(h, 'HorizonRenewed', { ...h, revision: 3, planSha256: 'b'.repeat(64) })).toBeNull();
    expect(horizonConflict(h, 'HorizonRenewed', { ...h, revision: 2, planSha256: 'b'.repeat(64) })).toMatch(/^R-15: a renewal of h-1 r2/);
    expect(horizonConflict(h, 'HorizonRenewed', { ...h, revision: 4, planSha256: 'b'.repeat(64) })).toMatch(/R-15/);
    expect(horizonConflict(h, 'HorizonRenewed', { ...h, horizonId: 'h-2', revision: 3 })).toBeNull(); // a new identity reuses none
    expect(horizonConflict(h, 'HorizonSealed', { ...h, revision: 1, planSha256: 'b'.repeat(64) })).toMatch(/^R-15: a seal of h-1 r1/); // an earlier revision of h-1
    expect(horizonConflict(null, 'HorizonRenewed', h)).toMatch(/without a sealed horizon/);
  });
});
