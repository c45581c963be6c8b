import type { StepResult } from '../controller/controller.js';
import type { BuildState } from '../../projections/build-state.js';
import { activeMilestone, rankReadyWave } from '../../projections/graph.js';

export interface ProgressOptions {
  readonly write: (text: string) => void;
  /** Redraw one status line in place (a terminal); otherwise print plain lines. */
  readonly animate: boolean;
  readonly color: boolean;
  /** Print nothing at all (--json). */
  readonly quiet: boolean;
}

/** Whether to colour: a terminal, and no NO_COLOR (https://no-color.org). */
export function useColor(env: Readonly<Record<string, string | undefined>>, isTty: boolean): boolean {
  return isTty && (env.NO_COLOR === undefined || env.NO_COLOR === '') && env.TERM !== 'dumb';
}

const OUTCOME_COLOR: Record<string, number> = {
  planned: 36, renewed: 36, dispatched: 34, integrated: 32, checkpointed: 35, compacted: 35,
  revising: 33, recovered: 33, horizon_complete: 32, blocked: 31,
};

/** Progress of a running build: milestone, current node, ready wave, verification cache hits. */
export class Progress {
  private steps = 0;
  private cacheHits = 0;
  private verifications = 0;
  constructor(private readonly o: ProgressOptions) {}

  step(r: StepResult, st: BuildState): void {
    this.steps += 1;
    if (r.outcome === 'integrated' || r.outcome === 'revising' || r.outcome === 'recovered') this.countCache(st);
    if (this.o.quiet) return;
    const milestone = activeMilestone(st) ?? '-';
    const ready = rankReadyWave(st);
    const done = st.horizon ? st.horizon.detailed.filter((m) => st.checkpoints[m.id]).length + Object.keys(st.checkpoints).filter((id) => !st.horizon!.detailed.some((m) => m.id === id)).length : 0;
    const total = st.horizon ? done + st.horizon.detailed.filter((m) => !st.checkpoints[m.id]).length + st.horizon.coarse.length : 0;
    const outcome = this.paint(r.outcome.padEnd(16), OUTCOME_COLOR[r.outcome] ?? 0);
    const line = `[${String(this.steps).padStart(3)}] ${outcome} ${r.detail.length > 64 ? `${r.detail.slice(0, 63)}…` : r.detail}`;
    const tail = `milestones ${done}/${total} · active ${milestone} · ready ${ready.length}${ready.length ? ` (${ready.slice(0, 3).join(', ')}${ready.length > 3 ? ', …' : ''})` : ''} · cache hits ${this.cacheHits}/${this.verifications}`;
    if (this.o.animate) this.o.write(`\r\x1b[2K${line}\n\x1b[2K${this.paint(tail, 2)}\x1b[1A\r`);
    else this.o.write(`${line}   [${tail}]\n`);
  }

  finish(): void {
    if (!this.o.quiet && this.o.animate) this.o.write('\n\n');
  }

  get cache(): { hits: number; verifications: number } {
    return { hits: this.cacheHits, verifications: this.verifications };
  }

  private countCache(st: BuildState): void {
    this.cacheHits = st.verifications.cacheHits;
    this.verifications = st.verifications.commands;
  }

  private paint(text: string, code: number): string {
    return this.o.color && code ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
}
