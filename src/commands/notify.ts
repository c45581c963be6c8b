/**
 * Which notifications are due, from state alone: the outbox's pending triggers
 * grouped by notifier and kind (a burst coalesced into one), each group due once its notifier was
 * last told of that kind at least `minIntervalSeconds` ago (default 60).
 */
import type { NotifyKind } from '../events/catalogue.js';
import type { BuildState } from '../projections/build-state.js';

export interface DueNotification {
  readonly notifier: number;
  readonly kind: NotifyKind;
  /** The trigger events' positions, oldest first. */
  readonly triggers: readonly number[];
}

export const DEFAULT_MIN_INTERVAL_SECONDS = 60;

/**
 * `exclude`: triggers (`notifier:kind:position`) already handed to a notifier and not recorded yet;
 * `started`: when this run last handed each `notifier:kind` a notification (ms), for the interval.
 */
export function dueNotifications(state: BuildState, nowMs: number, exclude: ReadonlySet<string> = new Set(), started: ReadonlyMap<string, number> = new Map()): DueNotification[] {
  const notifiers = state.build?.settings.notify ?? [];
  const groups = new Map<string, { notifier: number; kind: NotifyKind; triggers: number[] }>();
  for (const p of state.notify?.pending ?? []) {
    if (exclude.has(`${p.notifier}:${p.kind}:${p.position}`)) continue;
    const key = `${p.notifier}:${p.kind}`;
    const g = groups.get(key) ?? { notifier: p.notifier, kind: p.kind, triggers: [] };
    g.triggers.push(p.position);
    groups.set(key, g);
  }
  return [...groups.entries()].filter(([key, g]) => {
    const recorded = state.notify?.last[key];
    const last = Math.max(recorded === undefined ? -Infinity : Date.parse(recorded), started.get(key) ?? -Infinity);
    const interval = (notifiers[g.notifier]?.minIntervalSeconds ?? DEFAULT_MIN_INTERVAL_SECONDS) * 1000;
    return nowMs - last >= interval;
  }).map(([, g]) => g).sort((a, b) => a.triggers[0]! - b.triggers[0]!);
}
