import { appendFileSync, writeSync } from 'node:fs';

/**
 * Fault injection (docs/cli.md): `LONGBUILD_CRASH_AT=POINT:K` kills this process with a real SIGKILL
 * the K-th time it reaches interruption point POINT. `LONGBUILD_POINTS_FILE=PATH` records every
 * point reached (one per line), which is how `fuzz` enumerates them from a clean run.
 * `LONGBUILD_PAUSE_AT=POINT:K:MS` freezes the whole process (event loop included, like SIGSTOP or
 * a partition: no lease renewal) for MS ms there, after printing `longbuild: paused at POINT` on
 * stderr — how the failover tests catch a controller at a known point (issue 8).
 */
export interface FaultInjector {
  reach(point: string): void;
}

export const noFaults: FaultInjector = { reach() {} };

export function faultsFromEnv(env: NodeJS.ProcessEnv = process.env): FaultInjector {
  const spec = env.LONGBUILD_CRASH_AT;
  const pointsFile = env.LONGBUILD_POINTS_FILE;
  const pause = parsePause(env.LONGBUILD_PAUSE_AT);
  if (!spec && !pointsFile && !pause) return noFaults;
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
      if (pause && pause.point === point && pause.k === n) {
        writeSync(2, `longbuild: paused at ${point}:${n} for ${pause.ms} ms (pid ${process.pid})\n`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause.ms);
      }
    },
  };
}

function parsePause(spec: string | undefined): { point: string; k: number; ms: number } | null {
  if (!spec) return null;
  const m = /^(.+):(\d+):(\d+)$/.exec(spec);
  if (!m || Number(m[2]) < 1) throw new Error(`LONGBUILD_PAUSE_AT must be POINT:K:MS with K ≥ 1, got '${spec}'`);
  return { point: m[1]!, k: Number(m[2]), ms: Number(m[3]) };
}
