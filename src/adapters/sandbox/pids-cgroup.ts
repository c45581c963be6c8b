/**
 * A process cap per sandboxed call: a pids cgroup of its own, made under the
 * controller's cgroup, with `pids.max` set, which the sandbox's first process joins before it
 * execs bubblewrap — so every process and thread of the call counts against it, and a fork beyond
 * it fails with EAGAIN. `RLIMIT_NPROC` would not do: the kernel does not apply it to uid 0, and
 * it counts a user's processes machine-wide. cgroup v1 (a `pids` hierarchy) and v2 (a unified
 * hierarchy whose controllers include `pids`) are both found; where neither can be written the
 * cap is not enforced, and the caller says so once.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Processes (tasks: a thread counts) of one call when its limits name none. */
export const DEFAULT_PROCESSES = 2048;

let base: string | null | undefined;
let made = 0;

/** The directory new call cgroups are made in, or null when there is no writable pids cgroup here. */
export function pidsCgroupBase(): string | null {
  if (base !== undefined) return base;
  base = null;
  let own: string;
  try {
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return base;
  }
  const v1 = /^\d+:pids:(.*)$/m.exec(own)?.[1];
  const v2 = /^0::(.*)$/m.exec(own)?.[1];
  const candidates: string[] = [];
  if (v1 !== undefined && existsSync('/sys/fs/cgroup/pids/cgroup.procs')) candidates.push(join('/sys/fs/cgroup/pids', v1));
  if (v2 !== undefined && controllersOf('/sys/fs/cgroup').includes('pids')) candidates.push(join('/sys/fs/cgroup', v2));
  for (const c of candidates) {
    const probe = join(c, `longbuild-probe-${process.pid}`);
    try {
      mkdirSync(probe);
      const usable = existsSync(join(probe, 'pids.max'));
      rmdirSync(probe);
      if (usable) {
        base = c;
        break;
      }
    } catch {
      /* not writable here: the next hierarchy, or none */
    }
  }
  if (base !== null) sweepStale(base);
  return base;
}

function controllersOf(dir: string): string[] {
  try {
    return readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  } catch {
    return [];
  }
}

/** Call cgroups left by a controller that was killed (its pid no longer runs), emptied by then: removed. */
function sweepStale(dir: string): void {
  for (const name of readdirSync(dir)) {
    const m = /^longbuild-(\d+)-\d+$/.exec(name);
    if (m === null || existsSync(`/proc/${m[1]}`)) continue;
    try {
      rmdirSync(join(dir, name));
    } catch {
      /* still has processes: left for a later sweep */
    }
  }
}

export interface CallCgroup {
  /** The argv that joins the cgroup and then execs `argv`. */
  wrap(argv: readonly string[]): string[];
  /** Remove the cgroup once every process of the call has ended. */
  remove(): Promise<void>;
}

/** A cgroup for one call capped at `max` tasks, or null when there is no pids cgroup to make it in. */
export function callCgroup(max: number): CallCgroup | null {
  const dir0 = pidsCgroupBase();
  if (dir0 === null) return null;
  const dir = join(dir0, `longbuild-${process.pid}-${++made}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'pids.max'), String(max));
  return {
    // The shell joins the cgroup and execs: bubblewrap and everything under it start inside.
    wrap: (argv) => ['/bin/sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, ...argv],
    async remove() {
      // The sandbox's init killed the rest as it ended; the kernel may take a moment to reap them.
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(dir);
          return;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    },
  };
}
