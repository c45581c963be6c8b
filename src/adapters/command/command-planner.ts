import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EffectError } from '../../events/errors.js';
import type { Planner, PlannerInput } from '../../commands/ports.js';
import { runProcess, type ProcessResult } from '../process/run-process.js';
import type { SandboxedRun } from '../sandbox/sandbox.js';
import { commandEnv } from './command-env.js';

export interface CommandPlannerOptions {
  readonly argv: readonly string[];
  readonly route: string;
  readonly timeoutMs: number;
  readonly repo: string;
  readonly env: NodeJS.ProcessEnv;
  readonly allowEnv: readonly string[];
  /** Runs the command in the sandbox, the export bound read-only. */
  readonly run: (o: SandboxedRun) => Promise<ProcessResult>;
}

/**
 * A planner that is any command (an agent CLI, a script). It gets the planner input as JSON on
 * stdin, runs in the sandbox in a read-only export of the integration head (bound
 * read-only: no write reaches it, whoever the process runs as; never a writable checkout, R-29),
 * with its idempotency key in LONGBUILD_IDEMPOTENCY_KEY, and must print one proposal JSON on
 * stdout. The host validates the proposal like any other.
 */
export class CommandPlanner implements Planner {
  readonly route: string;
  constructor(private readonly o: CommandPlannerOptions) {
    this.route = o.route;
  }

  async propose(input: PlannerInput): Promise<unknown> {
    const dir = mkdtempSync(join(tmpdir(), 'longbuild-planner-'));
    try {
      await exportTree(this.o.repo, input.integrationHead, dir);
      makeReadOnly(dir);
      const result = await this.o.run({
        argv: this.o.argv,
        cwd: dir,
        ro: [dir],
        env: commandEnv(this.o.env, this.o.allowEnv, { LONGBUILD_IDEMPOTENCY_KEY: input.callId, LONGBUILD_CALL_PURPOSE: input.purpose }),
        input: JSON.stringify(input),
        timeoutMs: this.o.timeoutMs,
      });
      if (result.spawnError !== undefined) throw new EffectError(`planner command could not start: ${result.spawnError}`);
      if (result.timedOut) throw new EffectError(`planner command timed out after ${this.o.timeoutMs} ms`);
      if (result.exitCode !== 0) {
        throw new EffectError(`planner command exited ${result.exitCode ?? result.signal}: ${firstLine(result.stderr.toString('utf8')) || '(no stderr)'}`);
      }
      const text = result.stdout.toString('utf8').trim();
      try {
        return JSON.parse(text) as unknown;
      } catch {
        // Not JSON at all: hand the host a value it will refuse (recorded as a rejected proposal, R-28).
        return { invalid: 'planner stdout is not JSON', stdout: text.slice(0, 2000) };
      }
    } finally {
      makeWritable(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** Export a commit's tree into `dir` without touching the repository's index or worktrees. */
async function exportTree(repo: string, commit: string, dir: string): Promise<void> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  const tar = await runProcess({ argv: ['git', '-c', 'core.attributesFile=/dev/null', 'archive', '--format=tar', commit], cwd: repo, env, timeoutMs: 120_000 });
  if (tar.exitCode !== 0) throw new EffectError(`git archive ${commit} failed: ${tar.stderr.toString('utf8').trim()}`);
  const untar = await runProcess({ argv: ['tar', '-x', '-C', dir], cwd: dir, env, input: tar.stdout, timeoutMs: 120_000 });
  if (untar.exitCode !== 0) throw new EffectError(`extracting the planner's read-only export failed: ${untar.stderr.toString('utf8').trim()}`);
}

function makeReadOnly(dir: string): void {
  walk(dir, (p, isDir) => chmodSync(p, isDir ? 0o555 : 0o444));
}

function makeWritable(dir: string): void {
  try {
    walk(dir, (p, isDir) => chmodSync(p, isDir ? 0o755 : 0o644));
  } catch {
    // best effort; rmSync with force follows
  }
}

function walk(dir: string, fn: (path: string, isDir: boolean) => void): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) walk(p, fn);
    fn(p, st.isDirectory());
  }
  fn(dir, true);
}

function firstLine(s: string): string {
  return s.trim().split('\n')[0]?.slice(0, 300) ?? '';
}

