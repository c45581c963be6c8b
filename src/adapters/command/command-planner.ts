import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { sha256Hex } from '../../events/hash.js';
import { writeAtomically } from '../atomic-write.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EffectError } from '../../events/errors.js';
import type { CallOptions, Planner, PlannerAnswer, PlannerInput } from '../../commands/ports.js';
import { runProcess, type ProcessResult } from '../process/run-process.js';
import type { SandboxedRun } from '../sandbox/sandbox.js';
import { jsonInMessage } from '../agents/presets.js';
import type { CallStyle } from './invocation.js';

export interface CommandPlannerOptions {
  /** A configured command or an agent preset (invocation.ts). */
  readonly style: CallStyle;
  readonly route: string;
  readonly timeoutMs: number;
  readonly repo: string;
  /**
   * Where answers are kept as received (`<build dir>/answers`): a call made again after a crash
   * between the answer and its record is answered from here, so no model is asked twice.
   */
  readonly answers?: string;
  /** Runs the command in the sandbox, the export bound read-only. */
  readonly run: (o: SandboxedRun) => Promise<ProcessResult>;
}

/**
 * A planner that is any command (a script; stdin gets the planner input as JSON) or a coding
 * agent through its preset (its prompt holds the input). It runs in the sandbox in a read-only export of the integration head (bound
 * read-only: no write reaches it, whoever the process runs as; never a writable checkout, R-29),
 * with its idempotency key in LONGBUILD_IDEMPOTENCY_KEY, and must answer with one proposal JSON
 * (a command on stdout, an agent as its final message). The host validates the proposal like any other.
 */
export class CommandPlanner implements Planner {
  readonly route: string;
  constructor(private readonly o: CommandPlannerOptions) {
    this.route = o.route;
  }

  async propose(input: PlannerInput): Promise<unknown> {
    return (await this.answer(input)).proposal;
  }

  /** The proposal, and what the call used when its agent reported it; a kept answer is `replayed`. */
  async answer(input: PlannerInput, options: CallOptions = {}): Promise<PlannerAnswer> {
    const kept = this.o.answers === undefined ? null : readAnswer(this.o.answers, input.callId);
    if (kept !== null) return { proposal: kept, replayed: true };
    const answer = await this.ask(input, options);
    if (this.o.answers !== undefined) keepAnswer(this.o.answers, input.callId, answer.proposal);
    return answer;
  }

  private async ask(input: PlannerInput, options: CallOptions): Promise<PlannerAnswer> {
    const dir = mkdtempSync(join(tmpdir(), 'longbuild-planner-'));
    try {
      await exportTree(this.o.repo, input.integrationHead, dir);
      makeReadOnly(dir);
      const call = this.o.style.plan({
        role: 'planner', callId: input.callId, payload: input, cwd: dir,
        env: { LONGBUILD_IDEMPOTENCY_KEY: input.callId, LONGBUILD_CALL_PURPOSE: input.purpose, ...(options.traceparent !== undefined ? { TRACEPARENT: options.traceparent } : {}) },
        ...(options.usageFile !== undefined ? { usageFile: options.usageFile } : {}),
      });
      try {
        const label = this.o.style.label;
        const result = await this.o.run({
          argv: call.argv, cwd: dir, ro: [dir], rw: call.rw, env: call.env,
          ...(call.input !== undefined ? { input: call.input } : {}), timeoutMs: this.o.timeoutMs,
        });
        if (result.spawnError !== undefined) throw new EffectError(`${label} could not start: ${result.spawnError}`);
        if (result.timedOut) throw new EffectError(`${label} timed out after ${this.o.timeoutMs} ms`);
        const stdout = result.stdout.toString('utf8');
        if (result.exitCode !== 0) {
          const said = firstLine(result.stderr.toString('utf8')) || firstLine(call.answer(stdout));
          throw new EffectError(`${label} exited ${result.exitCode ?? result.signal}: ${said || '(no output)'}`);
        }
        const message = call.answer(stdout);
        const usage = call.usage(stdout);
        const used = usage !== undefined ? { usage } : {};
        // Not JSON at all, or JSON the host refuses to read: hand the host a note it refuses
        // with the reason (recorded as a rejected proposal, returned to the planner, R-39).
        const read = jsonInMessage(message);
        // The real reason, with how the answer began: what a person needs to see why.
        if (read === null) return { proposal: { invalid: `${label}'s answer is not JSON; it began: ${JSON.stringify(beginning(message))}`, rule: 'R-28', stdout: message.trim().slice(0, 2000) }, ...used };
        if (!read.ok) return { proposal: { invalid: `${label}'s answer is refused: ${read.problem}`, rule: 'R-55', stdout: message.trim().slice(0, 2000) }, ...used };
        return { proposal: read.value, ...used };
      } finally {
        call.dispose();
      }
    } finally {
      makeWritable(dir);
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const answerPath = (dir: string, callId: string) => join(dir, `${sha256Hex(Buffer.from(callId))}.json`);

/** The answer kept for a call, or null (none, or a file a crash left unreadable: the call is made). */
function readAnswer(dir: string, callId: string): unknown {
  try {
    const kept = JSON.parse(readFileSync(answerPath(dir, callId), 'utf8')) as { callId?: unknown; answer?: unknown };
    return kept.callId === callId && kept.answer !== undefined ? kept.answer : null;
  } catch {
    return null;
  }
}

/** Keep an answer durably (temp file, fsync, rename) before the controller records it. */
function keepAnswer(dir: string, callId: string, answer: unknown): void {
  writeAtomically(answerPath(dir, callId), JSON.stringify({ callId, answer }), { fsync: true });
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

/** The first words of an answer, on one line (at most 60 characters, cut with an ellipsis). */
function beginning(message: string): string {
  const flat = message.trim().replace(/\s+/g, ' ');
  return flat.length > 60 ? `${flat.slice(0, 60)}…` : flat;
}
