/**
 * Issue 15's honest properties, at scale: the real controller (pure step, interpreter, effect
 * runner, a real SQLite log in memory) drives whole builds against a TEST DOUBLE of git and the
 * agents (test/support/sim-world.ts), crashing at random fault points — twice per case — and
 * resuming. Every log is read by an independent oracle (test/support/log-oracle.ts): the ready
 * wave after EVERY event, of clean, resumed and compacted runs, must equal the plain ranking of
 * the uncompacted graph the log describes. The same properties over real git and real SIGKILL
 * are test/resume-property.test.ts and `longbuild fuzz`; test/mutants/run.ts shows which
 * deliberate bugs these catch.
 */
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { Controller } from '../src/adapters/controller/controller.js';
import { logicalClock } from '../src/adapters/clock.js';
import { ScriptedPlanner } from '../src/adapters/blueprint/scripted-planner.js';
import { parseBlueprint } from '../src/adapters/blueprint/blueprint.js';
import type { Planner } from '../src/commands/ports.js';
import type { JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { buildView, evolveBuild, initialBuildState, type BuildState } from '../src/projections/build-state.js';
import { nextAction } from '../src/commands/next-action.js';
import { statusOf } from '../src/adapters/app/build-status.js';
import { viewOf } from '../src/projections/view.js';
import { rankReadyWave } from '../src/projections/graph.js';
import { dagArb, type RandomDag } from './support/arbitraries.js';
import { buildInitialized } from './support/given.js';
import { readLog } from './support/log-oracle.js';
import { CrashAt, SimCrash, SimWorld, type SimScript } from './support/sim-world.js';

const RUNS = Number(process.env.LONGBUILD_MODEL_RUNS ?? 120);
const RECOVERY = new Set(['EffectReinvoked', 'RefRepaired']);

interface Case {
  /**
   * System-level acceptance (issue 16): when on, it fails on every head without the blueprint's
   * repair node, so the build's result fails it until the planner's repair window adds that node.
   */
  readonly acceptance?: boolean;
  readonly dag: RandomDag;
  readonly writable: readonly boolean[];
  readonly detailedWindow: 1 | 2;
  readonly maxBatch: number;
  readonly compaction: boolean;
  readonly script: SimScript;
  /** Where the first and the second crash fall, as fractions of the points a run passes. */
  readonly crashes: readonly [number, number];
}

const caseArb: fc.Arbitrary<Case> = dagArb({ minNodes: 2, maxNodes: 9, maxMilestones: 4 }).chain((dag) => {
  const n = dag.nodes.length;
  const fails = fc.array(fc.integer({ min: 0, max: 2 }), { minLength: n, maxLength: n }).map((xs) => xs.map((x) => (x === 2 ? 1 : 0)));
  return fc.record({
    dag: fc.constant(dag),
    writable: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
    detailedWindow: fc.constantFrom<1 | 2>(1, 2),
    maxBatch: fc.constantFrom(1, 1, 2, 3),
    compaction: fc.boolean(),
    workerFails: fails,
    verifyFails: fails,
    // Uniform (fast-check favours the ends of a range, which would crash mostly at the first and last points).
    crashes: fc.tuple(fc.noBias(fc.integer({ min: 0, max: 9999 })), fc.noBias(fc.integer({ min: 0, max: 9999 }))).map(([a, b]) => [a / 10000, b / 10000] as const),
  }).map(({ workerFails, verifyFails, ...c }) => ({
    ...c,
    script: {
      workerFails: Object.fromEntries(dag.nodes.map((x, i) => [x.id, workerFails[i]!])),
      verifyFails: Object.fromEntries(dag.nodes.map((x, i) => [x.id, c.writable[i] ? verifyFails[i]! : 0])),
    },
  }));
});

/**
 * A case that leaves worker outcomes kept unflushed when the world changes (found by the property,
 * kept as an example with K = 1): the non-vacuity of the decision 0017 property below does not
 * depend on what the random cases happen to be.
 */
const UNFLUSHED_EXAMPLE: Case = {
  dag: {
    nodes: [{ id: 'e___', kind: 'writable', deps: [], milestone: 0 }, { id: 'en3_', kind: 'read-only', deps: [], milestone: 0 }, { id: 'o', kind: 'writable', deps: ['en3_'], milestone: 0 }, { id: 'n', kind: 'read-only', deps: [], milestone: 0 }],
    milestones: ['m1', 'm2', 'm3', 'm4'], listing: [0, 1, 3, 2],
  },
  writable: [true, false, false, true], detailedWindow: 2, maxBatch: 3, compaction: false, crashes: [0.1248, 0.6695],
  script: { workerFails: { e___: 1, en3_: 1, o: 0, n: 1 }, verifyFails: { e___: 0, en3_: 0, o: 0, n: 1 } },
};

/** The blueprint of a case: the scripted planner proposes its milestones (and renews through them). */
/** The repair window a build with acceptance gets: one writable node that makes acceptance pass. */
const REPAIR = { id: 'fix', title: 'repair the acceptance', nodes: [{ id: 'fix-1', kind: 'writable', deps: [] }] };

function blueprintOf(c: Case, compaction = c.compaction): unknown {
  return {
    request: { goal: 'test build' }, verify: [['sim-verify']], detailedWindow: c.detailedWindow, maxBatch: c.maxBatch, compaction,
    ...(c.acceptance === true ? { acceptance: [['sim-accept']], repairs: [REPAIR] } : {}),
    milestones: c.dag.milestones.map((m, mi) => ({
      id: m, title: `Milestone ${m}`,
      nodes: c.dag.listing.map((i) => ({ i, n: c.dag.nodes[i]! })).filter(({ n }) => n.milestone === mi)
        .map(({ i, n }) => ({ id: n.id, kind: c.writable[i] ? 'writable' : 'read-only', deps: [...n.deps] })),
    })),
  };
}

interface Build {
  readonly log: SqliteEventLog;
  readonly world: SimWorld;
  readonly planner: Planner;
  /** Where each crash fell. */
  readonly crashedAt: string[];
  /** Calls each crash left in doubt (key#invocation): the only ones a resume may make again. */
  readonly inDoubt: string[];
}

function newBuild(c: Case, compaction = c.compaction, concurrency = 1, speculation = 1, path = ':memory:'): Build {
  const bp = parseBlueprint(blueprintOf(c, compaction));
  const init = buildInitialized({
    detailedWindow: c.detailedWindow, maxBatch: c.maxBatch, compaction, plannerRoute: 'scripted:blueprint',
    ...(concurrency > 1 ? { concurrency } : {}), ...(speculation > 1 ? { speculation } : {}),
  });
  if (c.acceptance === true) Object.assign(init.data, { acceptance: [['sim-accept']], settings: { ...(init.data as { settings: object }).settings, acceptanceRepairs: 1 } });
  const d = init.data as { integrationRef: string; baseHead: string };
  const world = new SimWorld(c.acceptance === true ? { ...c.script, acceptFails: (content) => (content.includes('fix-1') ? 0 : Number.POSITIVE_INFINITY), acceptDuration: 2 } : c.script, d.integrationRef, d.baseHead);
  const log = new SqliteEventLog({ path });
  log.appendSync('build-sim', [{ type: init.type, data: init.data as JsonValue, metadata: { recordedAt: logicalClock().now(1), correlationId: 'b-test' } }], 'no-stream');
  const scripted = new ScriptedPlanner(bp);
  const planner: Planner = { route: scripted.route, propose: (input) => (world.plannerCalls.push(input.callId), scripted.propose(input)) };
  return { log, world, planner, crashedAt: [], inDoubt: [] };
}

/**
 * Run one controller until the build ends (or it crashes at its `crashAt`-th fault point); the
 * number of points it passed. `concurrent`: `runAll` (several workers in flight) instead of one
 * `advance` at a time.
 */
async function runController(b: Build, crashAt: number, concurrent = false, soleWriter = false): Promise<number> {
  const faults = new CrashAt(crashAt);
  try {
    const c = await Controller.open({ log: b.log, clock: logicalClock(), planner: b.planner, worker: b.world.worker, git: b.world.git, evidence: b.world.evidence, faults, calls: b.world.calls, soleWriter });
    if (concurrent) {
      await c.runAll(() => {});
      return faults.reached;
    }
    for (let i = 0; i < 5000; i++) {
      const r = await c.advance();
      if (r.outcome === 'horizon_complete' || r.outcome === 'blocked') return faults.reached;
    }
    throw new Error('the build did not end in 5000 steps');
  } catch (err) {
    if (!(err instanceof SimCrash)) throw err;
    b.crashedAt.push(faults.lastPoint);
    b.inDoubt.push(...b.world.inDoubt().filter((m) => !b.inDoubt.includes(m)));
    return faults.reached;
  }
}

const eventsOf = (b: Build): StoredEvent[] => [...b.log.iterateAll(1)];

/** The product's ready wave after every event: the real fold and the real ranking. */
function productWaves(events: readonly StoredEvent[]): { waves: string[][]; states: BuildState[] } {
  let s = initialBuildState;
  const waves: string[][] = [];
  const states: BuildState[] = [];
  for (const e of events) {
    s = evolveBuild(s, e);
    states.push(s);
    waves.push(rankReadyWave(s));
  }
  return { waves, states };
}

/** R-10 R-22 at every position: the product's ready waves equal the oracle's, and compacted nodes' dependents point at their summary. */
function expectOracle(events: readonly StoredEvent[], label: string): string[][] {
  const { waves, states } = productWaves(events);
  const oracle = readLog(events);
  for (let i = 0; i < events.length; i++) {
    expect(waves[i], `${label}: ready wave after position ${events[i]!.position} (${events[i]!.type})`).toEqual(oracle.waves[i]);
    if (events[i]!.type !== 'MilestoneCompacted') continue;
    // The compacted graph is the planned graph with compacted nodes collapsed into their summary.
    const at = readLog(events.slice(0, i + 1));
    for (const [id, n] of Object.entries(states[i]!.nodes)) {
      if (n.summary === true) continue;
      const expected = [...new Set((at.plannedDeps.get(id) ?? []).map((dep) => at.heldBy.get(dep) ?? dep))].sort();
      expect([...n.deps].sort(), `${label}: dependencies of ${id} after compaction at position ${events[i]!.position}`).toEqual(expected);
    }
  }
  return waves;
}

/** An event's data as a resumed run must reproduce it: only an adopted result says it was adopted. */
function comparable(e: StoredEvent): unknown {
  const d = e.data as Record<string, unknown>;
  return e.type === 'IntegrationPromoted' || e.type === 'AttemptFinished' ? { ...d, adopted: '(either)' } : d;
}

/** What a finished build is: its events without timestamps' source, accepted nodes, head tree, checkpoints. */
function outcomeOf(b: Build) {
  const events = eventsOf(b);
  const state = events.reduce(evolveBuild, initialBuildState);
  return {
    completed: state.completed,
    blocked: state.blocked?.reason ?? null,
    accepted: Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'accepted').sort(),
    tree: b.world.treeOf(state.integrationHead!),
    head: state.integrationHead,
    checkpoints: Object.fromEntries(Object.entries(state.checkpoints).map(([m, c]) => [m, c.sha256])),
    log: events.filter((e) => !RECOVERY.has(e.type)).map((e) => ({ type: e.type, data: comparable(e), at: e.metadata.recordedAt })),
  };
}

describe('the pure step over a simulated world (a test double of git and the agents): issue 15 properties', () => {
  it(`R-10 R-18 R-19 R-22 resume (double): ${RUNS} random builds (verification, failing attempts, batches, compaction), two crashes each, resume to the clean run's log, tree and checkpoints; every ready wave of every run equals the oracle's; no call with an observable outcome is made again`, async () => {
    let crashedTwice = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const clean = newBuild(c);
        const points = await runController(clean, 0);
        const want = outcomeOf(clean);
        expectOracle(eventsOf(clean), 'clean run');

        const b = newBuild(c);
        const first = 1 + Math.floor(c.crashes[0] * points);
        const passed = await runController(b, first);
        if (b.crashedAt.length === 1) await runController(b, 1 + Math.floor(c.crashes[1] * Math.max(1, points - passed)));
        await runController(b, 0);
        if (b.crashedAt.length === 2) crashedTwice++;
        const got = outcomeOf(b);
        expect(got, `crashed at ${b.crashedAt.join(', ')}`).toEqual(want);
        const events = eventsOf(b);
        expectOracle(events, `resumed after crashes at ${b.crashedAt.join(', ')}`);
        // Only a crash between a call's start and its kept outcome leaves it in doubt: only
        // then is it made again, once, and recorded as such; refs of an untampered world never need repair.
        const inDoubt = b.crashedAt.filter((p) => p === 'after-effect:worker' || p === 'after-effect:planner').length;
        const reinvoked = events.filter((e) => e.type === 'EffectReinvoked').length;
        expect(reinvoked, `re-invocations after crashes at ${b.crashedAt.join(', ')}`).toBeLessThanOrEqual(inDoubt);
        expect(events.filter((e) => e.type === 'RefRepaired'), `crashed at ${b.crashedAt.join(', ')}`).toEqual([]);
        expect(b.world.workerCalls.length).toBe(clean.world.workerCalls.length + events.filter((e) => e.type === 'EffectReinvoked' && (e.data as { effect: string }).effect === 'worker').length);
        expect(b.world.plannerCalls.length).toBe(clean.world.plannerCalls.length + events.filter((e) => e.type === 'EffectReinvoked' && (e.data as { effect: string }).effect === 'planner').length);
      }),
      { numRuns: RUNS },
    );
    expect(crashedTwice).toBeGreaterThan(RUNS / 4);
  }, 300_000);

  it(`R-18 decision 0017 (double): ${Math.ceil(RUNS / 3)} random builds, stepped held and not or run with K in 1..4: whenever the world is about to change (an attempt committed, a job verified or promoted), every worker outcome kept unflushed is already recorded by an AttemptFinished that another connection reads from the log file`, async () => {
    let unflushedChecked = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, fc.integer({ min: 0, max: 4 }), async (c, k) => {
        const dir = mkdtempSync(join(tmpdir(), 'longbuild-kept-'));
        const path = join(dir, 'events.db');
        try {
          const b = newBuild(c, c.compaction, Math.max(1, k), 1, path);
          // The oracle: what is durable is what a second connection reads (committed, not held).
          const reader = new SqliteEventLog({ path });
          b.world.onWorldChange = (what) => {
            if (b.world.unflushedKept.size === 0) return;
            const finished = new Set([...reader.iterateAll(1)].filter((e) => e.type === 'AttemptFinished').map((e) => (e.data as { attemptId: string }).attemptId));
            for (const key of b.world.unflushedKept) {
              unflushedChecked += 1;
              expect(finished.has(key.slice(key.indexOf(':') + 1)), `before ${what}: the outcome kept for ${key} is neither flushed nor recorded durably`).toBe(true);
            }
          };
          const controller = await Controller.open({ log: b.log, clock: logicalClock(), planner: b.planner, worker: b.world.worker, git: b.world.git, evidence: b.world.evidence, faults: new CrashAt(0), calls: b.world.calls });
          if (k > 0) await controller.runAll(() => {});
          else {
            for (let i = 0; i < 5000; i++) {
              const r = await controller.advance({ held: i % 3 !== 0 });
              if (r.outcome === 'horizon_complete' || r.outcome === 'blocked') break;
            }
            await controller.sync();
          }
          await reader.close();
          await b.log.close();
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: Math.ceil(RUNS / 3), examples: [[UNFLUSHED_EXAMPLE, 1]] },
    );
    // Not vacuous: read-only outcomes left unflushed (recorded by the commit before the change) were checked.
    expect(unflushedChecked).toBeGreaterThan(0);
  }, 300_000);

  it(`R-21 R-22 compaction on/off (double): ${Math.ceil(RUNS / 2)} random builds run with and without compaction have the same events and the same ready wave after each, and both equal the oracle's`, async () => {
    let compactions = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const on = newBuild(c, true);
        const off = newBuild(c, false);
        await runController(on, 0);
        await runController(off, 0);
        const onEvents = eventsOf(on);
        const offEvents = eventsOf(off);
        const onWaves = expectOracle(onEvents, 'compaction on');
        const offWaves = expectOracle(offEvents, 'compaction off');
        const kept = onEvents.map((e, i) => ({ e, wave: onWaves[i]! })).filter(({ e }) => e.type !== 'MilestoneCompacted');
        compactions += onEvents.length - kept.length;
        expect(kept.map(({ e }) => e.type)).toEqual(offEvents.map((e) => e.type));
        expect(kept.map(({ wave }) => wave)).toEqual(offWaves);
        expect(on.world.treeOf(onEvents.reduce(evolveBuild, initialBuildState).integrationHead!)).toBe(off.world.treeOf(offEvents.reduce(evolveBuild, initialBuildState).integrationHead!));
      }),
      { numRuns: Math.ceil(RUNS / 2) },
    );
    expect(compactions).toBeGreaterThan(RUNS / 4);
  }, 300_000);
});

/** Re-invocations per call key in a log, against the calls the crashes left in doubt. */
function expectOnlyInDoubtReinvoked(b: Build, events: readonly StoredEvent[]): void {
  const reinvoked = new Map<string, number>();
  for (const e of events) if (e.type === 'EffectReinvoked') reinvoked.set((e.data as { key: string }).key, (reinvoked.get((e.data as { key: string }).key) ?? 0) + 1);
  for (const [key, n] of reinvoked) {
    const allowed = b.inDoubt.filter((m) => m.slice(0, m.lastIndexOf('#')) === key).length;
    expect(n, `${key} re-invoked after crashes at ${b.crashedAt.join(', ')} (in doubt: ${b.inDoubt.join(', ') || 'none'})`).toBeLessThanOrEqual(allowed);
  }
  expect(events.filter((e) => e.type === 'RefRepaired'), `crashed at ${b.crashedAt.join(', ')}`).toEqual([]);
}

const concurrentArb = caseArb.chain((c) => fc.record({
  c: fc.constant(c),
  k: fc.integer({ min: 1, max: 6 }),
  // Integration jobs open at once (speculative integration): 1 (one at a time) up to 4.
  speculation: fc.integer({ min: 1, max: 4 }),
  acceptance: fc.boolean(),
  verifyDurations: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: c.dag.nodes.length, maxLength: c.dag.nodes.length }),
  durations: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: c.dag.nodes.length, maxLength: c.dag.nodes.length }),
})).map(({ c, k, speculation, acceptance, verifyDurations, durations }) => ({
  c: {
    ...c,
    acceptance,
    script: {
      ...c.script,
      durations: Object.fromEntries(c.dag.nodes.map((n, i) => [n.id, durations[i]!])),
      verifyDurations: Object.fromEntries(c.dag.nodes.map((n, i) => [n.id, verifyDurations[i]!])),
    },
  },
  k, speculation,
}));

/**
 * R-24 with speculative integration, checked on the log and the world alone: promotions form one
 * line (each from the head the one before left), every promoted tree is exactly the tree that was
 * verified for that job, and it holds the work of the previous head plus the job's own nodes —
 * nothing merged blind, nothing of a discarded job.
 */
function expectLinearPromotions(events: readonly StoredEvent[], w: SimWorld, baseHead: string, label: string): void {
  let head = baseHead;
  const verified = new Map<string, string | null>();
  const passed = new Map<string, boolean>();
  for (const e of events) {
    const d = e.data as any;
    if (e.type === 'VerificationFinished') {
      verified.set(d.jobId, d.tree);
      passed.set(d.jobId, d.passed);
    }
    if (e.type !== 'IntegrationPromoted') continue;
    const r = d.receipt;
    expect(passed.get(d.jobId), `${label}: ${d.jobId} is promoted only after its verification passed`).toBe(true);
    expect(r.baseHead, `${label}: ${d.jobId} promoted from the head before it`).toBe(head);
    expect(r.tree, `${label}: ${d.jobId} promotes the tree it verified`).toBe(verified.get(d.jobId));
    const want = [...new Set([...w.contentOf(head), ...r.nodeIds])].sort();
    expect([...w.contentOf(r.resultCommit)].sort(), `${label}: ${d.jobId}'s result holds the head's work and its own nodes`).toEqual(want);
    head = r.resultCommit;
  }
}

/** What a reading command or the decider makes of a state: a value, or the error it throws. */
const outcome = (f: () => unknown): string => {
  try {
    return JSON.stringify(f());
  } catch (err) {
    return `throws ${(err as Error).message}`;
  }
};

/**
 * Reading commands read the view (decision 0020): at every position k of a build's log, the next
 * action, `status` and `show` of the whole fold (the oracle) equal those of the view of it, and of
 * the fold of the rest of the log started from the view at k (what a reading command folds).
 * Returns the kinds of next action seen.
 */
function expectViewReads(events: readonly StoredEvent[], view: (s: BuildState) => BuildState, label: string): Set<string> {
  const states: BuildState[] = [];
  let s = initialBuildState;
  for (const e of events) states.push((s = evolveBuild(s, e)));
  const last = states.at(-1)!;
  const kinds = new Set<string>();
  for (let k = 0; k < states.length; k++) {
    const whole = states[k]!;
    const decided = outcome(() => nextAction(whole));
    kinds.add(decided.replace(/^\{"kind":"([a-z-]+)".*/, '$1'));
    const v = view(whole);
    expect(outcome(() => nextAction(v)), `${label}: next action at position ${k + 1}`).toBe(decided);
    expect(outcome(() => statusOf(v)), `${label}: status at position ${k + 1}`).toBe(outcome(() => statusOf(whole)));
    let resumed = v;
    for (const e of events.slice(k + 1)) resumed = evolveBuild(resumed, e);
    expect(outcome(() => [nextAction(resumed), statusOf(resumed), viewOf(resumed)]), `${label}: head folded from the view at position ${k + 1}`)
      .toBe(outcome(() => [nextAction(last), statusOf(last), viewOf(last)]));
  }
  return kinds;
}

describe('reading commands read the view of the build (a test double of git and the agents)', () => {
  it(`R-6 R-17 (double): ${Math.ceil(RUNS / 3)} random builds (acceptance and repair windows on or off, clean or resumed after a crash): at every position the next action, status and show of the view, and of the head folded from the view, equal the whole state's`, async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(caseArb, fc.boolean(), fc.boolean(), async (c0, acceptance, crash) => {
        const c = { ...c0, acceptance };
        const b = newBuild(c);
        if (crash) {
          const clean = newBuild(c);
          const points = await runController(clean, 0);
          await runController(b, 1 + Math.floor(c.crashes[0] * points));
        }
        await runController(b, 0);
        for (const k of expectViewReads(eventsOf(b), buildView, `crashed at ${b.crashedAt.join(', ') || 'none'}`)) seen.add(k);
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
    for (const kind of ['integrate', 'settle-attempt', 'settle-job', 'plan', 'accept', 'compact', 'blocked', 'complete']) expect(seen, `next actions seen: ${[...seen].join(', ')}`).toContain(kind);
  }, 300_000);

  it('R-6 the property catches a view that drops a validated node\'s latest attempt, the repair windows planned, or the absorbed ids of summary heads', async () => {
    const { shardedOf, shardGet } = await import('../src/projections/sharded.js');
    const openOnly = (s: BuildState): BuildState => {
      const v = buildView(s);
      return { ...v, attempts: shardedOf(Object.fromEntries(s.openAttempts.map((id) => [id, shardGet(v.attempts, id)!]))) };
    };
    const noRepairs = (s: BuildState): BuildState => {
      const v = buildView(s);
      return { ...v, plannerCalls: Object.fromEntries(Object.entries(v.plannerCalls).filter(([, c]) => c.status !== 'returned')) };
    };
    // Decision 0032: a summary's head keeps the summaries it absorbed (what `status` counts and `show` lists).
    const noAbsorbed = (s: BuildState): BuildState => {
      const v = buildView(s);
      return { ...v, summaries: Object.fromEntries(Object.entries(v.summaries).map(([id, r]) => [id, { ...r, summary: { ...r.summary, absorbedSummaryIds: [] } }])) };
    };
    for (const [name, broken] of [['open attempts only', openOnly], ['no repair windows', noRepairs], ['summary heads without absorbed ids', noAbsorbed]] as const) {
      const run = await fc.check(fc.asyncProperty(caseArb, async (c) => {
        const b = newBuild({ ...c, acceptance: true });
        await runController(b, 0);
        expectViewReads(eventsOf(b), broken, name);
      }), { numRuns: 200, seed: 42, endOnFailure: true }); // whether it fails is all that counts: no shrinking (each step of it runs a build)
      expect(run.failed, `a broken view (${name}) passed 200 runs`).toBe(true);
    }
  }, 300_000);
});

describe('several workers in flight over the simulated world (a test double of git and the agents): issue 16 properties', () => {
  it(`K = 1 (double): ${Math.ceil(RUNS / 3)} random builds run by runAll record exactly the events of the one-step-at-a-time controller`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const one = newBuild(c);
        await runController(one, 0);
        const all = newBuild(c);
        await runController(all, 0, true);
        expect(eventsOf(all).map((e) => [e.type, e.data, e.metadata.recordedAt])).toEqual(eventsOf(one).map((e) => [e.type, e.data, e.metadata.recordedAt]));
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  }, 300_000);

  it(`decision 0017 (double): ${Math.ceil(RUNS / 3)} random builds with K in 1..4, stepped by a sole writer (the controller lease held), read the log's tail only when the controller opens, and record exactly the events of a controller that reads it before every step`, async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, fc.integer({ min: 1, max: 4 }), async (c, k) => {
        /** The build with its log's tail reads counted (the log itself is the real SQLite log). */
        const counted = (b: Build): { build: Build; reads: () => number } => {
          let reads = 0;
          const log = new Proxy(b.log, {
            get: (target, key) => {
              if (key === 'readAll') return (...args: Parameters<SqliteEventLog['readAll']>) => ((reads += 1), target.readAll(...args));
              const value = Reflect.get(target, key, target) as unknown;
              return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
            },
          });
          return { build: { ...b, log }, reads: () => reads };
        };
        const reading = counted(newBuild(c, c.compaction, k));
        await runController(reading.build, 0);
        const sole = counted(newBuild(c, c.compaction, k));
        await runController(sole.build, 0, false, true);
        // At open: one read returns the log so far, one finds its end; a reader reads at every step.
        expect(sole.reads()).toBe(2);
        expect(reading.reads()).toBeGreaterThan(2);
        expect(eventsOf(sole.build).map((e) => [e.type, e.data, e.metadata.recordedAt, e.hash])).toEqual(eventsOf(reading.build).map((e) => [e.type, e.data, e.metadata.recordedAt, e.hash]));
      }),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  }, 300_000);

  it(`R-11 R-18 R-19 R-24 (double): ${RUNS} random builds with K in 1..6, speculation 1..4, random worker and verification durations, one or two crashes while calls are in flight, resume to the uninterrupted run's accepted nodes, tree and checkpointed milestones; every ready wave equals the oracle's; at most K calls and S jobs overlap; promotions stay linear (runs of verified jobs promoted together); only calls left in doubt are made again`, async () => {
    let overlapped = 0;
    let stacked = 0;
    let discarded = 0;
    let grouped = 0;
    let repaired = 0;
    await fc.assert(
      fc.asyncProperty(concurrentArb, async ({ c, k, speculation }) => {
        const clean = newBuild(c, c.compaction, k, speculation);
        const points = await runController(clean, 0, true);
        expect(clean.world.maxOverlap).toBeLessThanOrEqual(k);
        expect(clean.world.maxJobs).toBeLessThanOrEqual(speculation);
        if (clean.world.maxOverlap > 1) overlapped++;
        if (clean.world.maxJobs > 1) stacked++;
        const cleanEvents = eventsOf(clean);
        if (cleanEvents.some((e) => e.type === 'IntegrationDiscarded')) discarded++;
        if (c.acceptance === true) {
          // Acceptance failed on every head without the repair, the planner planned the repair window, and the build completed on a head that passed.
          const finished = cleanEvents.filter((e) => e.type === 'AcceptanceFinished').map((e) => (e.data as { passed: boolean }).passed);
          expect(finished.at(-1), 'the last acceptance run passed').toBe(true);
          expect(cleanEvents.some((e) => e.type === 'PlannerInvoked' && (e.data as { purpose: string }).purpose === 'repair')).toBe(true);
          expect(cleanEvents.at(-1)!.type).toBe('BuildCompleted');
          repaired++;
        }
        // A run of verified stacked jobs promoted together: several IntegrationPromoted in one append.
        if (cleanEvents.some((e, i) => i > 0 && e.type === 'IntegrationPromoted' && cleanEvents[i - 1]!.type === 'IntegrationPromoted' && e.metadata.causationId === cleanEvents[i - 1]!.metadata.causationId)) grouped++;
        expectOracle(cleanEvents, `clean run, K=${k}`);
        const baseHead = (cleanEvents[0]!.data as { baseHead: string }).baseHead;
        expectLinearPromotions(cleanEvents, clean.world, baseHead, `clean run, K=${k}, S=${speculation}`);
        expect(cleanEvents.filter((e) => e.type === 'RefRepaired'), `clean run, K=${k}, S=${speculation}: no ref ever disagrees with the log`).toEqual([]);
        const b = newBuild(c, c.compaction, k, speculation);
        const passed = await runController(b, 1 + Math.floor(c.crashes[0] * points), true);
        if (b.crashedAt.length === 1) await runController(b, 1 + Math.floor(c.crashes[1] * Math.max(1, points - passed)), true);
        await runController(b, 0, true);
        const events = eventsOf(b);
        expectOracle(events, `K=${k}, resumed after crashes at ${b.crashedAt.join(', ')}`);
        const end = (x: readonly StoredEvent[], w: SimWorld) => {
          const s = x.reduce(evolveBuild, initialBuildState);
          // Summaries are content-addressed (commits, dates: another interleaving, another id): compare what they hold.
          const compacted = Object.values(s.summaries).flatMap((r) => r.summary.compactedNodeIds);
          const accepted = [...Object.keys(s.nodes).filter((id) => s.nodes[id]!.state === 'accepted' && s.nodes[id]!.summary !== true), ...compacted].sort();
          const acceptance = Object.values(s.acceptance?.runs ?? {}).map((r) => `${r.milestoneId}:${r.status}`).sort();
          return { completed: s.completed, accepted, tree: w.contentOf(s.integrationHead!), checkpointed: Object.keys(s.checkpoints).sort(), acceptance };
        };
        expect(end(events, b.world), `K=${k}, crashed at ${b.crashedAt.join(', ')}`).toEqual(end(cleanEvents, clean.world));
        expectLinearPromotions(events, b.world, baseHead, `K=${k}, S=${speculation}, crashed at ${b.crashedAt.join(', ')}`);
        expectOnlyInDoubtReinvoked(b, events);
      }),
      { numRuns: RUNS },
    );
    expect(overlapped).toBeGreaterThan(RUNS / 5);
    // The property exercised what it is about: jobs verified on top of others, and some discarded.
    // (Not RUNS / 10: over random seeds `stacked` ran 12–23 of 120, so that bound failed now and then.)
    expect(stacked).toBeGreaterThan(RUNS / 24);
    expect(discarded).toBeGreaterThan(0);
    expect(grouped).toBeGreaterThan(0);
    expect(repaired).toBeGreaterThan(RUNS / 10);
  }, 300_000);
});
