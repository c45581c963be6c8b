import { appendFileSync } from 'node:fs';

/**
 * Fault injection (CLI.md): `LONGBUILD_CRASH_AT=POINT:K` kills this process with a real SIGKILL
 * the K-th time it reaches interruption point POINT. `LONGBUILD_POINTS_FILE=PATH` records every
 * point reached (one per line), which is how `fuzz` enumerates them from a clean run.
 */
export interface FaultInjector {
  reach(point: string): void;
}

export const noFaults: FaultInjector = { reach() {} };

export function faultsFromEnv(env: NodeJS.ProcessEnv = process.env): FaultInjector {
  const spec = env.LONGBUILD_CRASH_AT;
  const pointsFile = env.LONGBUILD_POINTS_FILE;
  if (!spec && !pointsFile) return noFaults;
  let target: { point: string; k: number } | null = null;
  if (spec) {
    const idx = spec.lastIndexOf(':');
    const k = Number(spec.slice(idx + 1));
    if (idx <= 0 || !Number.isInteger(k) || k < 1) {
      throw new Error(`LONGBUILD_CRASH_AT must be POINT:K with K ≥ 1, got '${spec}'`);
    }
    target = { point: spec.slice(0, idx), k };
  }
  const counts = new Map<string, number>();
  return {
    reach(point: string) {
      const n = (counts.get(point) ?? 0) + 1;
      counts.set(point, n);
      if (pointsFile) appendFileSync(pointsFile, `${point}\n`);
      if (target && target.point === point && target.k === n) {
        process.kill(process.pid, 'SIGKILL');
      }
    },
  };
}
