/**
 * Every deterministic id the host gives out, in one place. Ids are derived from the log alone
 * (R-18: the same state names the same call, so a resumed run reuses the idempotency key of the
 * call it settles), and are safe for file paths and git refs (R-8).
 */
import { sha256Hex } from '../events/hash.js';

/** The build id: the driver's identity (a blueprint's hash, or the driver file's) and the base head. */
export const buildIdOf = (driverIdentitySha256: string, baseHead: string): string => `b-${sha256Hex(`${driverIdentitySha256}:${baseHead}`).slice(0, 16)}`;

/** The horizon id: named by the request it plans for (renewals keep it, R-15). */
export const horizonIdOf = (requestSha256: string): string => `horizon-${requestSha256.slice(0, 16)}`;

/** Deterministic id of the n-th planner call (the idempotency key of R-18). */
export const plannerCallId = (purpose: PlannerPurpose, horizonRevision: number): string => `plan.${purpose}.${horizonRevision}`;

/** What a planner call is for: the first horizon, the next window, or a repair of a failing acceptance. */
export type PlannerPurpose = 'seal' | 'renew' | 'repair';

/**
 * The id of the k-th ask of a planning round: the first keeps the round's id (R-18), a re-ask after
 * a refused proposal gets `.askK` — each its own recorded call with its own idempotency key.
 */
export const plannerAskId = (purpose: PlannerPurpose, horizonRevision: number, ask: number): string =>
  ask === 1 ? plannerCallId(purpose, horizonRevision) : `${plannerCallId(purpose, horizonRevision)}.ask${ask}`;

export { attemptIdOf } from '../projections/build-records.js';

/** A worker call's idempotency key: the build and the attempt (the same across re-invocations). */
export const workerCallKey = (buildId: string, attemptId: string): string => `${buildId}:${attemptId}`;

/** Deterministic integration job id. */
export const jobIdOf = (state: { readonly jobCount: number }): string => `job-${state.jobCount + 1}`;

/** Deterministic id of the n-th acceptance run. */
export const acceptanceRunIdOf = (state: { readonly acceptance?: { readonly count: number } }): string => `accept-${(state.acceptance?.count ?? 0) + 1}`;
