import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallOptions, WorkPacket, Worker, WorkerResult } from '../../commands/ports.js';
import type { ProcessResult } from '../process/run-process.js';
import type { SandboxedRun } from '../sandbox/sandbox.js';
import type { CallStyle } from './invocation.js';
import type { Usage } from '../../events/catalogue.js';

export interface CommandWorkerOptions {
  /** A configured command or an agent preset (invocation.ts). */
  readonly style: CallStyle;
  readonly timeoutMs: number;
  /** Retries start from the failed candidate's changes (Worker.reworks). */
  readonly rework?: boolean;
  /** Runs the command in the sandbox (R-30) with the given read-write directories. */
  readonly run: (o: SandboxedRun) => Promise<ProcessResult>;
}

/**
 * A worker that is any command (a script; the work packet as JSON on stdin) or a coding agent
 * through its preset (the packet in its prompt). It runs in the sandbox (R-30), in the attempt's
 * own clone (its only writable place besides an agent's private home), with its idempotency key
 * in the environment. Exit 0: the host commits whatever the clone's
 * files now hold. Non-zero or a timeout: the attempt fails, and its output is kept as evidence.
 * When the call ends every process it started ends with it.
 */
export class CommandWorker implements Worker {
  readonly reworks: boolean;
  constructor(private readonly o: CommandWorkerOptions) {
    this.reworks = o.rework ?? false;
  }

  async implement(packet: WorkPacket, worktree: string, options: CallOptions = {}): Promise<WorkerResult> {
    // A read-only node gets no worktree: it runs in an empty scratch directory it cannot commit from.
    const scratch = worktree === '' ? mkdtempSync(join(tmpdir(), 'longbuild-readonly-')) : null;
    try {
      return await this.run(packet, scratch ?? worktree, options);
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  }

  private async run(packet: WorkPacket, cwd: string, options: CallOptions): Promise<WorkerResult> {
    const call = this.o.style.plan({
      role: 'worker', callId: packet.idempotencyKey, payload: packet, cwd, ...(options.usageFile !== undefined ? { usageFile: options.usageFile } : {}),
      env: {
        ...(options.traceparent !== undefined ? { TRACEPARENT: options.traceparent } : {}),
        LONGBUILD_IDEMPOTENCY_KEY: packet.idempotencyKey,
        LONGBUILD_NODE_ID: packet.nodeId,
        LONGBUILD_ATTEMPT_ID: packet.attemptId,
        GIT_AUTHOR_DATE: packet.commitDate,
        GIT_COMMITTER_DATE: packet.commitDate,
      },
    });
    let result: ProcessResult;
    let answer: string;
    let usage: Usage | undefined;
    try {
      result = await this.o.run({ argv: call.argv, cwd, rw: [cwd, ...call.rw], env: call.env, ...(call.input !== undefined ? { input: call.input } : {}), timeoutMs: this.o.timeoutMs });
      answer = call.answer(result.stdout.toString('utf8'));
      usage = call.usage(result.stdout.toString('utf8'));
    } finally {
      call.dispose();
    }
    const used = usage !== undefined ? { usage } : {};
    const agent = this.o.style.agent;
    const stdout = result.stdout.toString('utf8');
    const stderr = result.stderr.toString('utf8');
    const durationMs = Math.max(0, Math.round(result.durationMs));
    const label = agent ? this.o.style.label : 'worker';
    if (result.spawnError !== undefined) return { outcome: 'failed', reason: `${agent ? label : 'worker command'} could not start: ${result.spawnError}`, stdout, stderr, durationMs, ...used };
    if (result.timedOut) return { outcome: 'failed', reason: `${label} timed out after ${this.o.timeoutMs} ms`, stdout, stderr, durationMs, ...used };
    if (result.exitCode !== 0) {
      const said = agent ? answer.trim().split('\n')[0]?.slice(0, 300) : undefined;
      return { outcome: 'failed', reason: `${label} exited ${result.exitCode ?? result.signal}${said ? `: ${said}` : ''}`, stdout, stderr, durationMs, ...used };
    }
    if (packet.kind === 'read-only') {
      const decision = answer.trim();
      return { outcome: 'recorded', ...(decision ? { decision: decision.slice(0, 4000) } : {}), stdout, stderr, durationMs, ...used };
    }
    return { outcome: 'committed', stdout, stderr, durationMs, ...used };
  }
}
