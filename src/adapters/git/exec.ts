/**
 * Running git deterministically: a controlled environment (no system/global config, no HOME
 * lookups, no hooks, no background gc), a fixed identity and, for anything that writes a commit,
 * a fixed date. Every git call of longbuild goes through `git()` here.
 */
import { join } from 'node:path';
import { EffectError, StorageError, ValidationError, type StorageProblem } from '../../events/errors.js';
import { freeBytes, freeSpace } from '../../projections/storage-guard.js';
import { onInterrupt, throwIfInterrupted } from '../interrupt.js';
import { directSpawn, killGroup, Spawner, type SpawnResult } from '../process/spawner.js';

export const LONGBUILD_NAME = 'longbuild';
export const LONGBUILD_EMAIL = 'longbuild@localhost';

/** -c settings that make git behave the same on every machine, whatever the repo's config says. */
const FIXED_CONFIG: readonly string[] = [
  'core.hooksPath=/dev/null',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'gc.auto=0',
  'maintenance.auto=false',
  'core.autocrlf=false',
  'core.safecrlf=false',
  'core.quotePath=false',
  'core.fsmonitor=false',
  // No attribute or ignore file from outside the repository; filters need a driver in
  // config, and longbuild's repositories define none.
  'core.attributesFile=/dev/null',
  'core.excludesFile=/dev/null',
  'protocol.allow=never',
  'protocol.file.allow=always',
  'core.untrackedCache=false',
  'rerere.enabled=false',
  'advice.detachedHead=false',
  'init.defaultBranch=main',
  `user.name=${LONGBUILD_NAME}`,
  `user.email=${LONGBUILD_EMAIL}`,
].flatMap((c) => ['-c', c]);

/** Convert an ISO 8601 date to git's raw "<seconds> +0000" form (sub-seconds dropped). */
export function gitDate(iso: string): string {
  const ms = Date.parse(iso);
  if (typeof iso !== 'string' || !/^\d{4}-\d{2}-\d{2}T/.test(iso) || Number.isNaN(ms)) {
    throw new ValidationError(`invalid commit date '${String(iso)}': expected an ISO 8601 date like 2025-01-01T00:00:00Z`);
  }
  return `${Math.floor(ms / 1000)} +0000`;
}

/** The environment of every git child: nothing from the caller's environment but PATH. */
export function gitEnv(date?: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: '/nonexistent-longbuild-home',
    LC_ALL: 'C',
    LANG: 'C',
    TZ: 'UTC',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_AUTHOR_NAME: LONGBUILD_NAME,
    GIT_AUTHOR_EMAIL: LONGBUILD_EMAIL,
    GIT_COMMITTER_NAME: LONGBUILD_NAME,
    GIT_COMMITTER_EMAIL: LONGBUILD_EMAIL,
  };
  if (date !== undefined) {
    const d = gitDate(date);
    env['GIT_AUTHOR_DATE'] = d;
    env['GIT_COMMITTER_DATE'] = d;
  }
  return env;
}

export interface GitOptions {
  /** Required for anything that creates a commit. */
  readonly date?: string;
  readonly input?: string;
  /** Return a non-zero exit instead of throwing. */
  readonly allowFail?: boolean;
  readonly timeoutMs?: number;
  /** Extra environment (GIT_INDEX_FILE, GIT_DIR, GIT_WORK_TREE, an author's identity). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface GitOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Git calls go through the spawner (spawner.ts): small helper processes fork them, not the
 * controller (`LONGBUILD_SPAWNER=off`: the controller forks them itself). Git is longbuild's own
 * trusted tool and leaves no background process (gc and maintenance are off), so the liveness
 * scans the process runner makes for untrusted calls (run-process.ts) are not needed.
 */
const spawner = new Spawner(2);
const direct = new Set<number>();
onInterrupt(() => {
  for (const pgid of [...spawner.groups, ...direct]) killGroup(pgid);
});

function runGit(argv: readonly string[], cwd: string, env: Record<string, string>, input: string | undefined, timeoutMs: number): Promise<SpawnResult> {
  throwIfInterrupted();
  const request = { argv, cwd, env, timeoutMs, ...(input !== undefined ? { input } : {}) };
  return process.env['LONGBUILD_SPAWNER'] === 'off' ? directSpawn(request, direct) : spawner.run(request);
}

/** Run `git <args>` in `cwd`. Throws EffectError (with git's stderr) on a non-zero exit unless allowFail. */
export async function git(cwd: string, args: readonly string[], opts: GitOptions = {}): Promise<GitOutput> {
  const r = await runGit(['git', ...FIXED_CONFIG, ...args], cwd, { ...gitEnv(opts.date), ...opts.env }, opts.input, opts.timeoutMs ?? 120_000);
  // Interrupted meanwhile: its group was killed, and what it did must not be acted on.
  throwIfInterrupted();
  const out = { code: r.code ?? -1, stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8') };
  if (r.spawnError !== undefined) throw new EffectError(`git could not be started: ${r.spawnError}`);
  if (r.timedOut) throw new EffectError(`git ${args.join(' ')} timed out in ${cwd}`);
  // A full disk or an I/O error is never a verdict on the work (an R-31 refusal, a failed attempt):
  // it stops the step, named, whatever the caller allows.
  if (out.code !== 0) {
    const failure = gitStorageFailure(out.stderr, cwd);
    if (failure !== null) throw failure;
  }
  if (out.code !== 0 && opts.allowFail !== true) {
    throw new EffectError(`git ${args.join(' ')} failed (exit ${out.code}) in ${cwd}: ${out.stderr.trim() || out.stdout.trim()}`);
  }
  return out;
}

const GIT_STORAGE_PROBLEMS: readonly [RegExp, StorageProblem][] = [
  [/No space left on device|Out of diskspace|Disk quota exceeded|File too large/i, 'full'],
  [/Read-only file system/i, 'read-only'],
  [/Input\/output error/i, 'io'],
];

/**
 * The StorageError a failed git command stands for (naming the file it quotes, else the directory
 * it ran in), or null. git does not always say why a write failed ("could not set
 * 'core.filemode'", "couldn't write '...lock'"): a failure while the filesystem it writes to has
 * almost no space left is taken for the full disk it is.
 */
export function gitStorageFailure(stderr: string, cwd: string): StorageError | null {
  const found = GIT_STORAGE_PROBLEMS.find(([re]) => re.test(stderr)) ?? (nearlyFull(cwd) ? [/./, 'full' as const] as const : undefined);
  if (found === undefined) return null;
  const line = stderr.split('\n').find((l) => found[0].test(l))?.trim() ?? (stderr.trim() || 'a write failed');
  const quoted = /'([^']+)'/.exec(line)?.[1];
  const path = quoted === undefined ? cwd : quoted.startsWith('/') ? quoted : join(cwd, quoted);
  return new StorageError(path, found[1], found[1] === 'full' ? `git: ${line}; ${freeSpace(cwd)}` : `git: ${line}`);
}

/** Less than 256 KiB left on the filesystem holding `dir`. */
function nearlyFull(dir: string): boolean {
  const free = freeBytes(dir);
  return free !== null && free < 256 * 1024;
}

const SHA = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;

/** Refuse anything that is not a full object id before it reaches a git command line. */
export function assertSha(value: unknown, what: string): asserts value is string {
  if (typeof value !== 'string' || !SHA.test(value)) {
    throw new ValidationError(`${what} must be a full lower-case git object id, got ${JSON.stringify(value)}`);
  }
}

/** A full ref name under refs/ that git itself accepts. */
export async function assertRefName(_cwd: string, ref: unknown): Promise<string> {
  if (typeof ref !== 'string' || !ref.startsWith('refs/') || ref.includes('\0')) {
    throw new ValidationError(`ref must be a full ref name under refs/, got ${JSON.stringify(ref)}`);
  }
  if (!isValidRefName(ref)) throw new ValidationError(`'${ref}' is not a valid git ref name`);
  return ref;
}

/**
 * git-check-ref-format(1)'s rules, without a git process: no component starting with `.` or
 * ending in `.lock`, no `..`, no control character, space, `~ ^ : ? * [ \`, no `@{`, not `@`, no
 * empty component (a leading, trailing or double `/`), not ending in `.`.
 */
export function isValidRefName(ref: string): boolean {
  if (ref === '@' || ref.endsWith('.') || ref.includes('..') || ref.includes('@{')) return false;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(ref)) return false;
  return ref.split('/').every((c) => c !== '' && !c.startsWith('.') && !c.endsWith('.lock'));
}
