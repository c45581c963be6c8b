import { appendFileSync, writeSync } from 'node:fs';
import { StorageError } from '../events/errors.js';

/**
 * Fault injection (docs/cli.md): `LONGBUILD_CRASH_AT=POINT:K` kills this process with a real SIGKILL
 * the K-th time it reaches interruption point POINT. `LONGBUILD_POINTS_FILE=PATH` records every
 * point reached (one per line, then a tab and the calls in flight there when there are any), which
 * is how `fuzz` enumerates them from a clean run.
 * `LONGBUILD_PAUSE_AT=POINT:K:MS` freezes the whole process (event loop included, like SIGSTOP or
 * a partition: no lease renewal) for MS ms there, after printing `longbuild: paused at POINT` on
 * stderr — how the failover tests catch a controller at a known point.
 * `LONGBUILD_FAULT=KIND@POINT:K` injects another fault kind there: `kill` (as
 * LONGBUILD_CRASH_AT), `enospc` / `eio` (the write at that point fails: an error with that errno,
 * as a full or failing disk raises it), `hang` (the process stops there, event loop and all, until
 * it is killed: an effect that hangs past its timeout).
 */
export const FAULT_KINDS = ['kill', 'enospc', 'eio', 'hang'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Parse `KIND@POINT:K`, or null. */
export function parseFault(spec: string): { kind: FaultKind; point: string; k: number } | null {
  const m = /^([a-z]+)@(.+):(\d+)$/.exec(spec);
  if (!m || !(FAULT_KINDS as readonly string[]).includes(m[1]!) || Number(m[3]) < 1) return null;
  return { kind: m[1] as FaultKind, point: m[2]!, k: Number(m[3]) };
}
export interface FaultInjector {
  reach(point: string): void;
  /**
   * What the host is doing, for the points file: the calls in flight when a point is reached
   * (several workers), so the fuzzer can choose points by the combination in flight.
   */
  describeWith?(context: () => string): void;
}

export const noFaults: FaultInjector = { reach() {} };

export function faultsFromEnv(env: NodeJS.ProcessEnv = process.env): FaultInjector {
  const spec = env.LONGBUILD_CRASH_AT;
  const pointsFile = env.LONGBUILD_POINTS_FILE;
  const pause = parsePause(env.LONGBUILD_PAUSE_AT);
  const fault = env.LONGBUILD_FAULT ? parseFault(env.LONGBUILD_FAULT) : null;
  if (env.LONGBUILD_FAULT && fault === null) throw new Error(`LONGBUILD_FAULT must be KIND@POINT:K (KIND one of ${FAULT_KINDS.join(', ')}), got '${env.LONGBUILD_FAULT}'`);
  if (!spec && !pointsFile && !pause && !fault) return noFaults;
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
  let context: (() => string) | null = null;
  return {
    describeWith(c: () => string) {
      context = c;
    },
    reach(point: string) {
      const n = (counts.get(point) ?? 0) + 1;
      counts.set(point, n);
      // The calls in flight, after a tab, when there are any (the points file stays one point a line).
      if (pointsFile) {
        const flight = context?.() ?? '';
        appendFileSync(pointsFile, flight === '' ? `${point}\n` : `${point}\t${flight}\n`);
      }
      if (target && target.point === point && target.k === n) {
        process.kill(process.pid, 'SIGKILL');
      }
      if (fault && fault.point === point && fault.k === n) inject(fault.kind, point);
      if (pause && pause.point === point && pause.k === n) {
        writeSync(2, `longbuild: paused at ${point}:${n} for ${pause.ms} ms (pid ${process.pid})\n`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause.ms);
      }
    },
  };
}

function inject(kind: FaultKind, point: string): void {
  switch (kind) {
    case 'kill':
      process.kill(process.pid, 'SIGKILL');
      return;
    case 'hang':
      writeSync(2, `longbuild: hanging at ${point} (injected; pid ${process.pid})\n`);
      for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
    // What the storage guard makes of a full or failing disk at that write (storage-guard.ts).
    case 'enospc':
      throw new StorageError(`the write at ${point}`, 'full', 'ENOSPC: no space left on device (injected)');
    case 'eio':
      throw new StorageError(`the write at ${point}`, 'io', 'EIO: i/o error (injected)');
  }
}

function parsePause(spec: string | undefined): { point: string; k: number; ms: number } | null {
  if (!spec) return null;
  const m = /^(.+):(\d+):(\d+)$/.exec(spec);
  if (!m || Number(m[2]) < 1) throw new Error(`LONGBUILD_PAUSE_AT must be POINT:K:MS with K ≥ 1, got '${spec}'`);
  return { point: m[1]!, k: Number(m[2]), ms: Number(m[3]) };
}
