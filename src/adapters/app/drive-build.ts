import type { StepOutcome, StepResult } from '../controller/controller.js';
import { endsRun } from '../controller/controller.js';
import type { BuildState } from '../../projections/build-state.js';
import { withBuild } from './with-build.js';
import { leaseOptions, withControl } from './control.js';
import type { AppContext } from './context.js';
import { throwIfInterrupted } from '../interrupt.js';
import { concurrencyOf } from '../../commands/next-action.js';
import { Notifications } from '../notify/notifications.js';
import type { BuildSession } from '../session.js';
import { publishProvenance } from './commit-provenance.js';
import { readNote } from '../provenance/attestations.js';
import { OtelStream } from '../otel/stream.js';
import { packageVersion } from '../package-files.js';

/** The most a run's end waits for its last spans to reach the collector (--otel). */
const OTEL_SETTLE_MS = 10_000;

export interface RunOutput {
  readonly outcome: StepOutcome;
  readonly steps: number;
  readonly position: number;
  readonly graphRevision: number;
  readonly integrationHead: string | null;
  readonly integrationRef: string | null;
  readonly reason?: string;
  readonly outcomes: Partial<Record<StepOutcome, number>>;
}

/** Who is told of a run's progress (the CLI's progress line; nothing by default). */
export interface RunReporter {
  /** The calls running now, for a progress line that names them. */
  watch?(calls: () => readonly { readonly key: string; readonly label: string; readonly since: number }[]): void;
  begin?(state: BuildState): void;
  step?(result: StepResult, state: BuildState): void;
  finish?(): void;
}

export interface RunOptions {
  /** Steps to take at most (steps in flight counted); default: until the run ends. */
  readonly maxSteps?: number;
  /** An OTLP/HTTP traces URL the spans are streamed to as steps end. */
  readonly otelUrl?: URL | null;
  readonly reporter?: RunReporter;
}

/**
 * Drive a build under its controller lease until horizon_complete, blocked, paused (the budget,
 * R-59), awaiting approval or `maxSteps`; then deliver what its notifiers are due, write
 * the provenance notes of what it integrated and let its spans reach the collector.
 */
export async function runBuild(ctx: AppContext, options: RunOptions = {}): Promise<RunOutput> {
  const limit = options.maxSteps ?? Number.POSITIVE_INFINITY;
  const otelUrl = options.otelUrl ?? null;
  const progress = options.reporter ?? {};
  return withControl(ctx, (lease) => withBuild(ctx, async (s) => {
    progress.watch?.(() => s.controller.callsInFlight());
    // notifications due (left by an earlier run too) go out in the background as steps end.
    const notify = notificationsOf(s, ctx);
    notify?.poke(s.controller.current);
    // spans streamed to a collector from the log, in the background, as steps end.
    const otel = otelUrl !== null ? new OtelStream({ url: otelUrl, log: s.log, version: packageVersion(), warn: (line) => ctx.stderr(`longbuild: ${line}\n`) }) : null;
    otel?.poke();
    const outcomes: Partial<Record<StepOutcome, number>> = {};
    let steps = 0;
    let last: StepResult | null = null;
    if (concurrencyOf(s.controller.current) > 1) {
      // Several workers in flight: steps are reported as they end, in log order.
      progress.begin?.(s.controller.current);
      try {
        await s.runAll((r) => {
          steps += 1;
          last = r;
          outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
          progress.step?.(r, s.controller.current);
          progress.begin?.(s.controller.current);
          notify?.poke(s.controller.current);
          otel?.poke();
        }, (inFlight) => steps + inFlight >= limit); // --max-steps N: N steps, the ones in flight counted
      } finally {
        progress.finish?.();
      }
    }
    while (concurrencyOf(s.controller.current) === 1 && steps < limit) {
      throwIfInterrupted();
      progress.begin?.(s.controller.current);
      try {
        last = await s.advance({ held: true }); // committed with the next step's first effect, or at close
      } catch (err) {
        progress.finish?.(); // the running line ends before the error is printed
        throw err;
      }
      steps += 1;
      outcomes[last.outcome] = (outcomes[last.outcome] ?? 0) + 1;
      progress.step?.(last, s.controller.current);
      notify?.poke(s.controller.current);
      otel?.poke();
      if (endsRun(last.outcome)) break;
    }
    progress.finish?.();
    // What the notifiers came to, recorded (a crash before this delivers them again, with the same keys).
    for (const sent of (await notify?.settle()) ?? []) await s.operate(() => ({ ok: true, event: { type: 'NotificationSent', data: sent } }), 'notify');
    // the provenance notes of the commits integrated (this run's, and any an earlier run left unwritten).
    // The head's note is written last: when it has one, every integrated commit has.
    // A build that has promoted nothing (its head is where it started) has nothing to attest.
    const head = s.controller.current.integrationHead;
    if (steps > 0 && head !== null && head !== s.controller.current.build?.baseHead && (await readNote(ctx.repo, head)) === null) {
      try {
        await publishProvenance(ctx, s, false);
      } catch (err) {
        ctx.stderr(`longbuild: provenance notes not written (${err instanceof Error ? err.message : String(err)}); \`longbuild provenance publish\` writes them\n`);
      }
    }
    await otel?.settle(OTEL_SETTLE_MS);
    const st = s.controller.current;
    return {
      outcome: last?.outcome ?? 'horizon_complete',
      steps,
      position: st.position,
      graphRevision: st.graphRevision,
      integrationHead: st.integrationHead,
      integrationRef: st.build?.integrationRef ?? null,
      ...(last?.reason !== undefined ? { reason: last.reason } : {}),
      outcomes,
    };
  }, leaseOptions(lease)));
}

/** The build's notifiers, or null when it has none. */
function notificationsOf(s: BuildSession, ctx: AppContext): Notifications | null {
  const st = s.controller.current;
  const notifiers = st.build?.settings.notify;
  if (notifiers === undefined) return null;
  return new Notifications({
    notifiers, buildId: st.build!.buildId, cwd: s.paths.repo, env: ctx.env,
    eventsAt: async (positions) => (await Promise.all(positions.map((p) => s.log.readAll({ from: p, limit: 1 })))).flat(),
    warn: (line) => ctx.stderr(`longbuild: ${line}\n`),
  });
}

