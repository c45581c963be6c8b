/**
 * The test ratchet and the hold-out verdict (R-50, R-51), pure: from what a job's verification
 * recorded (its tests, the base head's, the base tests it no longer passes, the hold-out run's),
 * the retirements its nodes planned and the build's policy, whether the job may be promoted and
 * which tests its promotion retires. The passing tests on the integration ref never shrink but by
 * retirement, and no retirement happens without the plan naming it or the policy recording it.
 */
import type { JobTests } from '../events/catalogue.js';
import { refuse, type Refusal } from './refusal.js';
import type { TestChangePolicy } from './test-surface.js';

export type TestsVerdict = { readonly ok: true; readonly retired: readonly string[] } | Refusal;

export interface TestsJudgement {
  /** Test ids the job's nodes retire (`retires`), together. */
  readonly retires: ReadonlySet<string>;
  readonly policy: TestChangePolicy;
  /** Tests the jobs this one was stacked on retired: already gone from the head it is promoted onto. */
  readonly retiredBelow: ReadonlySet<string>;
}

/** At most this many tests named in a refusal. */
const NAMED = 5;

const named = (ids: readonly string[]): string =>
  `${ids.slice(0, NAMED).map((id) => JSON.stringify(id)).join(', ')}${ids.length > NAMED ? ` and ${ids.length - NAMED} more` : ''}`;

/**
 * The verdict on a job's tests (R-50, R-51). Every base test it stops passing — missing from its
 * run (`lost`) or failing against its code with the base's tests (the hold-out's `failing`) — must
 * be retired: under `strict` (and `review`, until approval gates exist) the nodes' `retires` must
 * name exactly those tests; under `record` they are recorded as retired. Fewer passing tests than
 * the base, net of what is retired, is refused too. A hold-out that could not name its failures
 * is refused unless the policy records.
 */
export function judgeTests(t: JobTests | undefined, j: TestsJudgement): TestsVerdict {
  if (t === undefined) return { ok: true, retired: [] };
  const lost = t.lost.filter((id) => !j.retiredBelow.has(id));
  const failing = t.holdout?.failing.filter((id) => !j.retiredBelow.has(id)) ?? [];
  const over = t.lostCount > t.lost.length || (t.holdout !== undefined && t.holdout.failingCount > t.holdout.failing.length);
  if (over) return refuse('R-51', `the candidate stops passing ${Math.max(t.lostCount, t.holdout?.failingCount ?? 0)} tests of the base head (more than a plan may retire at once): split the change`);
  const needed = [...new Set([...lost, ...failing])].sort();
  if (j.policy === 'record') {
    if (t.base !== null && t.passed < t.base.passed - needed.length) return countRefusal(t, needed.length);
    return { ok: true, retired: needed };
  }
  if (t.holdout?.unreadable !== undefined) {
    return refuse('R-50', `the hold-out run (the base head's tests against the candidate's code) cannot name the tests it fails: ${t.holdout.unreadable}; give the verification command a test report, or set "testChanges": "record"`);
  }
  const unretired = needed.filter((id) => !j.retires.has(id));
  if (unretired.length > 0) {
    const inHoldout = unretired.filter((id) => failing.includes(id) && !lost.includes(id));
    const what = inHoldout.length === unretired.length
      ? `the base head's tests ${named(unretired)} fail against the candidate's code (hold-out)`
      : `${unretired.length} test${unretired.length === 1 ? '' : 's'} that passed on the base head no longer pass${unretired.length === 1 ? 'es' : ''}: ${named(unretired)}`;
    return refuse(inHoldout.length === unretired.length ? 'R-50' : 'R-51', `${what}; fix the code, or have the plan retire ${unretired.length === 1 ? 'it' : 'them'} ("retires": [${unretired.slice(0, NAMED).map((id) => JSON.stringify(id)).join(', ')}${unretired.length > NAMED ? ', …' : ''}])`);
  }
  const stale = [...j.retires].filter((id) => !needed.includes(id)).sort();
  if (stale.length > 0) {
    return refuse('R-50', `the plan retires ${named(stale)}, which ${stale.length === 1 ? 'does' : 'do'} not stop passing (testChanges "${j.policy}": "retires" names exactly the tests the change stops passing)`);
  }
  if (t.base !== null && t.passed < t.base.passed - needed.length) return countRefusal(t, needed.length);
  return { ok: true, retired: needed };
}

function countRefusal(t: JobTests, retired: number): Refusal {
  return refuse('R-51', `the candidate passes ${t.passed} tests, fewer than the base head's ${t.base!.passed}${retired > 0 ? ` less the ${retired} it retires` : ''}`);
}
