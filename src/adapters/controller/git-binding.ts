import { join } from 'node:path';
import {
  changedPaths, commitWorktree, findAttemptCommit, integrateCandidates, prepareAttemptWorktree, promote, readRef, removeWorkspace, runVerification,
} from '../git/git.js';
import type { GitPort } from './ports.js';

export interface GitBindingOptions {
  readonly repo: string;
  /** `<build dir>/worktrees` and `<build dir>/workspaces`. */
  readonly worktreesDir: string;
  readonly workspacesDir: string;
  /** The trusted verification environment, passed verbatim. */
  readonly verifyEnv: Readonly<Record<string, string>>;
  readonly verifyTimeoutMs: number;
}

/** The controller's GitPort over real git: worktrees per attempt, detached integration workspaces. */
export function gitBinding(o: GitBindingOptions): GitPort {
  return {
    async prepareAttemptWorktree(attemptId, branch, baseHead) {
      const prepared = await prepareAttemptWorktree(o.repo, o.worktreesDir, attemptId, branch, baseHead);
      return prepared.worktree;
    },
    findAttemptCommit: (branch, baseHead) => findAttemptCommit(o.repo, branch, baseHead),
    commitWorktree: (worktree, message, date) => commitWorktree(worktree, message, date),
    removeAttemptWorktree: (attemptId) => removeWorkspace(o.repo, join(o.worktreesDir, attemptId)),
    changedPaths: (base, commit) => changedPaths(o.repo, base, commit),
    async integrateAndVerify(jobId, head, candidates, date, commands) {
      const applied = await integrateCandidates(o.repo, o.workspacesDir, jobId, head, candidates, date);
      if (applied.kind === 'conflict') {
        return { ok: false, reason: `candidate ${applied.candidate.slice(0, 12)} does not apply onto ${head.slice(0, 12)}: ${applied.detail.split('\n')[0] ?? ''}` };
      }
      try {
        const run = await runVerification(applied.workspace, commands.map((c) => [...c]), o.verifyEnv, o.verifyTimeoutMs);
        return {
          ok: true,
          resultCommit: applied.resultCommit,
          tree: applied.tree,
          verification: {
            passed: run.passed,
            ...(run.reason !== undefined ? { reason: run.reason } : {}),
            commands: run.commands.map((c) => ({ argv: c.argv, exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr, durationMs: c.durationMs, cacheHit: false })),
          },
        };
      } finally {
        await removeWorkspace(o.repo, applied.workspace);
      }
    },
    readRef: (ref) => readRef(o.repo, ref),
    async promote(ref, newCommit, expectedOld) {
      const r = await promote(o.repo, ref, newCommit, expectedOld);
      return r === 'promoted' ? { ok: true } : { ok: false, actual: r.conflict };
    },
  };
}
