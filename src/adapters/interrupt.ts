import { InterruptedError } from '../events/errors.js';

/**
 * Interrupts (SIGINT, SIGTERM) of a controller: the first one kills the process tree of every call
 * running (workers, planners, verification, git; see run-process.ts) and makes every later wait on
 * a call, and every append, throw InterruptedError — so what a killed call left behind is never
 * committed, adopted or recorded, and the command unwinds through its `finally`s (lease released,
 * log closed). The build is then where a SIGKILL would leave it: `longbuild run` resumes it. A
 * second signal exits at once.
 */

let received: 'SIGINT' | 'SIGTERM' | null = null;
const listeners = new Set<() => void>();

/** The signal that interrupted this process, or null. */
export function interruption(): 'SIGINT' | 'SIGTERM' | null {
  return received;
}

/** Throw InterruptedError once an interrupt was received. */
export function throwIfInterrupted(): void {
  if (received !== null) throw new InterruptedError(received);
}

/** Call `fn` when the first interrupt arrives (process runners kill their groups). */
export function onInterrupt(fn: () => void): void {
  listeners.add(fn);
}

/** Install the handlers (the CLI does, at start; a library user may not want them). */
export function installInterruptHandlers(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (received !== null) process.exit(signal === 'SIGINT' ? 130 : 143);
      received = signal;
      for (const fn of listeners) fn();
    });
  }
}

/** Wait `ms`, or less when an interrupt arrives; resolves false when interrupted (a follow loop then ends). */
export function pause(ms: number): Promise<boolean> {
  if (received !== null) return Promise.resolve(false);
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer);
      listeners.delete(wake);
      resolve(false);
    };
    const timer = setTimeout(() => {
      listeners.delete(wake);
      resolve(true);
    }, ms);
    listeners.add(wake);
  });
}
