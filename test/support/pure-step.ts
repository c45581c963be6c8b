/**
 * One step of the pure controller (src/commands/decide-step.ts), interpreted without git, processes or
 * files: the decisions' events are folded into the spec, each effect is answered by `answer`, until
 * the step is done. A fresh step's refs check is answered "in agreement" unless `answer` takes it.
 */
import type { DomainEvent } from '../../src/events/catalogue.js';
import { decideStep, describe as describeStep, isEffect, settle, type EffectRequest, type EffectResults, type StepContext, type StepResult } from '../../src/commands/decide-step.js';
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
  let d = decideStep(spec.state, ctx);
  for (;;) {
    if (d.events.length > 0) {
      spec = spec.when(...d.events);
      events.push(...d.events);
    }
    const next = d.next;
    if (isEffect(next)) {
      effects.push(next);
      const given = answer(next, spec);
      if (given === undefined && next.kind !== 'observe-refs') throw new Error(`no result for the ${next.kind} effect`);
      const result = given !== undefined ? given : { integration: spec.state.integrationHead, published: spec.state.integrationHead, attempts: {} };
      d = settle(spec.state, ctx, next, result as never);
    } else if (next.kind === 'done') return { spec, events, effects, result: describeStep(spec.state, next.outcome) };
    else if (next.kind === 'fail') return { spec, events, effects, result: { fail: next.message } };
    else d = decideStep(spec.state, ctx, next);
  }
}
