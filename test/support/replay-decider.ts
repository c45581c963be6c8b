/**
 * Temporal's replay check for longbuild: a recorded log is walked step by step through today's
 * decider (`decideStep`/`settle`, hosted by the controller's own interpreter, stepChain), each
 * effect answered with the result the log recorded for it. Every event the decider appends must be
 * the recorded one, in order (type and data); the first that differs is reported with its
 * position. Effect results are read back from the events that recorded them: a planner's answer
 * from its PlannerReturned, a worker's outcome from its AttemptFinished, a verification from its
 * VerificationFinished, a promotion from its IntegrationPromoted. The logs replayed are
 * uninterrupted single-worker builds, so recovery effects (recall-*, publish) do not occur.
 */
import { canonicalJson } from '../../src/events/canonical.js';
import type { DomainEvent } from '../../src/events/catalogue.js';
import type { StoredEvent } from '../../src/events/envelope.js';
import { evolveBuild, initialBuildState, type BuildState } from '../../src/projections/build-state.js';
import type { EffectRequest, EffectResult, StepContext } from '../../src/commands/decide-step.js';
import { runChainSync, stepChain } from '../../src/commands/step-chain.js';

export interface Divergence {
  readonly position: number;
  readonly recorded: { readonly type: string; readonly data: unknown } | null;
  readonly decided: { readonly type: string; readonly data: unknown } | null;
}

export interface Replay {
  /** Steps replayed, and effects answered by kind. */
  readonly steps: number;
  readonly effects: Record<string, number>;
  /** The first event today's decider appends differently (null: none). */
  readonly divergence: Divergence | null;
}

class Diverged extends Error {
  constructor(readonly at: Divergence) {
    super(`replay diverges at position ${at.position}`);
  }
}

const shape = (e: { type: string; data: unknown }) => ({ type: e.type, data: e.data });

export function replayThroughDecider(events: readonly StoredEvent[]): Replay {
  let state: BuildState = evolveBuild(initialBuildState, events[0]!); // BuildInitialized: recorded by init, not by a step
  let i = 1;
  let steps = 0;
  const effects: Record<string, number> = {};
  const plannerRoute = (events.find((e) => e.type === 'HorizonSealed')?.data as { pins?: { plannerRoute?: string } } | undefined)?.pins?.plannerRoute ?? 'scripted:blueprint';
  const context = (): StepContext => ({
    now: (events[i]?.metadata as { recordedAt?: string } | undefined)?.recordedAt ?? (events.at(-1)!.metadata as { recordedAt: string }).recordedAt,
    attemptRefsChecked: true, plannerRoute, workerReworks: false,
  });
  /** The first recorded event from here on of `type` whose data matches. */
  const ahead = (type: string, match: (d: Record<string, unknown>) => boolean): Record<string, unknown> => {
    for (let j = i; j < events.length; j++) if (events[j]!.type === type && match(events[j]!.data as Record<string, unknown>)) return events[j]!.data as Record<string, unknown>;
    throw new Error(`replay: no recorded ${type} after position ${i} answers the effect`);
  };
  const opt = (d: Record<string, unknown>, ...keys: string[]) => Object.fromEntries(keys.filter((k) => d[k] !== undefined).map((k) => [k, d[k]]));
  const answer = (effect: EffectRequest): EffectResult => {
    effects[effect.kind] = (effects[effect.kind] ?? 0) + 1;
    switch (effect.kind) {
      case 'observe-refs':
        return { integration: state.integrationHead, published: state.integrationHead, attempts: {} } as EffectResult;
      case 'delete-branches':
      case 'repair-refs':
        return null;
      case 'planner': {
        const d = ahead('PlannerReturned', (x) => x.callId === effect.callId);
        return { answer: d.proposal, ...opt(d, 'inputSha256', 'usage', 'reused') } as EffectResult;
      }
      case 'worker': {
        const d = ahead('AttemptFinished', (x) => x.attemptId === effect.attemptId);
        const outcome = d.outcome === 'failed' ? 'failed' : effect.writable ? 'committed' : 'recorded';
        return { kept: { outcome, ...opt(d, 'stdoutSha256', 'stderrSha256', 'reason', 'decision', 'durationMs', 'inputSha256', 'reused', 'usage') }, worktree: `replay/${effect.attemptId}` } as EffectResult;
      }
      case 'finish-clone': {
        const d = ahead('AttemptFinished', (x) => x.attemptId === effect.attemptId);
        return (d.outcome === 'committed' ? { kind: 'committed', commit: d.commit, tree: d.tree } : { kind: 'unchanged' }) as EffectResult;
      }
      case 'check-candidate': {
        const d = ahead('AttemptFinished', (x) => x.commit === effect.commit || x.outcome === 'failed');
        if (d.outcome === 'committed') return { problem: null } as EffectResult;
        const m = /^([A-Z]-\d+): (.*)$/s.exec(String(d.reason));
        return { problem: { rule: m?.[1] ?? 'R-31', reason: m?.[2] ?? String(d.reason) } } as EffectResult;
      }
      case 'verify': {
        const d = ahead('VerificationFinished', (x) => x.jobId === effect.jobId);
        if (d.resultCommit === null) return { ok: false, reason: d.reason, ...((d.evidence as unknown[]).length > 0 ? { evidence: d.evidence } : {}) } as EffectResult;
        return { ok: true, resultCommit: d.resultCommit, tree: d.tree, passed: d.passed, evidence: d.evidence, ...opt(d, 'reason', 'tests') } as EffectResult;
      }
      case 'accept': {
        const d = ahead('AcceptanceFinished', (x) => x.runId === effect.runId);
        return { tree: d.tree, passed: d.passed, evidence: d.evidence, ...opt(d, 'reason') } as EffectResult;
      }
      case 'read-ref':
        // Where the integration ref stands before a promotion: at the head the log holds (it moves with the promotion).
        return { commit: state.integrationHead } as EffectResult;
      case 'promote':
        ahead('IntegrationPromoted', (x) => effect.jobIds.includes(String(x.jobId)));
        return { ok: true } as EffectResult;
      default:
        throw new Error(`replay: a ${effect.kind} effect happens only after a crash, which this log has none of`);
    }
  };
  const append = (decided: readonly DomainEvent[]): void => {
    for (const e of decided) {
      const recorded = events[i];
      if (recorded === undefined || recorded.type !== e.type || canonicalJson(recorded.data) !== canonicalJson(e.data as never)) {
        throw new Diverged({ position: i + 1, recorded: recorded ? shape(recorded) : null, decided: shape(e) });
      }
      state = evolveBuild(state, recorded);
      i += 1;
    }
  };
  try {
    // One step after the last recorded event too: it must append nothing (the build is complete).
    for (let last = false; !last; ) {
      last = i >= events.length;
      const before = i;
      const end = runChainSync(stepChain(), { state: () => state, context, append: (d) => append(d.events), perform: answer });
      steps += 1;
      if (end.end === 'fail') throw new Error(`replay: the step failed at position ${i}: ${end.message}`);
      if (i === before && !last) throw new Diverged({ position: i + 1, recorded: shape(events[i]!), decided: null });
    }
  } catch (err) {
    if (err instanceof Diverged) return { steps, effects, divergence: err.at };
    throw err;
  }
  return { steps, effects, divergence: null };
}
