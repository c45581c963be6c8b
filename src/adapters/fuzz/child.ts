/**
 * The fuzzer's children: `longbuild` processes in process groups of their own, with the fault
 * variables set by the runner only, and the files they leave (points, ledgers) read back.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { packageFile } from '../package-files.js';
import { signedHeadPath } from '../transparency/keys.js';

/** The package's bin/longbuild.js. */
export const LONGBUILD_BIN = packageFile('bin', 'longbuild.js');

export interface ChildResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

const FAULT_VARS = ['LONGBUILD_CRASH_AT', 'LONGBUILD_FAULT', 'LONGBUILD_PAUSE_AT', 'LONGBUILD_POINTS_FILE', 'LONGBUILD_EFFECTS_LEDGER'];

export function childEnv(base: Readonly<Record<string, string | undefined>>, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined && !FAULT_VARS.includes(k)) env[k] = v;
  return { ...env, NO_COLOR: '1', ...extra };
}

export interface ChildOptions {
  readonly timeoutMs?: number;
  /** Called with each chunk of stderr (lease-race and hang cases watch for a line). */
  readonly onStderr?: (all: string, child: { pid: number }) => void;
  /** SIGKILL the child's whole process group after this many ms (random kills). */
  readonly killAfterMs?: number;
  /** Node.js arguments that start the CLI (default: bin/longbuild.js; a start-up snapshot's, cli-snapshot.ts). */
  readonly launch?: readonly string[];
}

/** One `longbuild` child process in a process group of its own; resolves with its exit code or the signal that ended it. */
export function longbuild(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, o: ChildOptions = {}): Promise<ChildResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...(o.launch ?? [LONGBUILD_BIN]), ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out: Buffer[] = [];
    let errText = '';
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
    };
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => {
      errText += b.toString('utf8');
      o.onStderr?.(errText, { pid: child.pid! });
    });
    const timer = setTimeout(killGroup, o.timeoutMs ?? 10 * 60_000);
    const killer = o.killAfterMs === undefined ? undefined : setTimeout(killGroup, o.killAfterMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      fail(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killer) clearTimeout(killer);
      done({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: errText });
    });
  });
}

export function describeChild(r: ChildResult): string {
  const tail = r.stderr.trim().split('\n').slice(-1)[0] ?? '';
  return `${r.signal ? `signal ${r.signal}` : `exit ${r.code}`}${tail ? `: ${tail}` : ''}`;
}

export const readLines = (path: string): string[] => (existsSync(path) ? readFileSync(path, 'utf8').split('\n') : []);
export const pointLines = (path: string): string[] => readLines(path).filter((l) => l.trim() !== '');

/**
 * Remove `dir` and every build in it, with the head checkpoint this machine kept for each (R-36
 * keeps the last signed checkpoint per build directory in the config directory `env` names): a
 * campaign's hundreds of temporary builds leave nothing behind there.
 */
export function removeBuilds(dir: string, env: Readonly<Record<string, string | undefined>>): void {
  for (const build of buildDirsIn(dir, 6)) rmSync(signedHeadPath(env as NodeJS.ProcessEnv, build), { force: true });
  rmSync(dir, { recursive: true, force: true });
}

/** The `.longbuild` directories under `dir`, at most `depth` levels down (git directories not entered). */
function buildDirsIn(dir: string, depth: number): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    if (e.name === '.longbuild') found.push(join(dir, e.name));
    else if (depth > 1 && !e.name.endsWith('.git')) found.push(...buildDirsIn(join(dir, e.name), depth - 1));
  }
  return found;
}
