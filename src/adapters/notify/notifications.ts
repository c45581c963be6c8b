/**
 * Notification delivery: the outbox's due groups handed to their notifiers
 * (trusted commands from the config, the notification as JSON on stdin), in the background —
 * never blocking a step — retried with back-off, and settled into NotificationSent events by the
 * run that made them. A crash before that record delivers again (at least once) with the same
 * key: the trigger event's hash.
 */
import type { DataOf, Notifier } from '../../events/catalogue.js';
import type { StoredEvent } from '../../events/envelope.js';
import type { BuildState } from '../../projections/build-state.js';
import { dueNotifications, type DueNotification } from '../../commands/notify.js';
import { runProcess } from '../process/run-process.js';

export interface NotificationOptions {
  readonly notifiers: readonly Notifier[];
  readonly buildId: string;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** The events at these positions (the triggers, for the payload). */
  readonly eventsAt: (positions: readonly number[]) => Promise<StoredEvent[]>;
  readonly warn: (line: string) => void;
  /** Tries per notification, and the wait before the second (doubled each time). */
  readonly attempts?: number;
  readonly backoffMs?: number;
  readonly timeoutMs?: number;
}

export class Notifications {
  /** `notifier:kind:position` of triggers handed to a notifier in this run (recorded when it settles). */
  private readonly taken = new Set<string>();
  private readonly running: Promise<DataOf<'NotificationSent'>>[] = [];
  /** When this run handed each `notifier:kind` a notification (coalescing within the run). */
  private readonly started = new Map<string, number>();

  constructor(private readonly o: NotificationOptions) {}

  /** Start every notification due in `state` that this run has not started yet; returns at once. */
  poke(state: BuildState): void {
    const now = Date.now();
    for (const due of dueNotifications(state, now, this.taken, this.started)) {
      for (const p of due.triggers) this.taken.add(`${due.notifier}:${due.kind}:${p}`);
      this.started.set(`${due.notifier}:${due.kind}`, now);
      this.running.push(this.deliver(due));
    }
  }

  /** What the notifications this run started came to, once they have (a run records them as it ends). */
  async settle(): Promise<DataOf<'NotificationSent'>[]> {
    const out = await Promise.all(this.running);
    this.running.length = 0;
    return out;
  }

  private async deliver(due: DueNotification): Promise<DataOf<'NotificationSent'>> {
    const notifier = this.o.notifiers[due.notifier]!;
    const events = await this.o.eventsAt(due.triggers);
    const last = events.at(-1)!;
    const payload = {
      build: this.o.buildId, kind: due.kind, notifier: due.notifier,
      // The dedup key: the (latest) trigger event's hash — the same for a delivery made again after a crash.
      key: last.hash, coalesced: events.length,
      events: events.map((e) => ({ position: e.position, type: e.type, hash: e.hash, recordedAt: e.metadata.recordedAt, data: e.data })),
    };
    const tries = this.o.attempts ?? 3;
    let wait = this.o.backoffMs ?? 1000;
    let reason = '';
    for (let attempt = 1; attempt <= tries; attempt++) {
      const r = await runProcess({ argv: notifier.command, cwd: this.o.cwd, env: plainEnv(this.o.env), input: `${JSON.stringify(payload)}\n`, timeoutMs: this.o.timeoutMs ?? 30_000 });
      if (r.exitCode === 0) return { notifier: due.notifier, kind: due.kind, triggers: [...due.triggers], outcome: 'delivered', attempts: attempt };
      reason = r.spawnError !== undefined ? `could not start: ${r.spawnError}` : r.timedOut ? 'timed out' : `exited ${r.exitCode ?? r.signal}: ${r.stderr.toString('utf8').trim().split('\n')[0]?.slice(0, 200) ?? ''}`;
      if (attempt < tries) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        wait *= 2;
      }
    }
    this.o.warn(`notifier ${due.notifier} (${notifier.command[0]}) failed ${tries} times for ${due.kind} (${reason}); the build goes on`);
    return { notifier: due.notifier, kind: due.kind, triggers: [...due.triggers], outcome: 'failed', attempts: tries, reason };
  }
}

function plainEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
