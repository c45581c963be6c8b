/**
 * the passing tests on the integration ref never shrink but by retirement. Random
 * plans (nodes that declare test changes or not, retire tests or not, under each policy) and
 * random test runs (what each candidate's runner prints, and its hold-out) are driven through the
 * pure step, with each verification's tests read by the host's own code (reports parsed, the base
 * measured or known, the hold-out run); an independent oracle keeps the ref's passing set from the
 * runs themselves, and checks every promotion against it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent, JobTests, TestPolicy } from '../src/events/catalogue.js';
import { sha256Hex } from '../src/events/hash.js';
import type { EffectRequest, EffectResults, StepContext, StepResult, VerificationOutcome } from '../src/commands/decide-step.js';
import { jobTests, readRun } from '../src/adapters/controller/test-evidence.js';
import type { EvidenceStore, GitPort, VerificationRun } from '../src/adapters/controller/effect-ports.js';
import { judgeTests } from '../src/commands/test-ratchet.js';
import { interpretStep } from './support/pure-step.js';
import { BASE_HEAD, buildInitialized, given, gitShaOf, horizonSealed, milestone, node, sha256Of, type BuildSpec } from './support/given.js';

const CTX: StepContext = { now: '2026-01-01T00:00:10.000Z', attemptRefsChecked: true, plannerRoute: 'scripted', workerReworks: false };
const NAMES = ['t0', 't1', 't2', 't3', 't4', 't5'];
type Outcome = 'pass' | 'fail' | 'skip';
/** What a runner prints for a tree: each test's outcome (a test absent from it did not run). */
type Run = Readonly<Record<string, Outcome>>;

const runArb: fc.Arbitrary<Run> = fc.dictionary(fc.constantFrom(...NAMES), fc.constantFrom<Outcome>('pass', 'pass', 'pass', 'fail', 'skip'), { maxKeys: NAMES.length });

interface Plan {
  readonly policy: TestPolicy['testChanges'];
  readonly head: Run;
  readonly nodes: readonly { readonly declares: boolean; readonly retires: readonly string[]; readonly run: Run; readonly holdout: Run }[];
}

const planArb: fc.Arbitrary<Plan> = fc.record({
  policy: fc.constantFrom<TestPolicy['testChanges']>('strict', 'review', 'record'),
  head: runArb,
  nodes: fc.array(fc.record({ declares: fc.boolean(), retires: fc.subarray(NAMES, { maxLength: 3 }), run: runArb, holdout: runArb }), { minLength: 1, maxLength: 4 }),
});

/** TAP as node's runner prints a flat suite. */
function tap(run: Run): Buffer {
  const names = Object.keys(run).sort();
  const lines = names.map((n, i) => `${run[n] === 'fail' ? 'not ok' : 'ok'} ${i + 1} - ${n}${run[n] === 'skip' ? ' # SKIP' : ''}`);
  return Buffer.from(`TAP version 13\n${lines.join('\n')}${lines.length > 0 ? '\n' : ''}1..${names.length}\n`);
}
const passing = (run: Run): Set<string> => new Set(Object.keys(run).filter((n) => run[n] === 'pass'));
const verification = (run: Run): VerificationRun => {
  const failed = Object.values(run).includes('fail');
  return {
    passed: !failed, ...(failed ? { reason: '["node","--test"] exited with 1' } : {}),
    commands: [{ argv: ['node', '--test'], exitCode: failed ? 1 : 0, stdout: tap(run), stderr: Buffer.alloc(0), durationMs: 1, cacheHit: false }],
  };
};

function memoryEvidence(): EvidenceStore {
  const files = new Map<string, Buffer>();
  return { put: (b) => { const sha = sha256Hex(b); files.set(sha, Buffer.from(b)); return sha; }, get: (sha) => files.get(sha) ?? null };
}

const POLICY = (testChanges: TestPolicy['testChanges']): TestPolicy => ({
  surface: { files: ['package.json#scripts'], tests: ['test/**'], ecosystems: ['npm'], source: 'detected' },
  testChanges, holdout: 'declared', reports: [{ format: 'tap' }],
});

/** The build: one milestone, its nodes in a chain, each as the plan says. */
function build(p: Plan): BuildSpec {
  const init = buildInitialized({ detailedWindow: 1, maxAttempts: 2 });
  const withTests = { ...init, data: { ...(init.data as object), verify: [['node', '--test']], tests: POLICY(p.policy) } } as DomainEvent;
  const nodes = p.nodes.map((n, i) => node(`n${i}`, i === 0 ? [] : [`n${i - 1}`], {
    ...(n.declares ? { changes: ['tests' as const] } : {}), ...(n.retires.length > 0 ? { retires: [...n.retires] } : {}),
  }));
  return given(withTests, horizonSealed({ detailed: [milestone('m1', nodes)], coarse: [] }));
}

/** The world: workers commit, the host's checks pass, the ref moves; verifications are computed apart (verifyOutcome). */
function world(): (e: EffectRequest, spec: BuildSpec) => EffectResults[keyof EffectResults] | undefined {
  return (e, spec) => {
    switch (e.kind) {
      case 'observe-refs':
        return undefined;
      case 'worker':
        return { kept: { outcome: 'committed', stdoutSha256: sha256Of('out'), stderrSha256: sha256Of('err') }, worktree: `/w/${e.attemptId}` };
      case 'finish-clone':
        return { kind: 'committed', commit: gitShaOf(`c:${e.attemptId}`), tree: gitShaOf(`t:${e.attemptId}`) };
      case 'check-candidate':
        return { problem: null };
      case 'read-ref':
        return { commit: spec.state.integrationHead };
      case 'promote':
        return { ok: true };
      case 'delete-branches':
        return null;
      default:
        throw new Error(`no answer for ${e.kind}`);
    }
  };
}

/** A verification's outcome as the host computes it: the run's reports read, the job's tests by `jobTests`. */
async function verifyOutcome(p: Plan, e: Extract<EffectRequest, { kind: 'verify' }>, evidence: EvidenceStore, nodeIndex: number): Promise<VerificationOutcome> {
  const planned = p.nodes[nodeIndex]!;
  const v = verification(planned.run);
  const git = {
    checkHead: async (runId: string, head: string) => ({ tree: gitShaOf(`tree:${head}`), verification: verification(runId.endsWith('-holdout') ? planned.holdout : p.head) }),
    holdoutCommit: async (_under: string, result: string) => gitShaOf(`holdout:${result}`),
    contentOf: async () => null,
  } as unknown as GitPort;
  const read = readRun(v, e.tests!.reports, evidence);
  const result = gitShaOf(`r:${e.jobId}`);
  const tests = await jobTests(e.tests!, { jobId: e.jobId, date: e.date, commands: e.commands, run: v, read, under: e.baseHead, result }, git, evidence);
  return {
    ok: true, resultCommit: result, tree: gitShaOf(`tree:${result}`), passed: v.passed, ...(v.reason !== undefined ? { reason: v.reason } : {}),
    evidence: v.commands.map((c, i) => ({ argv: [...c.argv], exitCode: c.exitCode, stdoutSha256: evidence.put(c.stdout), stderrSha256: evidence.put(c.stderr), durationMs: 1, cacheHit: false, ...read.perCommand[i] })),
    ...(tests !== undefined ? { tests } : {}),
  };
}

interface Drive {
  readonly events: DomainEvent[];
  readonly results: StepResult[];
}

/** Steps of the pure controller until the build completes or blocks; verifications computed by the host's code first. */
async function drive(p: Plan): Promise<Drive> {
  let spec = build(p);
  const evidence = memoryEvidence();
  const answer = world();
  const events: DomainEvent[] = [];
  const results: StepResult[] = [];
  for (let i = 0; i < 80; i++) {
    // The verify effect is asynchronous here (the host's code): a dry interpretation finds it, it is computed, then the step is run.
    const outcomes = new Map<string, VerificationOutcome>();
    for (;;) {
      let wanted: Extract<EffectRequest, { kind: 'verify' }> | null = null;
      try {
        interpretStep(spec, CTX, (e, s) => {
          if (e.kind === 'verify') {
            if (!outcomes.has(e.jobId)) {
              wanted = e;
              throw new Error('verify');
            }
            return outcomes.get(e.jobId);
          }
          return answer(e, s);
        });
      } catch (err) {
        if ((err as Error).message !== 'verify' || wanted === null) throw err;
      }
      if (wanted === null) break;
      const w = wanted as Extract<EffectRequest, { kind: 'verify' }>;
      // The candidate's commit names its attempt (`c:n2.1`), so its node.
      const attempt = p.nodes.flatMap((_, k) => [1, 2].map((a) => `n${k}.${a}`)).find((id) => gitShaOf(`c:${id}`) === w.commits[0])!;
      outcomes.set(w.jobId, await verifyOutcome(p, w, evidence, Number(attempt.slice(1, attempt.indexOf('.')))));
    }
    const run = interpretStep(spec, CTX, (e, s) => (e.kind === 'verify' ? outcomes.get(e.jobId) : answer(e, s)));
    spec = run.spec;
    events.push(...run.events);
    if ('fail' in run.result) throw new Error(run.result.fail);
    results.push(run.result);
    if (run.result.outcome === 'horizon_complete' || run.result.outcome === 'blocked') return { events, results };
  }
  throw new Error('the build did not end');
}

/**
 * The oracle: the ref's passing tests, from the runs themselves. Every promotion keeps every test
 * the ref passed, but those its receipt retires; under strict/review the plan named each of
 * them, and the hold-out's failures among them are retired too.
 */
function checkAgainstOracle(p: Plan, d: Drive): number {
  let ref = passing(p.head);
  let promotions = 0;
  for (const e of d.events) {
    if (e.type !== 'IntegrationPromoted') continue;
    const r = e.data.receipt;
    const k = Number(r.nodeIds[0]!.slice(1));
    const planned = p.nodes[k]!;
    const next = passing(planned.run);
    const retired = new Set(r.tests?.retired ?? []);
    const lost = [...ref].filter((t) => !next.has(t));
    expect(lost.filter((t) => !retired.has(t)), `promotion of n${k} shrank the ref's passing tests without retiring them`).toEqual([]);
    if (p.policy !== 'record') {
      expect([...retired].filter((t) => !planned.retires.includes(t)), `n${k} retired tests its plan does not name`).toEqual([]);
      expect(planned.retires.filter((t) => !retired.has(t)), `strict: n${k}'s plan names tests that did not stop passing`).toEqual([]);
    }
    if (planned.declares) {
      const held = passing(planned.holdout);
      expect([...ref].filter((t) => !held.has(t) && !retired.has(t)), `n${k}'s hold-out fails base tests it does not retire`).toEqual([]);
    }
    ref = next;
    promotions += 1;
  }
  return promotions;
}

describe('the test ratchet (R-50, R-51)', () => {
  it('R-50 R-51 for all plans and test runs, the passing tests on the integration ref never shrink but by retirement, and only as the policy allows', async () => {
    let promotions = 0;
    let refused = 0;
    await fc.assert(fc.asyncProperty(planArb, async (p) => {
      const d = await drive(p);
      promotions += checkAgainstOracle(p, d);
      refused += d.events.filter((e) => e.type === 'IntegrationFailed' && /^R-5[01]/.test(e.data.reason)).length;
    }), { numRuns: 150 });
    // The property saw both sides: promotions, and refusals by the ratchet.
    expect(promotions).toBeGreaterThan(20);
    expect(refused).toBeGreaterThan(20);
  });

  it('R-51 a candidate that swaps a passing test for another (same count) is refused unless it retires the one it dropped', () => {
    const t = (lost: string[]): JobTests => ({ passed: 3, failed: 0, skipped: 0, passingSha256: sha256Of('x'), base: { head: BASE_HEAD, passed: 3, failed: 0, skipped: 0, passingSha256: sha256Of('y') }, lost, lostCount: lost.length, unreported: 0 });
    expect(judgeTests(t(['a']), { retires: new Set(), policy: 'strict', retiredBelow: new Set() })).toMatchObject({ ok: false, rule: 'R-51' });
    expect(judgeTests(t(['a']), { retires: new Set(['a']), policy: 'strict', retiredBelow: new Set() })).toEqual({ ok: true, retired: ['a'] });
    expect(judgeTests(t(['a']), { retires: new Set(), policy: 'record', retiredBelow: new Set() })).toEqual({ ok: true, retired: ['a'] });
    expect(judgeTests(t([]), { retires: new Set(['b']), policy: 'strict', retiredBelow: new Set() })).toMatchObject({ ok: false, rule: 'R-50', reason: expect.stringMatching(/retires "b", which does not stop passing/) });
    // What a job below retired is already gone from the head it is promoted onto.
    expect(judgeTests(t(['a']), { retires: new Set(), policy: 'strict', retiredBelow: new Set(['a']) })).toEqual({ ok: true, retired: [] });
  });
});
