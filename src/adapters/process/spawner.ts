/**
 * Starting longbuild's own short-lived commands (git) through small helper processes
 * (spawner.child.js) instead of from the controller itself. On a small VM a fork of
 * the controller costs 10–25 ms of its thread (the kernel copies its page tables; the controller
 * holds the SQLite log, the fold and the modules), about the time of a whole git call, and a
 * build makes a dozen git calls per node: measured, the controller's thread spent half of an
 * 8-worker build inside `spawn`. A helper of ~40 MB forks in about half the time, and two of them
 * fork in parallel while the controller goes on deciding.
 *
 * Same contract as a direct spawn: argv (no shell), exactly the given environment, the process's
 * own group (SIGKILLed on a timeout, or by the controller on an interrupt: every pid is reported
 * to it), exact stdout/stderr bytes. Helpers start once the controller's own forks have cost
 * about what a helper costs (FORK_BUDGET_MS), are reused, and keep the controller's event loop
 * alive only while a call is pending. A helper is a Node.js start-up
 * (~50–70 ms here) before it can take a call: until one says it is ready, calls are spawned
 * directly — the controller is small then, and its first git call (at every `run`, `step` and
 * fuzz case) does not wait for a helper to boot. A helper that cannot start, or
 * `LONGBUILD_SPAWNER=off`, means direct spawns; a helper that dies fails the calls it was running
 * (their outcome is unknown: the step stops, and resuming settles it) and is replaced.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { codeFile } from '../package-files.js';

export interface SpawnRequest {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly input?: string | Uint8Array;
  readonly timeoutMs: number;
}

export interface SpawnResult {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly timedOut: boolean;
  readonly spawnError?: string;
}

interface Pending {
  readonly resolve: (r: SpawnResult) => void;
  pid?: number;
}

const HELPER = codeFile('adapters', 'process', 'spawner.child.js');

class Helper {
  readonly pending = new Map<number, Pending>();
  private readonly child: ChildProcess;
  dead = false;
  /** The helper has said it listens (its first line); calls go to it only then. */
  ready = false;

  constructor(onPid: (pid: number, running: boolean) => void) {
    this.child = spawn(process.execPath, ['--max-old-space-size=64', HELPER], { stdio: ['pipe', 'pipe', 'ignore'], env: {} });
    this.child.on('error', () => this.die());
    this.child.on('exit', () => this.die());
    this.child.stdin!.on('error', () => this.die());
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      let m: { ready?: boolean; id: number; pid?: number; code?: number | null; signal?: string | null; stdout?: string; stderr?: string; timedOut?: boolean; spawnError?: string };
      try {
        m = JSON.parse(line) as typeof m;
      } catch {
        return;
      }
      if (m.ready === true) {
        this.ready = true;
        return;
      }
      const p = this.pending.get(m.id);
      if (p === undefined) return;
      if (m.pid !== undefined && m.code === undefined) {
        p.pid = m.pid;
        onPid(m.pid, true);
        return;
      }
      this.pending.delete(m.id);
      if (p.pid !== undefined) onPid(p.pid, false);
      this.idle();
      p.resolve({
        code: m.code ?? null, signal: m.signal ?? null, stdout: Buffer.from(m.stdout ?? '', 'base64'), stderr: Buffer.from(m.stderr ?? '', 'base64'),
        timedOut: m.timedOut === true, ...(m.spawnError !== undefined ? { spawnError: m.spawnError } : {}),
      });
    });
    this.idle();
  }

  send(id: number, r: SpawnRequest, pending: Pending): void {
    this.pending.set(id, pending);
    this.busy();
    const input = r.input === undefined ? undefined : Buffer.from(r.input).toString('base64');
    this.child.stdin!.write(`${JSON.stringify({ id, argv: r.argv, cwd: r.cwd, env: r.env, timeoutMs: r.timeoutMs, ...(input !== undefined ? { input } : {}) })}\n`);
  }

  /** Keep the controller alive only while a call is pending. */
  private busy(): void {
    this.child.ref();
    (this.child.stdout as unknown as { ref?: () => void }).ref?.();
  }

  private idle(): void {
    if (this.pending.size > 0) return;
    this.child.unref();
    (this.child.stdout as unknown as { unref?: () => void }).unref?.();
    (this.child.stdin as unknown as { unref?: () => void }).unref?.();
  }

  private die(): void {
    if (this.dead) return;
    this.dead = true;
    for (const [, p] of this.pending) {
      p.resolve({ code: null, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, spawnError: 'the command helper process ended while the command ran; its outcome is unknown' });
    }
    this.pending.clear();
  }
}

export interface SpawnerOptions {
  /**
   * Start helpers only once forks made by this process have taken this many ms of its thread
   * (default FORK_BUDGET_MS): a helper is a Node.js start-up, worth it only to a process whose
   * forks cost that much. 0: start one at the first call.
   */
  readonly forkBudgetMs?: number;
}

/**
 * A helper costs about one Node.js start-up (~50–70 ms of CPU here) before it saves anything, so
 * the controller forks by itself until its own forks have cost that much: a short `run` (a fuzz
 * case, a `step`) never starts one, a large controller, whose forks take 10–25 ms each, starts
 * them after a few calls (decision 0017).
 */
export const FORK_BUDGET_MS = 60;

/** A pool of helpers; `run` sends each call to the least busy one. */
export class Spawner {
  private helpers: Helper[] = [];
  private next = 1;
  private readonly running = new Set<number>();
  /** Time this process's own forks have taken (its thread is blocked in `spawn`). */
  private forkMs = 0;
  private readonly forkBudgetMs: number;

  constructor(private readonly size: number, options: SpawnerOptions = {}) {
    this.forkBudgetMs = options.forkBudgetMs ?? FORK_BUDGET_MS;
  }

  /** ms this process spent forking calls itself (for tests and benchmarks). */
  get ownForkMs(): number {
    return this.forkMs;
  }

  /** The process groups of the calls running now (the controller kills them on an interrupt). */
  get groups(): ReadonlySet<number> {
    return this.running;
  }

  run(r: SpawnRequest): Promise<SpawnResult> {
    return new Promise((resolve) => {
      const helper = this.pick();
      if (helper === null) {
        const started = performance.now();
        directSpawn(r, this.running).then(resolve);
        this.forkMs += performance.now() - started;
        // After this call's own fork: starting a helper is a fork too (~5 ms of this thread).
        if (this.forkMs >= this.forkBudgetMs) this.startHelper();
        return;
      }
      helper.send(this.next++, r, { resolve });
      this.startHelper();
    });
  }

  /** The least busy ready helper, or null (none is ready yet): spawn directly. */
  private pick(): Helper | null {
    this.helpers = this.helpers.filter((h) => !h.dead);
    const ready = this.helpers.filter((h) => h.ready);
    return ready.length === 0 ? null : ready.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
  }

  /** One more helper while the pool is short of its size (one per call, so their forks spread out). */
  private startHelper(): void {
    if (this.helpers.length >= this.size) return;
    try {
      this.helpers.push(new Helper((pid, running) => (running ? this.running.add(pid) : this.running.delete(pid))));
    } catch {
      // cannot start one: calls are spawned directly
    }
  }
}

/** The same call, spawned by this process itself. */
export function directSpawn(r: SpawnRequest, running: Set<number>): Promise<SpawnResult> {
  return new Promise((resolve) => {
    const child = spawn(r.argv[0]!, r.argv.slice(1), { cwd: r.cwd, env: { ...r.env }, detached: true, stdio: [r.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    let spawnError: string | undefined;
    const pid = child.pid;
    if (pid !== undefined) running.add(pid);
    const timer = setTimeout(() => {
      timedOut = true;
      if (pid !== undefined) killGroup(pid);
    }, r.timeoutMs);
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      spawnError = e.message;
    });
    if (r.input !== undefined) {
      child.stdin!.on('error', () => undefined); // the command may exit before reading it all
      child.stdin!.end(r.input);
    }
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (pid !== undefined) running.delete(pid);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), timedOut, ...(spawnError !== undefined ? { spawnError } : {}) });
    });
  });
}

export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is gone already
  }
}
