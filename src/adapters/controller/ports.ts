/**
 * What the controller needs from git and from the evidence store. The real bindings live in
 * git-binding.ts; keeping the port narrow lets tests and benchmarks swap in instant effects.
 */
export interface AttemptCommit {
  readonly commit: string;
  readonly tree: string;
}

export interface VerificationRun {
  readonly passed: boolean;
  readonly reason?: string;
  readonly commands: readonly {
    readonly argv: readonly string[];
    readonly exitCode: number | null;
    readonly stdout: Buffer;
    readonly stderr: Buffer;
    readonly durationMs: number;
    readonly cacheHit: boolean;
  }[];
  /** Set when a failed verification was run again on the same tree (batch mode, R-25). */
  readonly retested?: boolean;
}

export interface GitPort {
  /** Create (or repair after a crash) the attempt's own worktree on its branch at baseHead. */
  prepareAttemptWorktree(attemptId: string, branch: string, baseHead: string): Promise<string>;
  /** The attempt's commit on its branch, if one exists on top of baseHead (adoption, R-18). */
  findAttemptCommit(branch: string, baseHead: string): Promise<AttemptCommit | null>;
  /** Commit everything in the worktree (host commits for a worker that did not). */
  commitWorktree(worktree: string, message: string, date: string): Promise<AttemptCommit | null>;
  removeAttemptWorktree(attemptId: string): Promise<void>;
  /** Paths a candidate commit changes relative to its base. */
  changedPaths(base: string, commit: string): Promise<string[]>;
  /** Apply candidates onto head in a clean detached workspace, verify there, clean up. */
  integrateAndVerify(jobId: string, head: string, candidates: readonly string[], date: string, commands: readonly (readonly string[])[], opts?: { retestOnFailure?: boolean }):
    Promise<{ ok: true; resultCommit: string; tree: string; verification: VerificationRun } | { ok: false; reason: string }>;
  readRef(ref: string): Promise<string | null>;
  /** One compare-and-set ref update. */
  promote(ref: string, newCommit: string, expectedOld: string): Promise<{ ok: true } | { ok: false; actual: string | null }>;
}

/** Content-addressed evidence bytes (stdout/stderr) under the build directory. */
export interface EvidenceStore {
  /** Store bytes; returns their SHA-256. */
  put(bytes: Uint8Array): string;
}
