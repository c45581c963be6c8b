/**
 * R-33, pure: do the refs agree with the log? The integration ref (in the integrator's
 * repository and as published in the user's) must be at the logged integration head, or at the
 * result of a verified job whose promotion is in doubt (R-18 adopts it next). An attempt branch
 * must belong to an attempt the log knows, at the commit the log recorded for it (an attempt
 * still open may hold the commit it is about to adopt). Anything else is repaired from the log.
 */
import { attemptOf, jobOf, type BuildState } from '../projections/build-state.js';

/** The refs as found, read by the git adapter. */
export interface ObservedRefs {
  /** The integration ref in the integrator's repository. */
  readonly integration: string | null;
  /** The integration ref as published in the user's repository. */
  readonly published: string | null;
  /** Attempt branches of the integrator's repository (attempt id -> commit), when read. */
  readonly attempts?: Readonly<Record<string, string>>;
}

/** One repair: set `ref` in `where` to `expected` (null: delete it). */
export interface RefRepair {
  readonly ref: string;
  readonly where: 'integrator' | 'published';
  readonly found: string | null;
  readonly expected: string | null;
}

export const ATTEMPT_REF_PREFIX = 'refs/heads/longbuild/attempts/';

/** The repairs that make the observed refs agree with the log (empty when they agree). */
export function decideRefRepairs(state: BuildState, observed: ObservedRefs): RefRepair[] {
  const build = state.build;
  const head = state.integrationHead;
  if (!build || head === null) return [];
  const inDoubt = new Set<string>();
  for (const id of state.openJobs) {
    const job = jobOf(state, id);
    if (job?.status === 'verified' && job.verification?.passed === true && job.verification.resultCommit) inDoubt.add(job.verification.resultCommit);
  }
  const ok = (sha: string | null) => sha === head || (sha !== null && inDoubt.has(sha));
  const repairs: RefRepair[] = [];
  if (!ok(observed.integration)) repairs.push({ ref: build.integrationRef, where: 'integrator', found: observed.integration, expected: head });
  // The published ref may lag the integrator's by the one promotion in doubt, never lead it.
  const publishedOk = observed.published === head || (observed.published !== null && observed.published === observed.integration && inDoubt.has(observed.published));
  if (!publishedOk) repairs.push({ ref: build.integrationRef, where: 'published', found: observed.published, expected: head });
  for (const [attemptId, sha] of Object.entries(observed.attempts ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const a = attemptOf(state, attemptId);
    const ref = ATTEMPT_REF_PREFIX + attemptId;
    if (!a) repairs.push({ ref, where: 'integrator', found: sha, expected: null });
    else if (a.status === 'committed' && a.commit !== null && a.commit !== sha) repairs.push({ ref, where: 'integrator', found: sha, expected: a.commit });
  }
  return repairs;
}

/**
 * Attempt branches that are done with: every attempt of a node that is accepted (its work is on
 * the integration head, its receipt names the commits). Removed after each promotion, and swept
 * when a controller opens (a crash can land between the two); housekeeping, not a repair.
 */
export function finishedAttemptBranches(state: BuildState, attemptIds: Iterable<string>): string[] {
  const out: string[] = [];
  for (const id of attemptIds) {
    const a = attemptOf(state, id);
    if (a && state.nodes[a.nodeId]?.state === 'accepted' && a.status !== 'started') out.push(id);
  }
  return out.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
}

/** Every attempt id a node has had (attempt ids are NODE.N, N from 1). */
export function attemptIdsOfNode(state: BuildState, nodeId: string): string[] {
  const n = state.nodes[nodeId]?.attempts ?? 0;
  return Array.from({ length: n }, (_, i) => `${nodeId}.${i + 1}`);
}

/** The observed refs without some attempt branches (those just removed). */
export function withoutAttempts(observed: ObservedRefs, removed: readonly string[]): ObservedRefs {
  const gone = new Set(removed);
  return { ...observed, attempts: Object.fromEntries(Object.entries(observed.attempts ?? {}).filter(([id]) => !gone.has(id))) };
}
