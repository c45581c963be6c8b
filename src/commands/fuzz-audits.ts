/** The fuzzer's audits of what happened outside the log: notifications received, calls made. Pure. */
import { compareCodePoints } from '../events/canonical.js';
import type { BuildState } from '../projections/build-state.js';
import type { Divergence, NotificationRecord } from './fuzz-compare.js';

// ---- notification audit (R-61; independent of the log) ---------------------------------

/** One notification as its notifier received it (the notifier's own ledger line). */
export interface Delivery {
  readonly notifier: number;
  readonly kind: string;
  /** The trigger events' positions (the notification's `events`). */
  readonly positions: readonly number[];
}

/**
 * What the notifiers received against what the log says: a trigger the log records as
 * delivered was received at least once, and none was received more than once more than there
 * were crashes (at least once, at most once more per crash). `after`: records at or before this
 * position were made before the case started (a start from a stop) and are not the case's.
 */
export function auditNotifications(records: readonly NotificationRecord[], deliveries: readonly Delivery[], crashes: number, after = 0): Divergence[] {
  const out: Divergence[] = [];
  const received = new Map<string, number>();
  for (const d of deliveries) for (const p of d.positions) received.set(`${d.notifier}:${d.kind}:${p}`, (received.get(`${d.notifier}:${d.kind}:${p}`) ?? 0) + 1);
  for (const r of records) {
    if (r.outcome !== 'delivered' || r.position <= after) continue;
    const missing = r.triggers.filter((p) => !received.has(`${r.notifier}:${r.kind}:${p}`));
    if (missing.length > 0) out.push({ what: `notification recorded at ${r.position} as delivered`, rule: 'R-61', clean: `notifier ${r.notifier} received ${r.kind} of ${missing.join(', ')}`, resumed: 'never received' });
  }
  for (const [key, n] of [...received].sort((x, y) => compareCodePoints(x[0], y[0]))) {
    if (n > 1 + crashes) out.push({ what: `notification ${key} received ${n} times`, rule: 'R-61', clean: `at most ${1 + crashes} (once, and once more per crash)`, resumed: `${n}` });
  }
  return out;
}

// ---- duplicate-call audit (independent of the log) ----------------------------------

/** One line of the effects ledger (see src/adapters/blueprint/effects-ledger.ts). */
export interface LedgerCall {
  readonly kind: 'planner' | 'worker';
  readonly key: string;
}

/** What the log said when the controller died: calls with a recorded result, calls whose outcome was observable. */
export interface CrashState {
  /** Planner callIds and worker idempotency keys whose result event is in the log. */
  readonly recorded: ReadonlySet<string>;
  /** Worker keys whose commit already sat on the attempt branch (must be adopted, not re-invoked). */
  readonly observable: ReadonlySet<string>;
}

export interface CallProblem {
  readonly kind: 'planner' | 'worker';
  readonly key: string;
  readonly problem: string;
  readonly rule: string;
}

export interface CallAudit {
  /** Calls made again although the result (or an observable outcome) existed: failures. */
  readonly duplicates: CallProblem[];
  /** In-doubt calls (crash between effect and result) made once more: allowed, counted. */
  readonly inDoubtReinvocations: { kind: 'planner' | 'worker'; key: string }[];
  /** Calls the clean run made that the interrupted + resumed pair did not, or the reverse. */
  readonly missing: string[];
  readonly extra: string[];
}

const countKeys = (calls: readonly LedgerCall[]): Map<string, { kind: 'planner' | 'worker'; n: number }> => {
  const m = new Map<string, { kind: 'planner' | 'worker'; n: number }>();
  for (const c of calls) {
    const prev = m.get(c.key);
    m.set(c.key, { kind: c.kind, n: (prev?.n ?? 0) + 1 });
  }
  return m;
};

/**
 * Audit the effects ledger of an interrupted run (`before`) and its resumption (`after`) against
 * the clean run's: a call whose result was recorded before the crash, or whose
 * outcome was observable, must not be made again; an in-doubt call may be made once more.
 */
export function auditCalls(clean: readonly LedgerCall[], before: readonly LedgerCall[], after: readonly LedgerCall[], crash: CrashState): CallAudit {
  return auditSegments(clean, [before, after], [crash]);
}

/**
 * The same audit over any number of runs, each but the last ended by a crash (`--double`: the
 * interrupted run, the interrupted resume, the final resume): segment i+1 is judged against
 * crash i — what the log recorded or made observable by then must not be called again; a call of
 * an earlier segment left in doubt may be made once more, per crash.
 */
export function auditSegments(clean: readonly LedgerCall[], segments: readonly (readonly LedgerCall[])[], crashes: readonly CrashState[]): CallAudit {
  const duplicates: CallProblem[] = [];
  const inDoubtReinvocations: { kind: 'planner' | 'worker'; key: string }[] = [];
  const counted = segments.map(countKeys);
  const c = countKeys(clean);
  const earlier = new Set<string>();
  counted.forEach((seg, i) => {
    const when = i === 0 ? 'before the crash' : i === counted.length - 1 ? 'after resuming' : `in resume ${i} (before crash ${i + 1})`;
    const crash = i === 0 ? undefined : crashes[i - 1];
    for (const [key, { kind, n }] of seg) {
      if (n > 1) duplicates.push({ kind, key, problem: `called ${n} times ${when}`, rule: 'R-19' });
      if (crash === undefined) continue;
      if (crash.recorded.has(key)) duplicates.push({ kind, key, problem: `called again although its result was in the log before crash ${i}`, rule: 'R-19' });
      else if (crash.observable.has(key)) duplicates.push({ kind, key, problem: 'called again although its outcome (a commit on the attempt branch) was observable and had to be adopted', rule: 'R-18' });
      else if (earlier.has(key)) inDoubtReinvocations.push({ kind, key });
    }
    for (const key of seg.keys()) earlier.add(key);
  });
  const missing = [...c.keys()].filter((k) => !earlier.has(k)).sort(compareCodePoints);
  const extra = [...earlier].filter((k) => !c.has(k)).sort(compareCodePoints);
  return { duplicates, inDoubtReinvocations, missing, extra };
}

/**
 * The keys whose results the log records: planner calls returned, worker attempts finished
 * (`finishedAttempts`: every AttemptFinished's attempt, compacted nodes' included — the state
 * keeps only live nodes' attempts, decision 0054).
 */
export function recordedCallKeys(state: BuildState, finishedAttempts: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (const call of Object.values(state.plannerCalls)) if (call.status !== 'invoked') keys.add(call.callId);
  const buildId = state.build?.buildId ?? '';
  for (const id of finishedAttempts) keys.add(`${buildId}:${id}`);
  return keys;
}

// ---- choosing points ------------------------------------------------------------------
