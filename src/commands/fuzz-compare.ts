/**
 * The pure half of `longbuild fuzz`: what a finished build looks like to the
 * fuzzer (its fingerprint), how a resumed build is compared with an uninterrupted one, how the
 * effects ledger is audited for duplicate calls, and which interruption points are chosen.
 * No I/O here: the runner in src/adapters/fuzz reads logs, ledgers and git and passes data in.
 */
import { canonicalJson, compareCodePoints, type JsonValue } from '../events/canonical.js';
import type { StoredEvent } from '../events/envelope.js';
import type { Checkpoint, CompactionSummary } from '../events/catalogue.js';
import { evolveBuild, initialBuildState, type BuildState } from '../projections/build-state.js';
import { canonicalGraph, rankReadyWave, readyListBytes } from '../projections/graph.js';
import { sha256Hex } from '../events/hash.js';
import type { Usage } from '../events/catalogue.js';
import { NO_SPEND, withCall, type SpendTotals } from '../projections/spend-ledger.js';
import { budgetOf, overBudget } from './next-action.js';
import { holdings } from '../projections/view.js';
import { RUN_END_RECORDS } from './fuzz-points.js';

/** What a finished build is, for comparison (everything R-19 names, plus commit SHAs). */
export interface BuildFingerprint {
  readonly outcome: 'completed' | 'blocked' | 'unfinished';
  readonly accepted: readonly string[];
  readonly acceptedCommits: Readonly<Record<string, string | null>>;
  readonly integrationHead: string | null;
  /** Checkpoints in the order written, canonical JSON without `createdAt`. */
  readonly checkpoints: readonly { readonly milestoneId: string; readonly content: string; readonly sha256: string }[];
  readonly summaries: readonly string[];
  /** (graph revision → canonical ready-list bytes) at every revision, in order. */
  readonly readySequence: readonly { readonly revision: number; readonly ready: string }[];
  readonly graphRevision: number;
  /** Summary contents without their evidence SHAs (see SummaryAliases), by alias. */
  readonly summaryContents: Readonly<Record<string, string>>;
  /** Evidence SHA-256s the summaries keep, by alias (reproducible only if verification output is). */
  readonly summaryEvidence: Readonly<Record<string, string>>;
  /** Refs repaired from the log: a build nobody tampered with repairs none. */
  readonly refRepairs: readonly string[];
  /** The log's event types in order, without the recovery-only ones (EffectReinvoked, RefRepaired). */
  readonly eventTypes: readonly string[];
  /** EffectReinvoked events in the log. */
  readonly reinvocations: number;
  /**
   * The spend ledger without what interrupted invocations reported (their EffectReinvoked
   * usage): what the build's recorded calls used, the same however often it was interrupted.
   */
  readonly ledger: { readonly reported: number; readonly inputTokens: number; readonly outputTokens: number; readonly costNanoUsd: number };
  /** Interrupted invocations whose usage the log records: billed, so they count against a budget. */
  readonly lostReported: number;
  /** Whether the build has a budget. */
  readonly budgeted: boolean;
  /** Calls started while the spend had reached a limit: `position TYPE: reason`. None in a correct build. */
  readonly budgetBreaches: readonly string[];
  /** Every accepted planned node, those compacted into summaries included (summaries themselves aside). */
  readonly acceptedWork: readonly string[];
  /** The log's NotificationSent records, audited against what the notifiers received. */
  readonly notifications: readonly NotificationRecord[];
}

/**
 * A summary's id is content-addressed over evidence SHA-256s, and evidence is verification
 * output — `node --test` prints durations — so two uninterrupted runs already differ there. The
 * fuzzer names a summary by the milestone it compacts (`summary(<milestone>)`) and compares
 * everything else exactly; graph SHAs are recomputed under those names.
 */
interface Folded {
  state: BuildState;
  readySequence: { revision: number; ready: string }[];
  /** Per checkpoint milestone: the graph SHA-256 at that checkpoint with summary ids aliased. */
  checkpointGraphs: Record<string, string>;
  /** Every checkpoint and summary whole, as their events carry them (the state keeps heads of old ones: decision 0032). */
  wholeCheckpoints: Record<string, Checkpoint>;
  wholeSummaries: Record<string, CompactionSummary>;
  aliases: Record<string, string>;
  refRepairs: string[];
  eventTypes: string[];
  reinvocations: number;
  /** What interrupted invocations reported (EffectReinvoked usage), summed. */
  lost: SpendTotals;
  budgetBreaches: string[];
  notifications: NotificationRecord[];
  /** Every attempt the log records as finished (the state lets go of compacted nodes' attempts: decision 0054). */
  finishedAttempts: string[];
}

/** A NotificationSent as the fuzzer audits it, with its position. */
export interface NotificationRecord {
  readonly position: number;
  readonly notifier: number;
  readonly kind: string;
  readonly triggers: readonly number[];
  readonly outcome: 'delivered' | 'failed';
}

const SUMMARY_ID = /summary-[0-9a-f]{16}/g;
const aliasIn = (text: string, aliases: Readonly<Record<string, string>>): string => text.replace(SUMMARY_ID, (id) => aliases[id] ?? id);

/** Fold a whole log into its final state and its (revision → ready list) sequence. */
export function foldLog(events: Iterable<StoredEvent>): Folded {
  let state = initialBuildState;
  const readySequence: { revision: number; ready: string }[] = [];
  const checkpointGraphs: Record<string, string> = {};
  const wholeCheckpoints: Record<string, Checkpoint> = {};
  const wholeSummaries: Record<string, CompactionSummary> = {};
  const aliases: Record<string, string> = {};
  const refRepairs: string[] = [];
  const eventTypes: string[] = [];
  let reinvocations = 0;
  let lost = NO_SPEND;
  const budgetBreaches: string[] = [];
  const notifications: NotificationRecord[] = [];
  const finishedAttempts: string[] = [];
  for (const e of events) {
    if (e.type === 'AttemptFinished') finishedAttempts.push((e.data as { attemptId: string }).attemptId);
    const before = state.graphRevision;
    // a new call (its intent) never starts once the spend has reached a limit.
    if (e.type === 'AttemptStarted' || e.type === 'PlannerInvoked') {
      const nodeId = (e.data as { nodeId?: string }).nodeId;
      const over = overBudget(state, nodeId !== undefined ? state.nodes[nodeId]?.milestone ?? null : null);
      if (over !== null) budgetBreaches.push(`${e.position} ${e.type}: ${over.reason}`);
    }
    if (e.type === 'EffectReinvoked') {
      reinvocations += 1;
      const usage = (e.data as { usage?: Usage }).usage;
      if (usage !== undefined) lost = withCall(lost, usage);
    }
    // Deliveries are recorded when a run ends: where, and how many, is the machine's timing.
    else if (e.type === 'NotificationSent') {
      const d = e.data as unknown as Omit<NotificationRecord, 'position'>;
      notifications.push({ position: e.position, notifier: d.notifier, kind: d.kind, triggers: d.triggers, outcome: d.outcome });
    } else if (e.type !== 'RefRepaired' && !RUN_END_RECORDS.has(e.type)) eventTypes.push(e.type);
    if (e.type === 'RefRepaired') {
      const d = e.data as { where: string; ref: string; found: string | null };
      refRepairs.push(`${d.where} ${d.ref} at ${d.found ?? '(missing)'}`);
    }
    if (e.type === 'MilestoneCompacted') {
      const d = e.data as { summaryId: string; summary: CompactionSummary };
      aliases[d.summaryId] = `summary(${d.summary.milestoneId})`;
      if (!Object.hasOwn(state.summaries, d.summaryId)) wholeSummaries[d.summaryId] = d.summary; // a replay changes nothing
    }
    state = evolveBuild(state, e);
    if (state.graphRevision !== before) readySequence.push({ revision: state.graphRevision, ready: aliasIn(readyListBytes(rankReadyWave(state)), aliases) });
    if (e.type === 'CheckpointWritten') {
      const checkpoint = (e.data as { checkpoint: Checkpoint }).checkpoint;
      wholeCheckpoints[checkpoint.milestoneId] = checkpoint;
      checkpointGraphs[checkpoint.milestoneId] = sha256Hex(aliasIn(canonicalGraph(state.nodes), aliases));
    }
  }
  return { state, readySequence, checkpointGraphs, wholeCheckpoints, wholeSummaries, aliases, refRepairs, eventTypes, reinvocations, lost, budgetBreaches, notifications, finishedAttempts };
}

/** The fingerprint of a folded build (R-19's comparable parts). */
export function fingerprintOf(folded: Folded): BuildFingerprint {
  const { state, readySequence, checkpointGraphs, wholeCheckpoints, wholeSummaries, aliases, refRepairs, eventTypes, reinvocations, lost, budgetBreaches, notifications } = folded;
  const total = state.spend?.total ?? NO_SPEND;
  const alias = (id: string): string => aliases[id] ?? id;
  const accepted = Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'accepted').map(alias).sort(compareCodePoints);
  const acceptedCommits: Record<string, string | null> = {};
  for (const id of Object.keys(state.nodes)) if (state.nodes[id]!.state === 'accepted') acceptedCommits[alias(id)] = state.nodes[id]!.commit;
  const checkpoints = Object.entries(state.checkpoints)
    .sort((a, b) => a[1].position - b[1].position)
    .map(([milestoneId, c]) => {
      const { createdAt: _createdAt, graphSha256: _graphSha256, ...rest } = wholeCheckpoints[milestoneId]!;
      const content = aliasIn(canonicalJson({ ...rest, graphSha256Aliased: checkpointGraphs[milestoneId] ?? null } as unknown as JsonValue), aliases);
      return { milestoneId, content, sha256: c.sha256 };
    });
  const summaryContents: Record<string, string> = {};
  const summaryEvidence: Record<string, string> = {};
  for (const [id, name] of Object.entries(aliases)) {
    const summary = state.summaries[id] ? wholeSummaries[id] : undefined;
    if (!summary) continue;
    // The checkpoint's and the prior graph's SHA-256s hash earlier summary ids in; the checkpoint
    // itself and the aliased graph SHAs are compared above, so they are left out here.
    const { evidenceSha256s, checkpoint, graphBefore, ...rest } = summary;
    Object.assign(rest, { checkpoint: checkpoint.milestoneId, graphBefore: graphBefore.revision });
    summaryContents[name] = aliasIn(canonicalJson(rest as unknown as JsonValue), aliases);
    summaryEvidence[name] = canonicalJson(evidenceSha256s as unknown as JsonValue);
  }
  return {
    outcome: state.completed ? 'completed' : state.blocked ? 'blocked' : 'unfinished',
    accepted,
    acceptedCommits,
    integrationHead: state.integrationHead,
    checkpoints,
    summaries: Object.keys(aliases).map(alias).sort(compareCodePoints),
    readySequence,
    graphRevision: state.graphRevision,
    summaryContents,
    summaryEvidence,
    refRepairs,
    eventTypes,
    reinvocations,
    ledger: {
      reported: total.reported - lost.reported, inputTokens: total.inputTokens - lost.inputTokens,
      outputTokens: total.outputTokens - lost.outputTokens, costNanoUsd: total.costNanoUsd - lost.costNanoUsd,
    },
    lostReported: lost.reported,
    acceptedWork: [...new Set(Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'accepted').flatMap((id) => (state.nodes[id]!.summary === true ? holdings(state, id).filter((h) => state.summaries[h] === undefined) : [id])))].sort(compareCodePoints),
    budgeted: budgetOf(state) !== undefined,
    budgetBreaches,
    notifications,
  };
}

/**
 * A budgeted build whose interrupted calls reported what they used was billed for them, so
 * it may pause before the uninterrupted one did: it cannot be compared with that run for
 * equality, only for what must hold whatever the interruptions.
 */
export function billedAgain(f: BuildFingerprint): boolean {
  return f.budgeted && f.lostReported > 0;
}

/** A difference between the resumed build and the clean one, with the rule it breaks. */
export interface Divergence {
  readonly what: string;
  readonly rule: string;
  readonly clean: string;
  readonly resumed: string;
}

/** Facts about a finished build that only the adapters can observe. */
export interface ObservedBuild {
  readonly fingerprint: BuildFingerprint;
  /** Worker calls the build keeps in flight (settings.concurrency): above 1, results arrive in the machine's order. */
  readonly concurrency: number;
  /** The integration head's tree SHA (git). */
  readonly integrationTree: string | null;
  /** `longbuild verify`: chain and projections. */
  readonly verifyOk: boolean;
  readonly verifyProblem?: string;
}

const show = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * Compare a resumed build with the uninterrupted one: outcome, accepted nodes, integration
 * tree, checkpoints (content minus createdAt), summaries, the ready list at every graph revision,
 * a verified chain; commit SHAs too (the logical clock makes them reproducible).
 */
export function compareBuilds(clean: ObservedBuild, resumed: ObservedBuild, options: { readonly exactCommits?: boolean; readonly concurrent?: boolean } = {}): Divergence[] {
  const out: Divergence[] = [];
  const a = clean.fingerprint;
  const b = resumed.fingerprint;
  const differ = (what: string, rule: string, x: unknown, y: unknown): void => {
    if (canonicalJson(x as JsonValue) !== canonicalJson(y as JsonValue)) out.push({ what, rule, clean: show(x), resumed: show(y) });
  };
  for (const breach of b.budgetBreaches) out.push({ what: 'a call started past the budget', rule: 'R-59', clean: '(none)', resumed: breach });
  if (billedAgain(b)) {
    // Paused earlier, if at all: what it accepted the clean run accepted, and the chain holds.
    const extra = b.acceptedWork.filter((id) => !a.acceptedWork.includes(id));
    if (extra.length > 0) out.push({ what: 'accepted work (billed again, so at most the clean run\'s)', rule: 'R-59', clean: show(a.acceptedWork), resumed: show(b.acceptedWork) });
    if (!resumed.verifyOk) out.push({ what: 'verify', rule: 'R-4', clean: 'ok', resumed: resumed.verifyProblem ?? 'not ok' });
    return out;
  }
  differ('outcome', 'R-19', a.outcome, b.outcome);
  differ('accepted nodes', 'R-19', a.accepted, b.accepted);
  differ('integration head tree', 'R-19', clean.integrationTree, resumed.integrationTree);
  differ('checkpoint milestones', 'R-19', a.checkpoints.map((c) => c.milestoneId), b.checkpoints.map((c) => c.milestoneId));
  // A build on the system clock (a command-driven one) dates its commits, so their SHAs, and the
  // checkpoints and summaries naming them, differ between any two runs: only the logical clock's
  // are compared. With several calls in flight (concurrency) the order results arrive in
  // is the machine's: which job stacks on which, the positions (so the logical dates) and the
  // order of events differ between two clean runs too; what the work is must not.
  const concurrent = options.concurrent === true;
  const exact = options.exactCommits !== false && !concurrent;
  for (const ca of exact ? a.checkpoints : []) {
    const cb = b.checkpoints.find((c) => c.milestoneId === ca.milestoneId);
    if (cb && cb.content !== ca.content) out.push({ what: `checkpoint ${ca.milestoneId}`, rule: 'R-20', clean: ca.content, resumed: cb.content });
  }
  differ('summaries', 'R-21', a.summaries, b.summaries);
  for (const name of exact ? a.summaries : []) {
    if (b.summaryContents[name] !== undefined && a.summaryContents[name] !== b.summaryContents[name]) {
      out.push({ what: `${name} content`, rule: 'R-21', clean: a.summaryContents[name] ?? '', resumed: b.summaryContents[name] ?? '' });
    }
  }
  const n = concurrent ? 0 : Math.max(a.readySequence.length, b.readySequence.length);
  for (let i = 0; i < n; i++) {
    const x = a.readySequence[i];
    const y = b.readySequence[i];
    if (x?.revision !== y?.revision || x?.ready !== y?.ready) {
      out.push({ what: `ready list at graph revision ${x?.revision ?? y?.revision}`, rule: 'R-19', clean: x ? x.ready : '(no revision)', resumed: y ? y.ready : '(no revision)' });
      break; // the first difference is the useful one; the rest usually follows from it
    }
  }
  if (!resumed.verifyOk) out.push({ what: 'verify', rule: 'R-4', clean: 'ok', resumed: resumed.verifyProblem ?? 'not ok' });
  // Reproducibility: with the logical clock the same work gives the same commits.
  if (exact) {
    differ('integration head commit', 'R-19', a.integrationHead, b.integrationHead);
    differ('accepted commits', 'R-19', a.acceptedCommits, b.acceptedCommits);
  }
  differ('ref repairs', 'R-33', a.refRepairs, b.refRepairs);
  // every recorded call's usage once, whatever the interruptions (what lost invocations reported aside).
  if (!concurrent) differ('spend ledger (interrupted invocations aside)', 'R-58', a.ledger, b.ledger);
  const firstType = concurrent ? -1 : a.eventTypes.findIndex((t, i) => b.eventTypes[i] !== t);
  if (!concurrent && (firstType >= 0 || a.eventTypes.length !== b.eventTypes.length)) {
    const i = firstType >= 0 ? firstType : Math.min(a.eventTypes.length, b.eventTypes.length);
    out.push({ what: `event types from the ${i + 1}th (recovery events aside)`, rule: 'R-19', clean: a.eventTypes.slice(i, i + 4).join(', ') || '(end)', resumed: b.eventTypes.slice(i, i + 4).join(', ') || '(end)' });
  }
  return out;
}

/** The effects started, by kind, as a points file records them (`before-effect:KIND` lines): an oracle independent of the log. */
export function effectStarts(lines: readonly string[]): Record<'planner' | 'worker' | 'verify' | 'promote', number> {
  const n = { planner: 0, worker: 0, verify: 0, promote: 0 };
  for (const l of lines) {
    const m = /^before-effect:(planner|worker|verify|promote)$/.exec((l.split('\t')[0] ?? '').trim());
    if (m) n[m[1] as keyof typeof n] += 1;
  }
  return n;
}

export * from './fuzz-audits.js';
export * from './fuzz-points.js';
