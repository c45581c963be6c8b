/**
 * Process runner: argv only (never a shell), an explicit environment, a timeout, and the
 * whole process group killed and reaped. stdout/stderr are captured as exact bytes.
 *
 * Public API
 *   runProcess({ argv, cwd, env, input?, timeoutMs }) -> Promise<ProcessResult>
 *     - spawns argv[0] with argv[1..] in a NEW process group (detached), env is passed verbatim
 *       (nothing inherited from process.env; include PATH yourself if argv[0] is a bare name);
 *     - on timeout the whole group gets SIGKILL (timedOut: true);
 *     - when the main process exits, any process still alive in its group is a leftover:
 *       `leftover: true`, and the group is killed and waited for (bounded) before returning;
 *     - a spawn failure (e.g. executable not found) is a result with exitCode null and the
 *       error text in `spawnError`, not an exception;
 *     - after an interrupt (interrupt.ts) every running group is killed, and a call that was
 *       running or is started after it throws InterruptedError instead of returning a result.
 *   parseTrustedCommand(value) -> string[]   strict parse of a trusted verification command.
 *
 * Why /proc: orphans of the group are re-parented to PID 1, which does not always reap them
 * (containers). `kill(-pgid, 0)` succeeds for zombies, so liveness is read from /proc where it
 * exists (state != Z) and falls back to `kill(-pgid, 0)` elsewhere.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { execa as Execa } from 'execa';
import { ValidationError } from '../../events/errors.js';
import { onInterrupt, throwIfInterrupted } from '../interrupt.js';

export interface RunProcessOptions {
  readonly argv: readonly string[];
  readonly cwd: string;
  /** The complete environment of the child. Nothing else is added. */
  readonly env: Readonly<Record<string, string>>;
  /** Bytes written to stdin; without it stdin is /dev/null. */
  readonly input?: string | Uint8Array;
  readonly timeoutMs: number;
  /** Capture a fourth pipe (fd 3) as `report` (the sandbox's init reports on it). */
  readonly reportFd?: boolean;
}

export interface ProcessResult {
  readonly argv: readonly string[];
  /** null when killed by a signal or when the spawn failed. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  readonly durationMs: number;
  readonly timedOut: boolean;
  /** A process of the group outlived the main process (it was killed). */
  readonly leftover: boolean;
  /** Set when the process could not be started at all. */
  readonly spawnError?: string;
  /** The bytes written to fd 3 (only with `reportFd`). */
  readonly report?: Buffer;
}

/**
 * execa, loaded on the first spawn: its ~100 modules cost a CLI process ~0.25 s at start, and most
 * commands (status, show, log, verify…) never spawn anything.
 */
let execaModule: Promise<typeof Execa> | null = null;
const loadExeca = (): Promise<typeof Execa> => (execaModule ??= import('execa').then((m) => m.execa));

/** Time we wait for a SIGKILLed group to disappear before giving up (reported, not thrown). */
const REAP_WAIT_MS = 2_000;

export async function runProcess(opts: RunProcessOptions): Promise<ProcessResult> {
  const argv = validateArgv(opts.argv);
  if (!Number.isInteger(opts.timeoutMs) || opts.timeoutMs <= 0) {
    throw new ValidationError(`timeoutMs must be a positive integer, got ${String(opts.timeoutMs)}`, 'R-26');
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env)) {
    if (typeof v !== 'string') throw new ValidationError(`environment variable ${k} must be a string`, 'R-26');
    env[k] = v;
  }
  const [file, ...args] = argv as [string, ...string[]];
  const execa = await loadExeca();
  throwIfInterrupted();
  const started = performance.now();
  let timedOut = false;
  let leftover = false;

  const child = execa(file, args, {
    cwd: opts.cwd,
    env,
    extendEnv: false,
    shell: false,
    detached: true,
    // We own the kill logic (group-wide); execa's own timeout would only kill the leader.
    cleanup: true,
    reject: false,
    encoding: 'buffer',
    stripFinalNewline: false,
    ...(opts.input === undefined ? {} : { input: typeof opts.input === 'string' ? Buffer.from(opts.input) : opts.input }),
    stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', ...(opts.reportFd === true ? ['pipe' as const] : [])],
    maxBuffer: 256 * 1024 * 1024,
  });
  const pid = child.pid;
  if (pid !== undefined) liveGroups.add(pid);

  const timer = setTimeout(() => {
    timedOut = true;
    if (pid !== undefined) killGroup(pid);
  }, opts.timeoutMs);

  // 'exit' fires when the leader has exited, before its pipes close: a grandchild holding
  // stdout open would otherwise keep us waiting. Detect and kill leftovers right here.
  if (pid !== undefined) {
    child.once('exit', () => {
      clearTimeout(timer);
      if (groupAlive(pid)) {
        leftover = true;
        killGroup(pid);
      }
    });
  }

  const result = await child;
  clearTimeout(timer);
  if (pid !== undefined) {
    // Anything still alive (e.g. it escaped between checks) is a leftover too.
    if (groupAlive(pid)) {
      leftover = true;
      killGroup(pid);
    }
    await waitGroupGone(pid, REAP_WAIT_MS);
    liveGroups.delete(pid);
  }
  // Interrupted meanwhile: the group was killed for it, and its result must not be acted on.
  throwIfInterrupted();
  const durationMs = performance.now() - started;
  const stdout = toBuffer(result.stdout);
  const stderr = toBuffer(result.stderr);
  const exitCode = typeof result.exitCode === 'number' ? result.exitCode : null;
  const signal = typeof result.signal === 'string' ? result.signal : null;
  const spawnFailed = pid === undefined || (result.failed && exitCode === null && signal === null && !timedOut);
  return {
    argv,
    exitCode,
    signal,
    stdout,
    stderr,
    durationMs,
    timedOut,
    leftover,
    ...(spawnFailed ? { spawnError: result.shortMessage ?? 'spawn failed' } : {}),
    ...(opts.reportFd === true ? { report: toBuffer((result.stdio as unknown[])[3]) } : {}),
  };
}

function toBuffer(v: unknown): Buffer {
  if (v === undefined || v === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(v)) return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'string') return Buffer.from(v);
  throw new Error(`unexpected stream output type ${typeof v}`);
}

function validateArgv(argv: unknown): string[] {
  if (!Array.isArray(argv) || argv.length === 0) {
    throw new ValidationError('argv must be a non-empty array of strings (no shell command lines)', 'R-26');
  }
  argv.forEach((part: unknown, i) => {
    if (typeof part !== 'string') throw new ValidationError(`argv[${i}] must be a string, got ${part === null ? 'null' : typeof part}`, 'R-26');
    if (part.includes('\0')) throw new ValidationError(`argv[${i}] contains a NUL byte`, 'R-26');
  });
  if ((argv[0] as string).length === 0) throw new ValidationError('argv[0] (the executable) must not be empty', 'R-26');
  return [...(argv as string[])];
}

/** Process groups of calls still running (their leaders are the group ids). */
const liveGroups = new Set<number>();

// An interrupt kills every running call's whole group at once (see interrupt.ts).
onInterrupt(() => {
  for (const pgid of liveGroups) killGroup(pgid);
});

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Live (non-zombie) members of process group `pgid`. */
function groupMembers(pgid: number): number[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const out: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'latin1');
    } catch {
      continue; // raced with exit
    }
    // Format: pid (comm) state ppid pgrp ... ; comm may contain spaces and parens.
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    const state = fields[0];
    const pgrp = Number(fields[2]);
    if (pgrp === pgid && state !== 'Z' && state !== 'X') out.push(Number(name));
  }
  return out;
}

function groupAlive(pgid: number): boolean {
  // Fast path: no process at all (not even a zombie) in the group. Scanning /proc costs ms.
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  const members = groupMembers(pgid);
  return members === null ? true : members.length > 0;
}

async function waitGroupGone(pgid: number, maxMs: number): Promise<boolean> {
  const deadline = Date.now() + maxMs;
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) return false;
    killGroup(pgid);
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** A bare executable name resolved through PATH: no slash, no white space, not `.`/`..`. */
const BARE_NAME = /^[A-Za-z0-9_+][A-Za-z0-9._+-]*$/;

/**
 * Strictly parse one trusted verification command: a non-empty array of non-empty strings
 * without NUL bytes, whose executable is a bare name (found through PATH) or an absolute path
 * without `.`/`..` segments. Never splits a string: `"node --test"` as one element is refused.
 */
export function parseTrustedCommand(value: unknown): string[] {
  const fail = (msg: string): never => {
    throw new ValidationError(`invalid trusted verification command ${describe(value)}: ${msg} (R-26: a command is an argv array, no shell)`, 'R-26');
  };
  if (!Array.isArray(value)) return fail('must be an array of strings like ["node", "--test"]');
  if (value.length === 0) return fail('must not be empty');
  value.forEach((part: unknown, i) => {
    if (typeof part !== 'string') fail(`element ${i} must be a string`);
    else if (part.length === 0) fail(`element ${i} must not be empty`);
    else if (part.includes('\0')) fail(`element ${i} contains a NUL byte`);
  });
  const exe = value[0] as string;
  if (exe.startsWith('/')) {
    const segs = exe.split('/').slice(1);
    if (segs.some((s) => s === '' || s === '.' || s === '..') || /[\s]/.test(exe)) {
      fail(`executable '${exe}' must be a normalized absolute path (no empty, '.' or '..' segments, no white space)`);
    }
  } else if (!BARE_NAME.test(exe)) {
    fail(`executable '${exe}' must be a bare name (letters, digits, . _ + -; no slash or white space) or an absolute path`);
  }
  return [...(value as string[])];
}

function describe(value: unknown): string {
  try {
    const s = JSON.stringify(value);
    return s === undefined ? String(value) : s.length > 120 ? s.slice(0, 117) + '...' : s;
  } catch {
    return String(value);
  }
}
