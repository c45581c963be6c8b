import type { JsonValue } from '../../events/canonical.js';
import { CorruptLogError, EffectError, RefusedTransitionError } from '../../events/errors.js';
import { computeEventHash, type StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/log.js';
import type { DomainEvent } from '../../events/catalogue.js';
import { evolveBuild, initialBuildState, type BuildState } from '../../projections/build-state.js';
import { graphRecords } from '../../projections/graph-record.js';
import { decideStep, describe, isEffect, settle, type Decision, type StepContext, type StepResult } from '../../commands/step.js';
import type { OperatorVerdict } from '../../commands/operator.js';
import type { Clock } from '../clock.js';
import { throwIfInterrupted } from '../interrupt.js';
import { effectRunner, type EffectDeps, type RunEffect } from './effects.js';

export type { StepOutcome, StepResult } from '../../commands/step.js';

export interface ControllerDeps extends EffectDeps {
  readonly log: EventLog;
  readonly clock: Clock;
  /** Checked before every append: the controller still holds its lease (throws ConcurrencyError). */
  readonly beforeAppend?: () => void;
  /** Called after every append with the new events (projections catch up here). */
  readonly onAppended?: (events: readonly StoredEvent[], state: BuildState) => void;
}

/**
 * The deterministic host (R-17..R-19): folds the log into state and interprets the pure step
 * (src/commands/step.ts): append a decision's events, run the effect it requests, settle the
 * result, until the step is done. It decides nothing itself.
 */
export class Controller {
  private state: BuildState = initialBuildState;
  private streamId = '';
  private streamRevision = -1;
  private prevHash: string | null = null;
  /** Attempt branches are compared with the log once per open; the integration ref every step. */
  private attemptRefsChecked = false;
  private readonly runEffect: RunEffect;

  private constructor(private readonly deps: ControllerDeps) {
    this.runEffect = effectRunner(deps);
  }

  /**
   * Open a controller on an initialised build, from a state the projection store already folded
   * (restored from a snapshot and caught up): the events up to its position are re-hashed and
   * linked (R-4: an edited event is never silently acted on), not folded again. Without one, or
   * when it does not fit the log, the whole log is folded. Then whatever lies beyond is folded.
   */
  static async open(deps: ControllerDeps, from?: BuildState): Promise<Controller> {
    const c = new Controller(deps);
    if (from !== undefined && from.position > 0) {
      let last: StoredEvent | undefined;
      for (let next = 1; next <= from.position;) {
        const batch = await deps.log.readAll({ from: next, limit: Math.min(5000, from.position - next + 1) });
        if (batch.length === 0) break;
        for (const e of batch) c.check(e);
        last = batch[batch.length - 1]!;
        next = last.position + 1;
      }
      if (last?.position === from.position) {
        c.state = from;
      } else {
        // The log ends before it (the store will say why): fold from the start instead.
        c.streamId = '';
        c.streamRevision = -1;
        c.prevHash = null;
      }
    }
    await c.catchUp();
    if (!c.state.build) throw new CorruptLogError(1, 'the log holds no BuildInitialized event (run `longbuild init` first)');
    return c;
  }

  get current(): BuildState {
    return this.state;
  }

  /** Fold events appended since we last looked (another controller, or a crashed run). */
  async catchUp(): Promise<void> {
    for (;;) {
      const batch = await this.deps.log.readAll({ from: this.state.position + 1, limit: 5000 });
      if (batch.length === 0) return;
      for (const e of batch) this.fold(e);
    }
  }

  private fold(e: StoredEvent, folded?: BuildState): void {
    this.check(e);
    this.state = folded ?? evolveBuild(this.state, e);
  }

  /** Link and re-hash one event of the log, in order, and take its stream position. */
  private check(e: StoredEvent): void {
    if (this.prevHash !== null && e.prevHash !== this.prevHash) {
      throw new CorruptLogError(e.position, 'previous-hash link broken while reading the log (run `longbuild verify`)');
    }
    // Every event the controller folds is re-hashed: an edited event is never silently acted on.
    if (computeEventHash(e) !== e.hash) throw new CorruptLogError(e.position, 'hash mismatch (event edited); run `longbuild verify`');
    if (this.streamId === '') this.streamId = e.streamId;
    if (e.streamId === this.streamId) this.streamRevision = e.revision;
    this.prevHash = e.hash;
  }

  private async append(events: readonly DomainEvent[], causationId: string): Promise<void> {
    for (const e of events) this.deps.faults.reach(`before-append:${e.type}`);
    this.deps.beforeAppend?.();
    throwIfInterrupted(); // an interrupted controller records nothing more (interrupt.ts)
    const position = this.state.position + 1;
    const recordedAt = this.now(position);
    // an event that changes the graph records the revision it makes and that graph's SHA-256.
    const { records: graphs, states } = graphRecords(this.state, events, recordedAt);
    const result = await this.deps.log.append(
      this.streamId,
      events.map((e, i) => ({
        type: e.type, data: e.data as JsonValue,
        metadata: { recordedAt, causationId, correlationId: this.state.build!.buildId, ...(graphs[i] ? { graph: { ...graphs[i] } } : {}) },
      })),
      this.streamRevision,
    );
    // The states folded for the graph records are the fold of these events: adopt them (each
    // event still re-hashed and linked) instead of folding again.
    result.events.forEach((e, i) => this.fold(e, e.position === position + i ? states[i] : undefined));
    this.deps.onAppended?.(result.events, this.state);
    for (const e of events) this.deps.faults.reach(`after-append:${e.type}`);
  }

  /**
   * The clock's time for the event at `position`, on a tick that skips recovery-only events: with
   * the logical clock a resumed build then records the same times, commit dates and so commit SHAs
   * and checkpoint bytes as an uninterrupted one, even after an in-doubt re-invocation.
   */
  private now(position: number): string {
    return this.deps.clock.now(position - this.state.recoveries);
  }

  private context(): StepContext {
    return {
      now: this.now(this.state.position + 1), attemptRefsChecked: this.attemptRefsChecked,
      plannerRoute: this.deps.planner.route, workerReworks: this.deps.worker.reworks === true,
    };
  }

  /** Record an operator's decision (e.g. `retry`): checked against the state first, then one append. */
  async operate(decide: (state: BuildState) => OperatorVerdict, causationId: string): Promise<StepResult> {
    await this.catchUp();
    const verdict = decide(this.state);
    if (!verdict.ok) throw new RefusedTransitionError(verdict.reason);
    await this.append([verdict.event], causationId);
    return describe(this.state, { kind: 'report', outcome: 'recovered', detail: `${verdict.event.type} recorded` });
  }

  /** Perform exactly one controller event: the pure step's decisions, interpreted. */
  async advance(): Promise<StepResult> {
    await this.catchUp();
    let d: Decision = decideStep(this.state, this.context());
    for (;;) {
      if (d.events.length > 0) await this.append(d.events, d.causationId);
      const next = d.next;
      if (isEffect(next)) {
        const result = await this.runEffect(next);
        if (next.kind === 'observe-refs') this.attemptRefsChecked = true;
        d = settle(this.state, this.context(), next, result);
      } else if (next.kind === 'done') {
        return describe(this.state, next.outcome);
      } else if (next.kind === 'fail') {
        throw next.error === 'corrupt' ? new CorruptLogError(1, next.message) : new EffectError(next.message);
      } else {
        d = decideStep(this.state, this.context(), next);
      }
    }
  }
}
