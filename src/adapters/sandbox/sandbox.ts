/**
 * The sandbox for every untrusted process: planner and worker commands, and the trusted
 * verification commands (which run untrusted code under test). Implemented with bubblewrap.
 *
 * Each call gets fresh user, mount, PID and IPC namespaces (and a network namespace unless the
 * role is allowed the network): the root filesystem read-only, the build directory, the
 * repository and the cache hidden under empty tmpfs mounts, a private /tmp, /var/tmp and /run,
 * every capability dropped, and only the call's own space bound back (read-write for a worker's
 * clone and a verification workspace, read-only for a planner's export).
 *
 * PID 1 of the sandbox is longbuild's own init (`INIT_SCRIPT`, run by a private copy of /bin/sh
 * that is execute-only, so the kernel marks it non-dumpable: nothing in the sandbox can ptrace
 * it, read its memory or open its file descriptors). It runs the command, and when the command
 * exits it counts every other live process in the namespace, reports `exit=<rc> leftover=<n>` on
 * a pipe only it holds (fd 3), and exits; the kernel then kills whatever is left, `setsid` or
 * not. A missing, repeated or malformed report counts as a leftover: the call cannot pass.
 * `--die-with-parent` ends the whole sandbox when the host process dies.
 */
import { callCgroup, DEFAULT_PROCESSES } from './pids-cgroup.js';
import { accessSync, chmodSync, constants, copyFileSync, existsSync, mkdirSync, readdirSync, realpathSync, renameSync, statSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import { execFileSync } from 'node:child_process';
import { ValidationError } from '../../events/errors.js';
import { DEFAULT_TMPFS_MB } from './settings.js';
import { runProcess, type ProcessResult, type RunProcessOptions } from '../process/run-process.js';

export type SandboxMode = 'bwrap' | 'off';

/** What one sandboxed call may see. Paths are host paths, bound at the same place inside. */
export interface SandboxPolicy {
  readonly mode: SandboxMode;
  /** Directories hidden under an empty tmpfs (the repository, the build directory, the cache). */
  readonly hide: readonly string[];
  /**
   * The user's home directories, hidden under an empty, writable tmpfs too (every role's private
   * home), in which the trusted PATH's directories and the files a command names stay visible
   * read-only (a Node.js installed under the home).
   */
  readonly home?: readonly string[];
  /**
   * What no sandboxed process may read, whatever else is bound (signing keys, longbuild's config
   * directory with its heads copies): mounted over after every bind, so nothing re-exposes them.
   */
  readonly secret?: readonly string[];
  /** Paths the config binds read-only on purpose (`sandbox.expose`); a secret inside stays hidden. */
  readonly expose?: readonly string[];
  /** The call's network: shared with the host (agents call model APIs) or none at all. */
  readonly network: boolean;
  /** The host path of the sandbox's init binary (see ensureSandboxInit). */
  readonly initPath: string;
  /** The bubblewrap executable. */
  readonly bwrap: string;
  /** Resource limits of every process of the call, applied by `prlimit` (below); `tmpfsMb` sizes its private mounts. */
  readonly limits?: { readonly memoryMb?: number; readonly cpuSeconds?: number; readonly tmpfsMb?: number; readonly processes?: number };
  /** The prlimit executable (util-linux), when there are limits. */
  readonly prlimit?: string;
}

/** The argv that runs `argv` under the policy's limits (prlimit sets them, then execs it). */
function limited(policy: SandboxPolicy, argv: readonly string[]): string[] {
  const l = policy.limits;
  if (l === undefined || (l.memoryMb === undefined && l.cpuSeconds === undefined)) return [...argv];
  if (policy.prlimit === undefined) throw new ValidationError(PRLIMIT_MISSING, 'R-30');
  return [
    policy.prlimit, ...(l.memoryMb !== undefined ? [`--as=${l.memoryMb * 1024 * 1024}`] : []), ...(l.cpuSeconds !== undefined ? [`--cpu=${l.cpuSeconds}`] : []), '--', ...argv,
  ];
}

/** The one-line refusal when a build caps processes and no pids cgroup can be made. */
export const PIDS_MISSING = 'this build caps the processes of a call (sandbox.limits.*.processes), which needs a writable pids cgroup (cgroup v1 pids or v2 with the pids controller), and there is none here: run as root or with a delegated cgroup, or remove the cap from the config';

let uncappedSaid = false;
/** Said once per process: the default cap cannot be enforced on this machine. */
function noticeUncapped(): void {
  if (uncappedSaid) return;
  uncappedSaid = true;
  process.stderr.write('longbuild: no writable pids cgroup here: sandboxed calls run without a process cap (see decision 0038)\n');
}

/** The one-line refusal when a build has limits and prlimit is missing. */
export const PRLIMIT_MISSING = 'this build has resource limits (sandbox.limits), applied with prlimit, which is not installed: install util-linux (Debian/Ubuntu: apt-get install util-linux) or remove the limits from the config';

/** The prlimit binary on PATH, or null. */
export function findPrlimit(env: NodeJS.ProcessEnv = process.env): string | null {
  return whichOnPath('prlimit', env.PATH ?? '/usr/bin:/bin');
}

export interface SandboxedRun extends Omit<RunProcessOptions, 'argv'> {
  readonly argv: readonly string[];
  /** Bound read-write (a worker's clone, a verification workspace). */
  readonly rw?: readonly string[];
  /** Bound read-only (a planner's export). */
  readonly ro?: readonly string[];
  /** Host directories bound at another path in the sandbox (the build's package cache, R-57); ignored when the sandbox is off. */
  readonly mounts?: readonly { readonly src: string; readonly dest: string; readonly rw: boolean }[];
}

/** In-sandbox PID 1: run the command, count survivors, report on fd 3 (only this shell holds it). */
export const INIT_SCRIPT = [
  '"$@" 3>&-',
  'rc=$?',
  'n=0',
  'for d in /proc/[0-9]*; do',
  '  p=${d#/proc/}',
  '  [ "$p" = 1 ] && continue',
  '  s=""',
  '  read -r s < "$d/stat" 2>/dev/null || continue',
  '  case "$s" in *") Z "*|*") X "*|"") continue;; esac',
  '  n=$((n+1))',
  'done',
  'echo "longbuild-sandbox exit=$rc leftover=$n" >&3',
  'kill -9 -1 2>/dev/null',
  'exit $rc',
].join('\n');

/** What every sandbox mounts privately (empty tmpfs), whatever the host has there. */
const PRIVATE_MOUNTS = ['/tmp', '/var/tmp', '/run'];

const REPORT = /^longbuild-sandbox exit=(\d+) leftover=(\d+)\n$/;

/** The bubblewrap binary to use: LONGBUILD_BWRAP, else `bwrap` on PATH; null when not installed. */
export function findBwrap(env: NodeJS.ProcessEnv = process.env): string | null {
  const explicit = env.LONGBUILD_BWRAP;
  if (explicit !== undefined && explicit !== '') return isExecutable(explicit) ? explicit : null;
  return whichOnPath('bwrap', env.PATH ?? '/usr/bin:/bin');
}

/** bubblewrap's version line (e.g. "bubblewrap 0.8.0"), pinned in the build's environment. */
export function bwrapVersion(bwrap: string): string {
  try {
    return execFileSync(bwrap, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
  } catch (err) {
    throw new ValidationError(`${bwrap} --version failed: ${(err as Error).message.split('\n')[0]}; install bubblewrap (apt-get install bubblewrap) or set "sandbox": "off"`, 'R-30');
  }
}

/** The one-line refusal when a build needs the sandbox and bubblewrap is missing. */
export const BWRAP_MISSING = 'bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap) or set "sandbox": "off" in the config to run planner, worker and verification unsandboxed (recorded in the build\'s first event)';

/**
 * The sandbox's init binary: a private, execute-only copy of /bin/sh under `dir` (created once).
 * Execute-only makes the kernel mark the process non-dumpable, which keeps sandboxed code away
 * from PID 1's memory and descriptors.
 */
export function ensureSandboxInit(dir: string): string {
  const path = join(dir, 'init');
  if (existsSync(path) && (statSync(path).mode & 0o777) === 0o111) return path;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  copyFileSync(realpathSync('/bin/sh'), tmp);
  chmodSync(tmp, 0o111);
  renameSync(tmp, path);
  return path;
}

/** The bubblewrap argv (before the command) for one call under `policy`. */
export function bwrapArgs(policy: SandboxPolicy, run: Pick<SandboxedRun, 'cwd' | 'rw' | 'ro' | 'mounts'>): string[] {
  // Every private tmpfs is sized (unsized, each may take half the machine's memory), and
  // /dev is read-only but for its own sized /dev/shm.
  const size = ['--size', String((policy.limits?.tmpfsMb ?? DEFAULT_TMPFS_MB) * 1024 * 1024)];
  const args = [
    '--die-with-parent', '--new-session', '--as-pid-1',
    '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    ...(policy.network ? [] : ['--unshare-net']),
    '--cap-drop', 'ALL',
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    ...size, '--tmpfs', '/dev/shm',
    '--remount-ro', '/dev',
    '--proc', '/proc',
    ...PRIVATE_MOUNTS.flatMap((m) => [...size, '--tmpfs', m]),
  ];
  for (const h of uniqueRoots([...policy.hide, ...(policy.home ?? [])])) args.push(...size, '--tmpfs', h);
  for (const p of policy.expose ?? []) if (existsSync(p)) args.push('--ro-bind', p, p);
  for (const p of run.ro ?? []) args.push('--ro-bind', p, p);
  for (const p of run.rw ?? []) args.push('--bind', p, p);
  for (const m of run.mounts ?? []) args.push(m.rw ? '--bind' : '--ro-bind', m.src, m.dest);
  // Last, so that no bind above can show them again: a directory under an empty tmpfs, a file under /dev/null.
  for (const p of secretMounts(policy.secret ?? [])) args.push(...(p.dir ? ['--size', '4096', '--tmpfs', p.path, '--remount-ro', p.path] : ['--ro-bind', '/dev/null', p.path]));
  args.push('--ro-bind', policy.initPath, '/run/longbuild-init');
  args.push('--chdir', run.cwd);
  return args;
}

/**
 * Run `argv` in the sandbox (or directly when the policy is `off`). The result is the process
 * runner's, with `leftover` set from the init's report: a process that outlived the command
 * (killed when the sandbox ended), or a report that is missing or forged.
 */
export async function runSandboxed(policy: SandboxPolicy, run: SandboxedRun): Promise<ProcessResult> {
  const { rw, ro, mounts, argv, ...rest } = run;
  const missing = missingExecutable(argv[0] ?? '', run.env.PATH ?? '');
  if (missing !== null) {
    return { argv: [...argv], exitCode: null, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), durationMs: 0, timedOut: false, leftover: false, spawnError: missing };
  }
  const command = limited(policy, argv);
  if (policy.mode === 'off') return { ...(await runProcess({ ...rest, argv: command })), argv: [...argv] };
  // Trusted files the command names (its script, say) stay visible, read-only, even where the
  // sandbox mounts something else (a hidden directory, the private /tmp): the script's directory
  // (its helpers live beside it) unless that is a masked root itself, else the file alone.
  const home = policy.home ?? [];
  const masked = [...policy.hide, ...home, ...PRIVATE_MOUNTS].map((m) => resolve(m));
  const extraRo = new Set<string>();
  /** The node_modules a path lies in, or null. */
  const nodeModulesOf = (p: string): string | null => {
    const at = p.lastIndexOf(`${sep}node_modules${sep}`);
    return at >= 0 ? p.slice(0, at + `${sep}node_modules`.length) : null;
  };
  for (const a of argv) {
    if (!isAbsolute(a) || !existsSync(a) || (run.rw ?? []).some((w) => isInside(a, w))) continue;
    if (masked.some((h) => isInside(a, h))) {
      const dir = dirname(resolve(a));
      // A package's file (node_modules/mocha/bin/mocha.js) loads its package and its siblings: all of node_modules.
      extraRo.add(nodeModulesOf(resolve(a)) ?? (masked.includes(dir) || masked.some((h) => isInside(h, dir)) ? resolve(a) : dir));
    }
    // An installed CLI (node_modules/.bin/NAME) is a symlink into its package, which may load
    // sibling packages (a platform binary): the whole node_modules it lives in stays visible.
    const real = realpathSync(a);
    if (real !== resolve(a) && masked.some((h) => isInside(real, h))) extraRo.add(nodeModulesOf(real) ?? dirname(real));
  }
  // The trusted PATH's directories under a private mount (the host's /tmp) or the hidden home stay
  // visible too, read-only (`node_modules/.bin`: its node_modules; a home's `bin`: what its commands
  // link to, as npm links into `lib/node_modules`); never one the policy hides (the repository, the
  // build) nor the home itself. Secrets are mounted over afterwards in any case.
  const reexposable = [...PRIVATE_MOUNTS, ...home];
  for (const d of (run.env.PATH ?? '').split(delimiter)) {
    if (!isAbsolute(d) || !existsSync(d) || policy.hide.some((h) => isInside(d, h) || isInside(h, d))) continue;
    if (!reexposable.some((m) => isInside(d, m)) || home.some((h) => isInside(h, d))) continue;
    const real = realpathSync(d);
    extraRo.add(nodeModulesOf(`${resolve(d)}${sep}`) ?? resolve(d));
    if (real !== resolve(d) && reexposable.some((m) => isInside(real, m))) extraRo.add(nodeModulesOf(`${real}${sep}`) ?? real);
    if (home.some((h) => isInside(d, h))) for (const target of linkTargets(real)) if (masked.some((h) => isInside(target, h))) extraRo.add(nodeModulesOf(target) ?? dirname(target));
  }
  // Every process and thread of the call counts against its cap (a pids cgroup of its own).
  const cap = policy.limits?.processes;
  const cgroup = callCgroup(cap ?? DEFAULT_PROCESSES);
  if (cgroup === null) {
    if (cap !== undefined) return { argv: [...argv], exitCode: null, signal: null, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), durationMs: 0, timedOut: false, leftover: false, spawnError: PIDS_MISSING };
    noticeUncapped();
  }
  const sandboxed = [policy.bwrap, ...bwrapArgs(policy, { cwd: run.cwd, rw: rw ?? [], ro: [...(ro ?? []), ...extraRo], mounts: mounts ?? [] }), '/run/longbuild-init', '-c', INIT_SCRIPT, 'longbuild-init', ...command];
  let r: ProcessResult;
  try {
    r = await runProcess({ ...rest, argv: cgroup === null ? sandboxed : cgroup.wrap(sandboxed), reportFd: true });
  } finally {
    await cgroup?.remove();
  }
  const report = REPORT.exec(r.report?.toString('latin1') ?? '');
  if (report === null) {
    if (r.timedOut) return { ...r, argv: [...argv] };
    const first = r.stderr.toString('utf8').trim().split('\n')[0] ?? '';
    // bubblewrap itself failed (no user namespaces, a bad mount): say so, the command never ran.
    if (first.startsWith('bwrap:')) return { ...r, argv: [...argv], spawnError: `the sandbox could not start: ${first}` };
    return { ...r, argv: [...argv], leftover: true };
  }
  const exit = Number(report[1]);
  return {
    ...r,
    argv: [...argv],
    exitCode: exit > 128 ? null : exit,
    signal: exit > 128 ? signalName(exit - 128) : null,
    leftover: r.leftover || Number(report[2]) > 0,
  };
}

function signalName(n: number): string {
  const names: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM' };
  return names[n] ?? `signal ${n}`;
}

/** Why `exe` cannot start (not found, not executable), or null. Checked on the host, whose root the sandbox sees. */
export function missingExecutable(exe: string, path: string): string | null {
  if (exe === '') return 'no executable given';
  if (exe.includes('/')) return isExecutable(exe) ? null : `executable ${exe} does not exist or is not executable`;
  return whichOnPath(exe, path) === null ? `executable '${exe}' was not found on PATH (${path})` : null;
}

function whichOnPath(name: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, name);
    if (isExecutable(p)) return p;
  }
  return null;
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function isInside(p: string, dir: string): boolean {
  const d = resolve(dir);
  const x = resolve(p);
  return x === d || x.startsWith(d.endsWith(sep) ? d : d + sep);
}

/** Where the symbolic links directly in `dir` lead (resolved), e.g. `bin/npm` into `lib/node_modules/npm`. */
function linkTargets(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isSymbolicLink()) continue;
      try {
        out.push(realpathSync(join(dir, e.name)));
      } catch {
        // a dangling link: nothing to show
      }
    }
  } catch {
    // unreadable: nothing to show
  }
  return out;
}

/** The secret paths that exist, each once, as the mount that hides it (a directory or a file). */
function secretMounts(paths: readonly string[]): { path: string; dir: boolean }[] {
  const out = new Map<string, boolean>();
  for (const p of paths) {
    for (const q of [resolve(p), ...(existsSync(p) ? [realpathSync(p)] : [])]) {
      try {
        out.set(q, statSync(q).isDirectory());
      } catch {
        // not there: nothing to hide
      }
    }
  }
  // One inside a hidden directory is hidden with it (and its directory is read-only: nothing to mount on).
  const dirs = [...out].filter(([, dir]) => dir).map(([p]) => p);
  return [...out].filter(([p]) => !dirs.some((d) => d !== p && isInside(p, d))).map(([path, dir]) => ({ path, dir }));
}

/** Hidden directories, without those inside another hidden one (mounting over a hidden path fails). */
function uniqueRoots(dirs: readonly string[]): string[] {
  const abs = [...new Set(dirs.map((d) => resolve(d)))].filter((d) => d !== '/' && existsSync(d)).sort();
  return abs.filter((d) => !abs.some((o) => o !== d && isInside(d, o)));
}
