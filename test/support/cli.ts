/**
 * Drive the built CLI (dist/, built by `npm test` before vitest) as a real child process, the way
 * users and the fuzzer do. A crash is a real SIGKILL delivered by the controller to itself
 * (LONGBUILD_CRASH_AT), observed here as `signal === 'SIGKILL'`.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin', 'longbuild.js');
export const HELIOS = join(ROOT, 'test', 'fixtures', 'helios.json');

export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run the CLI (`bin`: another build of it, e.g. a mutated copy; `launch`: Node.js arguments that start it, e.g. a start-up snapshot's). */
/** A child's environment: this process's, NO_COLOR, then `extra` (a key set to undefined is unset). */
function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: '1', ...extra };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  return env as NodeJS.ProcessEnv;
}

export function runCli(args: readonly string[], opts: { cwd: string; env?: Record<string, string | undefined>; timeoutMs?: number; bin?: string; launch?: readonly string[] }): CliRun {
  const r = spawnSync(process.execPath, [...(opts.launch ?? [opts.bin ?? BIN]), ...args], { cwd: opts.cwd, env: childEnv(opts.env), encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

/** Run and parse `--json` stdout; throws with stderr when the exit code differs from `expect`. */
export function cliJson<T = any>(args: readonly string[], opts: { cwd: string; env?: Record<string, string | undefined>; expect?: number }): T {
  const r = runCli([...args, '--json'], opts);
  if (r.code !== (opts.expect ?? 0)) throw new Error(`longbuild ${args.join(' ')} exited ${r.code ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

export function tempDir(prefix = 'longbuild-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A user's repository: a new git repository on `main` whose one commit holds a README. */
export function userRepo(): string {
  const repo = tempDir();
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'README.md'), 'the user\'s project\n');
  git('add', '.');
  git('-c', 'user.name=u', '-c', 'user.email=u@x', 'commit', '-q', '-m', 'user');
  return repo;
}

/** helios' first two milestones (three writable integrations, two checkpoints, a few seconds), written into `dir`. */
export function twoMilestoneHelios(dir: string): string {
  const bp = JSON.parse(readFileSync(HELIOS, 'utf8'));
  bp.milestones = bp.milestones.slice(0, 2);
  const path = join(dir, 'blueprint.json');
  writeFileSync(path, JSON.stringify(bp));
  return path;
}

const execFileP = promisify(execFile);

/**
 * The CLI as an async child: several cases can run at once, and a server living in the test's own
 * process (a test double) keeps answering while it runs. A SIGKILL is reported, not thrown.
 */
export async function cliAsync(args: readonly string[], cwd: string, env: Record<string, string | undefined> = {}): Promise<{ signal: string | null; code: number | null; stdout: string; stderr: string }> {
  try {
    const r = await execFileP(process.execPath, [BIN, ...args], { cwd, env: childEnv(env), timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
    return { signal: null, code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { signal?: string | null; code?: number | null; stdout?: string; stderr?: string };
    return { signal: e.signal ?? null, code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
