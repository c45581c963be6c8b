/** The only source of time the controller has: injected, never read in the pure core. */
export interface Clock {
  /** ISO-8601 time to record for the event at `position`. */
  now(position: number): string;
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => new Date().toISOString() };

/**
 * A logical clock for reproducible builds (blueprint runs, fuzzing): the time of the event at
 * position p is `base + p seconds`, so a resumed build records the same times as a clean one.
 */
export function logicalClock(baseIso = '2026-01-01T00:00:00.000Z'): Clock {
  const base = Date.parse(baseIso);
  return { now: (position) => new Date(base + position * 1000).toISOString() };
}
