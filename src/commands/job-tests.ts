/**
 * A job's tests in the pure step: what its verification is asked to read and compare,
 * whether its reports let it pass, and the ratchet's verdicts on a run of jobs promoted together.
 */
import type { CommandEvidence, JobTests } from '../events/catalogue.js';
import { jobOf, type BuildState, type JobRecord } from '../projections/build-state.js';
import type { VerifyTests } from './step-types.js';
import { judgeTests, type TestsVerdict } from './test-ratchet.js';

/** How a job's verification reads and compares its tests, or undefined for a build without a test policy. */
export function verifyTests(state: BuildState, job: JobRecord): VerifyTests | undefined {
  const policy = state.build!.tests;
  if (policy === undefined) return undefined;
  const head = state.integrationHead!;
  const known = state.headTests?.head === head ? state.headTests.counts : undefined;
  const declared = job.nodeIds.some((id) => state.nodes[id]?.changes?.includes('tests') === true);
  const holdout = policy.surface.tests.length > 0 && (policy.holdout === 'always' || declared) ? policy.surface.tests : null;
  return { reports: policy.reports, head, known, holdout };
}

/**
 * The tests' verdicts (R-50, R-51) of a run of jobs promoted in that order, each stacked on the one
 * before: what a job's tests lost is judged net of what the jobs promoted since its base head
 * retired — those promoted already, and the ones before it in the run.
 */
export function runVerdicts(state: BuildState, jobs: readonly JobRecord[]): TestsVerdict[] {
  const policy = state.build?.tests;
  const retiredBefore = new Set<string>();
  return jobs.map((job) => {
    const t = job.verification?.tests;
    if (policy === undefined || t === undefined) return { ok: true, retired: [] };
    const below = new Set([...retiredSince(state, job, t.base?.head ?? null), ...retiredBefore]);
    const verdict = judgeTests(t, { retires: new Set(job.nodeIds.flatMap((id) => state.nodes[id]?.retires ?? [])), policy: policy.testChanges, retiredBelow: below });
    if (verdict.ok) for (const id of verdict.retired) retiredBefore.add(id);
    return verdict;
  });
}

/** The tests retired by the promoted jobs a job was stacked on, down to the one whose result is `baseHead` (the head its tests were compared with). */
export function retiredSince(state: BuildState, job: JobRecord, baseHead: string | null): Set<string> {
  const out = new Set<string>();
  for (let id = job.after; id !== undefined;) {
    const below = jobOf(state, id);
    if (below === undefined || below.status !== 'promoted' || below.receipt?.resultCommit === baseHead) break;
    for (const t of below.receipt?.tests?.retired ?? []) out.add(t);
    id = below.after;
  }
  return out;
}

/** Why a verification whose commands all passed still fails on its reports: one unreadable, or failing tests named. */
export function reportProblem(evidence: readonly CommandEvidence[], tests: JobTests | undefined): string | undefined {
  const unreadable = evidence.find((e) => e.tests !== undefined && 'unreadable' in e.tests);
  if (unreadable !== undefined) return `R-51: the test report of ${JSON.stringify(unreadable.argv)} cannot be read (${(unreadable.tests as { unreadable: string }).unreadable}); a report that cannot be read is never a pass`;
  if (tests !== undefined && tests.failed > 0) return `R-51: the test report names ${tests.failed} failing test${tests.failed === 1 ? '' : 's'} though every command exited 0`;
  return undefined;
}
