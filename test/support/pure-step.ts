/**
 * One step of the pure controller (src/commands/decide-step.ts), through the controller's own
 * interpreter (src/commands/step-chain.ts), without git, processes or files: the decisions' events are folded into the spec, each effect is answered by `answer`, until
 * the step is done. A fresh step's refs check is answered "in agreement" unless `answer` takes it.
 */
import type { DomainEvent } from '../../src/events/catalogue.js';
import { describe as describeStep, type EffectRequest, type EffectResults, type StepContext, type StepResult } from '../../src/commands/decide-step.js';
import { runChainSync, stepChain } from '../../src/commands/step-chain.js';
import type { BuildSpec } from './given.js';

export interface StepRun {
  readonly spec: BuildSpec;
  /** Every event appended, in order. */
  readonly events: DomainEvent[];
  /** Every effect requested, in order (the refs check of a fresh step included). */
  readonly effects: EffectRequest[];
  readonly result: StepResult | { fail: string };
}

/** How a test answers an effect: its result, or undefined to let the refs check agree. */
export type Answer = (e: EffectRequest, spec: BuildSpec) => EffectResults[keyof EffectResults] | undefined;

export function interpretStep(spec: BuildSpec, ctx: StepContext, answer: Answer): StepRun {
  const events: DomainEvent[] = [];
  const effects: EffectRequest[] = [];
  // The controller's own interpreter (src/commands/step-chain.ts), hosted synchronously: decisions fold into the spec.
  const end = runChainSync(stepChain(), {
    state: () => spec.state,
    context: () => ctx,
    append: (d) => {
      if (d.events.length === 0) return;
      spec = spec.when(...d.events);
      events.push(...d.events);
    },
    perform: (next) => {
      effects.push(next);
      const given = answer(next, spec);
      if (given === undefined && next.kind !== 'observe-refs') throw new Error(`no result for the ${next.kind} effect`);
      return given !== undefined ? given : { integration: spec.state.integrationHead, published: spec.state.integrationHead, attempts: {} };
    },
  });
  if (end.end === 'wait') throw new Error('the step waits for a call in flight, which a spec has none of');
  return { spec, events, effects, result: end.end === 'done' ? describeStep(spec.state, end.outcome) : { fail: end.message } };
}
