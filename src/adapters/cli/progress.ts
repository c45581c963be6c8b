import type { StepResult } from '../controller/controller.js';
import type { BuildState } from '../../projections/build-state.js';
import { activeMilestone, rankReadyWave } from '../../projections/graph.js';
import { nextAction, type NextAction } from '../../commands/next-action.js';

/**
 * How a running build reports its steps (`run --progress MODE`, `demo`):
 * - `tty`: one status line redrawn in place, with the elapsed time of the step that is running;
 * - `lines`: one plain line per finished step (a pipe, a CI log), with its duration;
 * - `ndjson`: one JSON object per finished step on stdout (`{"type":"step",...}`), for scripts;
 * - `off`: nothing.
 */
export type ProgressMode = 'tty' | 'lines' | 'ndjson' | 'off';
export const PROGRESS_MODES: readonly ProgressMode[] = ['tty', 'lines', 'ndjson', 'off'];

export interface ProgressOptions {
  /** Where `tty` and `lines` write (stderr). */
  readonly write: (text: string) => void;
  /** Where `ndjson` writes (stdout). */
  readonly writeJson?: (text: string) => void;
  readonly mode: ProgressMode;
  readonly color: boolean;
  /** Terminal width for `tty` (lines are cut to fit); absent: 100. */
  readonly columns?: number;
  /** The clock (tests pass their own). */
  readonly now?: () => number;
  /** The calls running now (Controller.callsInFlight): shown with their elapsed time. */
  readonly calls?: () => readonly CallInFlight[];
}

/** A planner, worker or verification call running now. */
export interface CallInFlight {
  readonly key: string;
  readonly label: string;
  /** When it started, ms since the epoch. */
  readonly since: number;
}

/** At most this many calls are listed on a terminal (the rest counted). */
const SHOWN_CALLS = 8;

/** Whether to colour: a terminal, and no NO_COLOR (https://no-color.org). */
export function useColor(env: Readonly<Record<string, string | undefined>>, isTty: boolean): boolean {
  return isTty && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
}

/** The default mode: a line redrawn on a terminal, plain lines in a pipe, nothing with --json. */
export function defaultProgressMode(json: boolean, isTty: boolean): ProgressMode {
  return json ? 'off' : isTty ? 'tty' : 'lines';
}

const OUTCOME_COLOR: Record<string, number> = {
  planned: 36, renewed: 36, dispatched: 34, integrated: 32, checkpointed: 35, compacted: 35,
  revising: 33, recovered: 33, horizon_complete: 32, blocked: 31, acceptance: 35, verified: 34, discarded: 33, paused: 33, 'over-budget': 31, awaiting_approval: 33,
};

/** What the controller is about to do, in a few words (the line shown while a call runs). */
export function describeAction(a: NextAction): string {
  switch (a.kind) {
    case 'plan': return `asking the planner (${a.purpose}, ${a.callId})`;
    case 'dispatch': return `worker on ${a.nodeId} (attempt ${a.attempt})`;
    case 'integrate': return `verifying ${a.candidates.map((c) => c.nodeId).join(', ')} (${a.jobId})`;
    case 'settle-job': return `settling ${a.jobId}`;
    case 'settle-attempt': return `settling ${a.attemptId}`;
    case 'checkpoint': return `checkpoint ${a.milestoneId}`;
    case 'compact': return `compacting ${a.milestoneId}`;
    case 'accept': return `acceptance ${a.runId} on ${a.head.slice(0, 12)}`;
    case 'settle-acceptance': return `settling ${a.runId}`;
    default: return a.kind;
  }
}

/**
 * Progress of a running build: every step as it ends, and every call in flight with its elapsed
 * time (several workers and verifications run at once); the active milestone, the
 * ready wave and verification cache hits.
 */
export class Progress {
  private steps = 0;
  private cacheHits = 0;
  private verifications = 0;
  private started = 0;
  private doing = '';
  /** The build's line (milestones, ready wave, cache hits), drawn below the last step on a terminal. */
  private tail = '';
  private ticker: ReturnType<typeof setInterval> | null = null;
  private readonly now: () => number;
  constructor(private readonly o: ProgressOptions) {
    this.now = o.now ?? Date.now;
  }

  /** A step is about to run: on a terminal, show what runs with its elapsed time until it ends. */
  begin(st: BuildState): void {
    this.started = this.now();
    if (this.o.mode !== 'tty') return;
    this.doing = st.build ? describeAction(nextAction(st)) : '';
    this.drawLive();
    if (this.ticker === null) {
      this.ticker = setInterval(() => this.drawLive(), 1000);
      this.ticker.unref?.();
    }
  }

  step(r: StepResult, st: BuildState): void {
    this.steps += 1;
    const elapsedMs = this.started === 0 ? 0 : this.now() - this.started;
    if (r.outcome === 'integrated' || r.outcome === 'revising' || r.outcome === 'recovered') this.countCache(st);
    if (this.o.mode === 'off') return;
    const milestone = activeMilestone(st) ?? '-';
    const ready = rankReadyWave(st);
    const done = st.horizon ? st.horizon.detailed.filter((m) => st.checkpoints[m.id]).length + Object.keys(st.checkpoints).filter((id) => !st.horizon!.detailed.some((m) => m.id === id)).length : 0;
    const total = st.horizon ? done + st.horizon.detailed.filter((m) => !st.checkpoints[m.id]).length + st.horizon.coarse.length : 0;
    const calls = this.o.calls?.() ?? [];
    if (this.o.mode === 'ndjson') {
      (this.o.writeJson ?? this.o.write)(`${JSON.stringify({
        type: 'step', step: this.steps, outcome: r.outcome, detail: r.detail, position: r.position, graphRevision: r.graphRevision,
        elapsedMs, milestone: activeMilestone(st), milestones: { done, total }, ready, cacheHits: this.cacheHits,
        inFlight: calls.map((c) => ({ id: c.key, call: c.label, elapsedMs: this.now() - c.since })),
        ...(r.nodeId !== undefined ? { nodeId: r.nodeId } : {}), ...(r.reason !== undefined ? { reason: r.reason } : {}),
      })}\n`);
      return;
    }
    const took = `${(elapsedMs / 1000).toFixed(1)}s`.padStart(6);
    const plain = `[${String(this.steps).padStart(3)}] ${took} ${r.outcome.padEnd(16)} ${r.detail}`;
    const colour = (text: string) => text.replace(r.outcome.padEnd(16), this.paint(r.outcome.padEnd(16), OUTCOME_COLOR[r.outcome] ?? 0));
    this.tail = `milestones ${done}/${total} · active ${milestone} · ready ${ready.length}${ready.length ? ` (${ready.slice(0, 3).join(', ')}${ready.length > 3 ? ', …' : ''})` : ''} · cache hits ${this.cacheHits}/${this.verifications}`;
    if (this.o.mode === 'tty') {
      // The step line stays; the live block below it is drawn again.
      this.o.write(`\r\x1b[J${colour(this.fit(plain))}\n`);
      this.drawLive();
      return;
    }
    const flight = calls.length > 0 ? ` · in flight: ${calls.map((c) => `${c.label} ${this.secs(c.since)}s`).join(', ')}` : '';
    this.o.write(`${plain}   [${this.tail}${flight}]\n`);
  }

  finish(): void {
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
    // The live block goes; the step lines stay.
    if (this.o.mode === 'tty') this.o.write('\r\x1b[J');
  }

  get cache(): { hits: number; verifications: number } {
    return { hits: this.cacheHits, verifications: this.verifications };
  }

  private secs(since: number): number {
    return Math.max(0, Math.floor((this.now() - since) / 1000));
  }

  /** The live block: the build's tail line, then each call in flight (or what the step does) with its elapsed time. */
  private drawLive(): void {
    const calls = this.o.calls?.() ?? [];
    const running = calls.length > 0
      ? calls.slice(0, SHOWN_CALLS).map((c) => `${'running'.padEnd(16)} ${`${this.secs(c.since)}s`.padStart(6)} ${c.label}`)
      : this.doing !== '' ? [`${'running'.padEnd(16)} ${`${this.secs(this.started)}s`.padStart(6)} ${this.doing}`] : [];
    if (calls.length > SHOWN_CALLS) running.push(`… and ${calls.length - SHOWN_CALLS} more calls in flight`);
    const lines = [...(this.tail !== '' ? [this.paint(this.fit(this.tail), 2)] : []), ...running.map((l) => this.fit(l).replace('running'.padEnd(16), this.paint('running'.padEnd(16), 2)))];
    this.o.write(`\r\x1b[J${lines.join('\n')}${lines.length > 1 ? `\x1b[${lines.length - 1}A` : ''}\r`);
  }

  /** Cut a line to the terminal's width (colour codes are added after cutting). */
  private fit(text: string): string {
    const width = Math.max(20, (this.o.columns ?? 100) - 1);
    return text.length > width ? `${text.slice(0, width - 1)}…` : text;
  }

  private countCache(st: BuildState): void {
    this.cacheHits = st.verifications.cacheHits;
    this.verifications = st.verifications.commands;
  }

  private paint(text: string, code: number): string {
    return this.o.color && code ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
}
