/**
 * What the controller needs from git and from the evidence store. The real bindings live in
 * git-binding.ts; keeping the port narrow lets tests and benchmarks swap in instant effects.
 */
import type { ObservedRefs, RefRepair } from '../../commands/refs.js';
import type { IntegrationLayer } from '../../commands/step-types.js';
import type { SurfaceJudgement } from '../../commands/test-surface.js';

/** What a candidate that does not apply leaves as evidence: the command, its output, the conflicted files. */
export interface ConflictEvidence {
  readonly argv: readonly string[];
  readonly output: Buffer;
  readonly paths: readonly string[];
  readonly durationMs: number;
}

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
    /** The report file the command wrote, when it writes one. */
    readonly report?: Buffer;
  }[];
  /** Set when a failed verification was run again on the same tree (batch mode, R-25). */
  readonly retested?: boolean;
  /** Where the commands of the last run begin in `commands` (after a retest: the first run's count). */
  readonly lastRunStart?: number;
}

export interface GitPort {
  /**
   * Create (or repair after a crash) the attempt's own worktree on its branch at baseHead. With
   * `reworkFrom` (a previous candidate's attempt branch) the worktree starts with that
   * candidate's changes applied on baseHead, three-way; `conflicts`: the files where they
   * conflicted, left with conflict markers; `reworked` false: they cannot be applied (or the
   * branch is gone), and it starts clean.
   */
  prepareAttemptWorktree(attemptId: string, branch: string, baseHead: string, reworkFrom?: string): Promise<{ worktree: string; reworked: boolean; conflicts?: readonly string[] }>;
  /** The paths a commit changed against its first parent (a dependency's files in a work packet). */
  filesChangedBy(commit: string): Promise<string[]>;
  /** A commit's tree and its first parent's tree, or null when `sha` names no commit here (R-41's input digests). */
  contentOf(sha: string): Promise<{ tree: string; parentTree: string | null } | null>;
  /**
   * Make the attempt's clone hold `commit`'s tree, fetched from the repository `from` (a fork's
   * parent's integrator repository): files it adds or changes written, files it lacks removed (R-41).
   */
  materialize(worktree: string, commit: string, from: string): Promise<void>;
  /** Delete the branches of these attempts from the integrator's repository (missing ones are fine). */
  deleteAttemptBranches(attemptIds: readonly string[]): Promise<void>;
  /** The attempt's commit on its branch, if one exists on top of baseHead (adoption, R-18). */
  findAttemptCommit(branch: string, baseHead: string): Promise<AttemptCommit | null>;
  /** The host commits what the worker left in its clone onto the attempt branch. */
  commitAttempt(branch: string, baseHead: string, worktree: string, message: string, date: string):
    Promise<{ kind: 'committed'; commit: string; tree: string } | { kind: 'unchanged' } | { kind: 'refused'; rule: string; reason: string }>;
  removeAttemptWorktree(attemptId: string): Promise<void>;
  /** The attempt's clone as a worker left it (a crash came before the host committed it), or null when there is none. */
  keptAttemptWorktree(attemptId: string): Promise<string | null>;
  /** Why a candidate commit is refused (protected paths R-29; symlinks, sizes, verified files R-31; the verification surface R-49), or null. */
  candidateProblem(base: string, commit: string, judged?: SurfaceJudgement): Promise<{ rule: string; reason: string } | null>;
  /**
   * Apply candidates onto head in a clean detached workspace, verify there, clean up. `layers`:
   * the candidates of the jobs this one is stacked on (speculative integration), applied first. A
   * candidate that does not apply is `ok: false` with git's output and the conflicted files as
   * `conflict` evidence.
   */
  integrateAndVerify(jobId: string, head: string, candidates: readonly string[], date: string, commands: readonly (readonly string[])[], opts?: { retestOnFailure?: boolean; layers?: readonly IntegrationLayer[]; reportFiles?: readonly (string | undefined)[] }):
    Promise<{ ok: true; resultCommit: string; tree: string; under: string; verification: VerificationRun } | { ok: false; reason: string; conflict?: ConflictEvidence }>;
  /**
   * Check out `head` in a clean detached workspace named `runId`, run `commands` there (the
   * verification pipeline: the cache first, sandboxed, clean before and after), clean up.
   */
  checkHead(runId: string, head: string, commands: readonly (readonly string[])[], reportFiles?: readonly (string | undefined)[]): Promise<{ tree: string; verification: VerificationRun }>;
  /** The hold-out commit of a result over the commit its candidates were applied onto: base tests, candidate code. */
  holdoutCommit(under: string, result: string, tests: readonly string[], date: string): Promise<string>;
  /** The integration ref in the integrator's repository. */
  readRef(ref: string): Promise<string | null>;
  /** One compare-and-set ref update in the integrator's repository, then published to the user's. */
  promote(ref: string, newCommit: string, expectedOld: string): Promise<{ ok: true } | { ok: false; actual: string | null }>;
  /** The compares with the log (attempt branches too when `withAttempts`). */
  observeRefs(ref: string, withAttempts: boolean): Promise<ObservedRefs>;
  /** Set a ref to `expected` (null: delete it) in the integrator's repository or the user's. */
  repairRef(repair: RefRepair): Promise<void>;
}

/** Content-addressed evidence bytes (stdout/stderr) under the build directory. */
export interface EvidenceStore {
  /** Store bytes; returns their SHA-256. */
  put(bytes: Uint8Array): string;
  /** The bytes stored under a SHA-256, or null when missing or corrupt. */
  get?(sha256: string): Uint8Array | null;
}
