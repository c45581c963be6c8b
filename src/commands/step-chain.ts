/**
 * The one interpreter of the pure step: a step is a chain of decisions (`decideStep`, `settle`),
 * each appending its events and naming what comes next — an effect to carry out, a focus to decide
 * on, or the step's end. `stepChain` walks that chain and asks its host for exactly three things:
 * make a decision on the state as it is now and append its events; carry out an effect and give
 * its result; and, at a dispatch or an integration, whether the rest of the chain runs alongside
 * others. The controller hosts it asynchronously (src/adapters/controller/controller.ts, effects
 * at the edge); `runChainSync` hosts it synchronously for the step specs and the golden-log replay
 * (effects answered from a script or a recorded log). Pure: no I/O, no clock.
 */
import type { BuildState } from '../projections/build-state.js';
import { decideStep, settle } from './decide-step.js';
import { isEffect, type Decision, type EffectRequest, type EffectResult, type Outcome, type StepContext } from './step-types.js';

/** What makes a chain's next decision, on the state and context as they are when the host makes it. */
export type MakeDecision = (state: BuildState, ctx: StepContext) => Decision;

/** What a chain asks of its host. */
export type ChainOp =
  /** Make the decision now, append its events, and resume with it. */
  | { readonly op: 'decide'; readonly make: MakeDecision }
  /** Carry out the effect and resume with its result. */
  | { readonly op: 'effect'; readonly effect: EffectRequest }
  /** The rest of the chain may run alongside others (a dispatch, an integration): resume when it goes on. */
  | { readonly op: 'fiber'; readonly fiber: string };

/** How a chain ends. */
export type ChainEnd =
  | { readonly end: 'done'; readonly outcome: Outcome }
  | { readonly end: 'wait' }
  | { readonly end: 'fail'; readonly error: 'corrupt' | 'effect'; readonly message: string };

export type StepChain = Generator<ChainOp, ChainEnd, unknown>;

/** A step from its beginning: the first decision is `decideStep` on the state as it is. */
export function* stepChain(first: MakeDecision = (s, c) => decideStep(s, c)): StepChain {
  let make = first;
  for (;;) {
    const d = (yield { op: 'decide', make }) as Decision;
    if (d.fiber !== undefined) yield { op: 'fiber', fiber: d.fiber };
    const next = d.next;
    if (isEffect(next)) {
      const result = (yield { op: 'effect', effect: next }) as EffectResult;
      make = (s, c) => settle(s, c, next, result as never);
    } else if (next.kind === 'wait') return { end: 'wait' };
    else if (next.kind === 'done') return { end: 'done', outcome: next.outcome };
    else if (next.kind === 'fail') return { end: 'fail', error: next.error, message: next.message };
    else make = (s, c) => decideStep(s, c, next);
  }
}

/** A synchronous host: its state, the context of the next decision, how it appends and how it answers effects. */
export interface SyncHost {
  state(): BuildState;
  context(): StepContext;
  append(decision: Decision): void;
  perform(effect: EffectRequest): EffectResult;
}

/** Run a chain to its end on a synchronous host (fibers go on inline, as with one worker at a time). */
export function runChainSync(chain: StepChain, host: SyncHost): ChainEnd {
  let input: unknown;
  for (;;) {
    const it = chain.next(input);
    if (it.done === true) return it.value;
    const op = it.value;
    if (op.op === 'decide') {
      const d = op.make(host.state(), host.context());
      host.append(d);
      input = d;
    } else if (op.op === 'effect') input = host.perform(op.effect);
    else input = undefined;
  }
}
