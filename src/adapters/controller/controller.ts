import { CorruptLogError, EffectError, RefusedTransitionError } from '../../events/errors.js';
import type { BuildState } from '../../projections/build-state.js';
import { changesTheWorld, describe, type Decision, type StepContext, type StepResult } from '../../commands/decide-step.js';
import { stepChain, type StepChain } from '../../commands/step-chain.js';
import type { OperatorVerdict } from '../../commands/operator.js';
import { LogCursor, type LogCursorDeps } from './log-cursor.js';
import { effectRunner, type EffectDeps, type RunEffect } from './effects.js';

export type { StepOutcome, StepResult } from '../../commands/decide-step.js';
import { endsRun } from '../../commands/step-types.js';
export { endsRun };

export interface ControllerDeps extends EffectDeps, LogCursorDeps {}

/**
 * The deterministic host (R-17..R-19): folds the log into state and interprets the pure step
 * (src/commands/decide-step.ts): append a decision's events, run the effect it requests, settle the
 * result, until the step is done. It decides nothing itself.
 */
export class Controller {
  private readonly cursor: LogCursor;
  /** Attempt branches are compared with the log once per open; the integration ref every step. */
  private attemptRefsChecked = false;
  private readonly runEffect: RunEffect;
  private readonly keptDurable: (state: BuildState) => void;
  /** The attempts and integration jobs whose chains are in flight (runAll); empty when one runs at a time. */
  private readonly inFlight = new Set<string>();
  private writer: Promise<unknown> = Promise.resolve();

  /** The planner, worker and verification calls running now, by key (progress shows them). */
  private readonly board = new Map<string, { readonly label: string; readonly since: number }>();

  private constructor(private readonly deps: ControllerDeps) {
    const effects = effectRunner({
      ...deps,
      board: {
        begin: (key, label) => void this.board.set(key, { label, since: Date.now() }),
        end: (key) => void this.board.delete(key),
      },
    });
    this.runEffect = effects.run;
    this.keptDurable = effects.keptDurable;
    this.cursor = new LogCursor(deps);
    deps.faults.describeWith?.(() => this.callsInFlight().map((c) => c.key).sort().join(' '));
  }

  /** The calls running now, oldest first: what each is and since when (epoch ms). */
  callsInFlight(): { readonly key: string; readonly label: string; readonly since: number }[] {
    return [...this.board].map(([key, c]) => ({ key, ...c })).sort((a, b) => a.since - b.since);
  }

  /**
   * Open a controller on an initialised build, from a state the projection store already folded
   * (or else from the log's start; see LogCursor), then fold whatever the log holds beyond it.
   * `trusted`: that state's events are not re-hashed (a reading command; see LogCursor.startFrom).
   */
  static async open(deps: ControllerDeps, from?: BuildState, options: { readonly trusted?: boolean } = {}): Promise<Controller> {
    const c = new Controller(deps);
    if (from !== undefined) await c.cursor.startFrom(from, options.trusted === true);
    await c.cursor.catchUp();
    if (!c.current.build) throw new CorruptLogError(1, 'the log holds no BuildInitialized event (run `longbuild init` first)');
    return c;
  }

  get current(): BuildState {
    return this.cursor.state;
  }

  private context(): StepContext {
    return {
      now: this.cursor.now(this.current.position + 1), attemptRefsChecked: this.attemptRefsChecked,
      plannerRoute: this.deps.planner.route, workerReworks: this.deps.worker.reworks === true, running: this.inFlight,
    };
  }

  /** Decisions and their appends are made one at a time, in log order, whatever is in flight. */
  private locked<T>(work: () => Promise<T>): Promise<T> {
    const run = this.writer.then(work, work);
    this.writer = run.catch(() => undefined);
    return run;
  }

  /** Make one decision on the state as it is now and append its events (one writer at a time). */
  private decide(make: () => Decision): Promise<Decision> {
    return this.locked(async () => {
      const d = make();
      if (d.events.length > 0) await this.cursor.append(d.events, d.causationId);
      return d;
    });
  }

  /**
   * Host a step's chain (src/commands/step-chain.ts) until it ends: decisions are made and appended
   * one at a time, effects run at the edge (write-ahead first, R-18). With `fork`, a dispatch's
   * chain is handed over once its intent is appended ('forked'), and a step with nothing to do says 'wait'.
   */
  private async follow(chain: StepChain, fork?: (key: string, rest: Promise<StepResult>) => void): Promise<StepResult | 'wait' | 'forked'> {
    let input: unknown;
    for (;;) {
      const it = chain.next(input);
      if (it.done === true) {
        const end = it.value;
        if (end.end === 'wait') return 'wait';
        if (end.end === 'done') return describe(this.current, end.outcome);
        throw end.error === 'corrupt' ? new CorruptLogError(1, end.message) : new EffectError(end.message);
      }
      const op = it.value;
      if (op.op === 'decide') input = await this.decide(() => op.make(this.current, this.context()));
      else if (op.op === 'fiber') {
        if (fork !== undefined) {
          fork(op.fiber, (async () => this.finish(await this.follow(chain)))());
          return 'forked';
        }
        input = undefined;
      } else {
        const effect = op.effect;
        // Write-ahead: every decision so far is durable before an effect that changes anything starts.
        if (changesTheWorld(effect)) await this.sync();
        input = await this.runEffect(effect);
        if (effect.kind === 'observe-refs') this.attemptRefsChecked = true;
      }
    }
  }

  private finish(r: StepResult | 'wait' | 'forked'): StepResult {
    if (r === 'wait' || r === 'forked') throw new EffectError(`a step ended with '${r}' where a result was due`);
    return r;
  }

  /**
   * Make every appended event durable (the log's group commit, decision 0017): before an effect
   * starts, before a step's result is returned, before the build is closed.
   */
  sync(): Promise<void> {
    return this.locked(async () => {
      await this.cursor.sync();
      // What the commit made durable decides whether a kept worker outcome needs its own flush.
      this.keptDurable(this.current);
    });
  }

  /** A commit failed (its error was thrown where it happened): nothing more is appended or synced. */
  get broken(): boolean {
    return this.cursor.broken !== null;
  }

  /** Record an operator's decision (e.g. `retry`): checked against the state first, then one append. */
  async operate(decide: (state: BuildState) => OperatorVerdict, causationId: string): Promise<StepResult> {
    await this.cursor.catchUp();
    const verdict = decide(this.current);
    if (!verdict.ok) throw new RefusedTransitionError(verdict.reason);
    await this.cursor.append([verdict.event], causationId);
    await this.sync();
    return describe(this.current, { kind: 'report', outcome: 'recovered', detail: `${verdict.event.type} recorded` });
  }

  /**
   * Perform exactly one controller event: the pure step's decisions, interpreted. Its
   * events are durable when it returns, unless `held` (see BuildSession.advance).
   */
  async advance(options: { readonly held?: boolean } = {}): Promise<StepResult> {
    await this.cursor.catchUp();
    const result = this.finish(await this.follow(stepChain()));
    if (options.held !== true) await this.sync();
    return result;
  }

  /**
   * Run the build to its end (or until `stop` says so), keeping up to `settings.concurrency`
   * worker calls in flight: each dispatch's chain runs on its own once its intent is
   * appended, and the controller goes on deciding (more dispatches, integrations, checkpoints)
   * until a free slot or a returning call gives it something to do. Every step's result is
   * reported as it ends; the first failure stops new work, the calls in flight are awaited, and it
   * is thrown.
   */
  async runAll(onStep: (r: StepResult) => void, stop: (inFlight: number) => boolean = () => false): Promise<StepResult | null> {
    await this.cursor.catchUp();
    const fibers = new Map<string, Promise<void>>();
    let failure: { err: unknown } | null = null;
    const fork = (key: string, rest: Promise<StepResult>): void => {
      this.inFlight.add(key);
      fibers.set(key, rest.then(onStep, (err: unknown) => void (failure ??= { err })).finally(() => {
        this.inFlight.delete(key);
        fibers.delete(key);
      }));
    };
    let last: StepResult | null = null;
    // `stop` is told the steps in flight: each ends as a step, so a limit counts them before deciding more.
    while (failure === null && !stop(fibers.size)) {
      let r: StepResult | 'wait' | 'forked';
      try {
        r = await this.follow(stepChain(), fork);
      } catch (err) {
        failure ??= { err };
        break;
      }
      if (r === 'forked') continue;
      // A chain that ended (or failed) while this decision waited for the lock: decide again.
      if (r === 'wait') {
        if (fibers.size > 0) await Promise.race(fibers.values());
        continue;
      }
      onStep((last = r));
      if (endsRun(r.outcome)) {
        if (fibers.size === 0) break;
        await Promise.race(fibers.values()); // not while calls are in flight: their results come first
      }
    }
    await Promise.allSettled([...fibers.values()]);
    if (failure !== null) throw (failure as { err: unknown }).err;
    await this.sync();
    return last;
  }
}
