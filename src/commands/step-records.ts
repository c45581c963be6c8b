/**
 * What the pure step records, and how it reports: the events of a finished attempt, a
 * verification, an in-doubt re-invocation, an attempt's commit message, a step's report. Pure.
 */
import { canonicalSha256 } from '../events/hash.js';
import type { CommandEvidence, DataOf, DomainEvent, Usage } from '../events/catalogue.js';
import type { AttemptRecord, BuildState } from '../projections/build-state.js';
import { nextAction, plannerAsks, planningRound, refusedTimes, REPLAN } from './next-action.js';
import { reportProblem } from './job-tests.js';
import type { Decision, EffectRequest, FinishDraft, Focus, KeptWorkerOutcome, Outcome, StepOutcome, StepResult, VerificationOutcome } from './step-types.js';

export const go = (next: EffectRequest | Focus, events: readonly DomainEvent[] = [], causationId = ''): Decision => ({ events, causationId, next });
export const done = (outcome: StepOutcome, detail: string, extra: Partial<Omit<Extract<Outcome, { kind: 'report' }>, 'kind'>> = {}): Focus =>
  ({ kind: 'done', outcome: { kind: 'report', outcome, detail, ...extra } });


/** A call made again: whether its journal was lost, and what the lost invocation used when it reported it. */
export function reinvoked(effect: 'planner' | 'worker', key: string, found: { readonly journalLost?: true; readonly lostUsage?: Usage }): DomainEvent {
  return { type: 'EffectReinvoked', data: { effect, key, ...(found.journalLost ? { journal: 'lost' as const } : {}), ...(found.lostUsage !== undefined ? { usage: found.lostUsage } : {}) } };
}

/**
 * The message of an attempt's commit: deterministic (R-19: a resumed build makes the same commit),
 * with trailers naming the build, node and attempt, and the agent that assisted.
 */
export function attemptMessage(state: BuildState, a: Pick<AttemptRecord, 'nodeId' | 'attempt' | 'attemptId'>): string {
  const subject = `longbuild: ${a.nodeId} (attempt ${a.attempt})`;
  const t = state.build?.settings.trailers;
  if (t === undefined) return subject;
  const trailers = [`Longbuild-Build: ${state.build!.buildId}`, `Longbuild-Node: ${a.nodeId}`, `Longbuild-Attempt: ${a.attemptId}`, ...(t.assistedBy !== undefined ? [`Assisted-by: ${t.assistedBy}`] : [])];
  return `${subject}\n\n${trailers.join('\n')}`;
}

/** The evidence fields of an AttemptFinished for what a worker call returned (its input digest and reuse too, R-41). */
export function evidenceOf(out: KeptWorkerOutcome): Pick<FinishDraft, 'evidenceSha256' | 'stdoutSha256' | 'stderrSha256' | 'durationMs' | 'inputSha256' | 'reused' | 'usage'> {
  return {
    evidenceSha256: canonicalSha256({ stdout: out.stdoutSha256, stderr: out.stderrSha256 }), stdoutSha256: out.stdoutSha256, stderrSha256: out.stderrSha256,
    ...(out.durationMs !== undefined ? { durationMs: out.durationMs } : {}),
    ...(out.inputSha256 !== undefined ? { inputSha256: out.inputSha256 } : {}), ...(out.reused !== undefined ? { reused: out.reused } : {}),
    ...(out.usage !== undefined ? { usage: out.usage } : {}),
  };
}

/**
 * A result the host refused (or found empty) after the worker said it committed: what decided it
 * is the host's check of the files, not the worker's outcome alone, so it carries no input digest
 * and no fork adopts it; a fork redoes that call.
 */
export function hostJudged(draft: FinishDraft): FinishDraft {
  const { inputSha256: _input, ...rest } = draft;
  return rest;
}

export function finished(draft: FinishDraft, result: Pick<DataOf<'AttemptFinished'>, 'outcome' | 'reason' | 'commit' | 'tree' | 'decision'>, report: Outcome): Decision {
  return go({ kind: 'done', outcome: report }, [{ type: 'AttemptFinished', data: { ...draft, ...result } as DataOf<'AttemptFinished'> }], draft.attemptId);
}

/** VerificationFinished for a job, from what the runner reported (R-24: the evidence is the receipt's). */
export function verificationFinished(state: BuildState, jobId: string, out: VerificationOutcome): DomainEvent {
  const graphRevision = state.graphRevision;
  if (!out.ok) {
    // A candidate that does not apply: the conflict's output is its evidence (absent: the reason alone).
    const evidence = (out.evidence ?? []).map((e) => ({ ...e, argv: [...e.argv] }));
    const evidenceSha256 = evidence.length === 0 ? canonicalSha256({ reason: out.reason }) : evidenceDigest(evidence);
    return { type: 'VerificationFinished', data: { jobId, resultCommit: null, tree: null, passed: false, reason: out.reason, evidence, evidenceSha256, graphRevision } };
  }
  const evidence = out.evidence.map((e) => ({ ...e, argv: [...e.argv] }));
  // A report that cannot be read is never a pass, nor is one that names failing tests.
  const problem = out.passed ? reportProblem(evidence, out.tests) : undefined;
  const passed = out.passed && problem === undefined;
  const reason = problem ?? out.reason;
  return {
    type: 'VerificationFinished',
    data: {
      jobId, resultCommit: out.resultCommit, tree: out.tree, passed, ...(reason !== undefined ? { reason } : {}), evidence,
      evidenceSha256: evidenceDigest(evidence), ...(out.tests !== undefined ? { tests: out.tests } : {}), graphRevision,
    },
  };
}

/** The one digest of a verification's evidence: every command's argv, exit code and output files. */
export function evidenceDigest(evidence: readonly CommandEvidence[]): string {
  return canonicalSha256(evidence.map((e) => ({ argv: e.argv, exitCode: e.exitCode, stdout: e.stdoutSha256, stderr: e.stderrSha256 })));
}

/** The report of a finished step, from the state its last append left. */
export function describe(state: BuildState, outcome: Outcome): StepResult {
  const at = { position: state.position, graphRevision: state.graphRevision };
  switch (outcome.kind) {
    case 'report': {
      const { kind: _kind, ...rest } = outcome;
      return { ...at, ...rest };
    }
    case 'dispatched': {
      const node = state.nodes[outcome.nodeId]!;
      // A failed attempt says why, and where its output is (`run` shows the detail of every step).
      const why = (node.state === 'revising' || node.state === 'blocked') && node.lastFailure?.attemptId === outcome.attemptId
        ? ` (${node.lastFailure.reason}; \`longbuild evidence ${outcome.attemptId}\`)` : '';
      return { ...at, outcome: 'dispatched', detail: `${outcome.nodeId} attempt ${outcome.attempt}: ${node.state}${why}`, nodeId: outcome.nodeId };
    }
    case 'rejected': {
      // A round with asks left returns the proposal to the planner with the reasons (next step).
      const next = nextAction(state);
      if (next.kind === 'plan') return { ...at, outcome: 'refused', detail: `${outcome.rule}: ${outcome.reason}; asking the planner again (${next.callId})` };
      return { ...at, outcome: 'blocked', detail: `${outcome.rule}: ${outcome.reason}`, reason: `proposal refused (${outcome.rule}): ${outcome.reason}${refusedTimes(next.kind === 'blocked' && next.planning ? planningRound(state, next.planning.purpose, next.planning.horizonRevision).asks : plannerAsks(state))}${REPLAN}` };
    }
  }
}
