import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkPacket, Worker, WorkerResult } from '../../commands/ports.js';
import type { ProcessResult } from '../process/run-process.js';
import type { SandboxedRun } from '../sandbox/sandbox.js';
import { commandEnv } from './command-env.js';

export interface CommandWorkerOptions {
  readonly argv: readonly string[];
  readonly timeoutMs: number;
  readonly env: NodeJS.ProcessEnv;
  readonly allowEnv: readonly string[];
  /** Runs the command in the sandbox with the given read-write directories. */
  readonly run: (o: SandboxedRun) => Promise<ProcessResult>;
}

/**
 * A worker that is any command (a coding agent's CLI, a script). It runs in the sandbox,
 * in the attempt's own clone (its only writable place), with the work packet as JSON on stdin
 * and its idempotency key in the environment. Exit 0: the host commits whatever the clone's
 * files now hold. Non-zero or a timeout: the attempt fails, and its output is kept as evidence.
 * When the call ends every process it started ends with it.
 */
export class CommandWorker implements Worker {
  constructor(private readonly o: CommandWorkerOptions) {}

  async implement(packet: WorkPacket, worktree: string): Promise<WorkerResult> {
    // A read-only node gets no worktree: it runs in an empty scratch directory it cannot commit from.
    const scratch = worktree === '' ? mkdtempSync(join(tmpdir(), 'longbuild-readonly-')) : null;
    try {
      return await this.run(packet, scratch ?? worktree);
    } finally {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    }
  }

  private async run(packet: WorkPacket, cwd: string): Promise<WorkerResult> {
    const result = await this.o.run({
      argv: this.o.argv,
      cwd,
      rw: [cwd],
      env: commandEnv(this.o.env, this.o.allowEnv, {
        LONGBUILD_IDEMPOTENCY_KEY: packet.idempotencyKey,
        LONGBUILD_NODE_ID: packet.nodeId,
        LONGBUILD_ATTEMPT_ID: packet.attemptId,
        GIT_AUTHOR_DATE: packet.commitDate,
        GIT_COMMITTER_DATE: packet.commitDate,
      }),
      input: JSON.stringify(packet),
      timeoutMs: this.o.timeoutMs,
    });
    const stdout = result.stdout.toString('utf8');
    const stderr = result.stderr.toString('utf8');
    if (result.spawnError !== undefined) return { outcome: 'failed', reason: `worker command could not start: ${result.spawnError}`, stdout, stderr };
    if (result.timedOut) return { outcome: 'failed', reason: `worker timed out after ${this.o.timeoutMs} ms`, stdout, stderr };
    if (result.exitCode !== 0) {
      return { outcome: 'failed', reason: `worker exited ${result.exitCode ?? result.signal}`, stdout, stderr };
    }
    if (packet.kind === 'read-only') {
      const decision = stdout.trim();
      return { outcome: 'recorded', ...(decision ? { decision: decision.slice(0, 4000) } : {}), stdout, stderr };
    }
    return { outcome: 'committed', stdout, stderr };
  }
}
