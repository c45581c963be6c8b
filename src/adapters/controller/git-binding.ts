import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  addDetachedWorkspace, ATTEMPT_BRANCH_PREFIX, candidateProblem, commitAttempt, findAttemptCommit, git, integrateCandidates, prepareAttemptWorktree, promote, publishRef, readRef,
  changedFilesOf, commitParents, gitCommonDir, listRefFiles, removeWorkspace, treeOf, workspaceGitDir, type CandidateLimits,
} from '../git/git.js';
import { verifyWithCache, type VerificationPhases, type VerificationRunner } from '../cache/cached-verification.js';
import { updateOwnRef } from '../git/own-refs.js';
import { holdoutCommit } from '../git/holdout.js';
import { missingObjects } from '../git/integrator-repo.js';
import type { VerificationCache } from '../cache/verification-cache.js';
import type { GitPort, VerificationRun } from './effect-ports.js';
import type { ObservedRefs } from '../../commands/refs.js';

export interface GitBindingOptions {
  /** The user's repository: the integration head is published there (R-33). */
  readonly repo: string;
  /** The integrator's own repository (R-31): `<build dir>/integrator.git`. */
  readonly integratorRepo: string;
  /** `<build dir>/worktrees` (attempt clones) and `<build dir>/workspaces` (integration). */
  readonly worktreesDir: string;
  readonly workspacesDir: string;
  /** Private index files of the host's attempt commits. */
  readonly indexDir: string;
  /** The trusted verification environment, passed verbatim (R-26). */
  readonly verifyEnv: Readonly<Record<string, string>>;
  readonly verifyTimeoutMs: number;
  /** Runs one verification command (in the sandbox, R-30). */
  readonly runVerification: VerificationRunner;
  /** What every candidate is checked against (R-29, R-31). */
  readonly limits: CandidateLimits;
  /** The verification cache (R-27); null or absent: off (receipts keep their shape, cacheHit false). */
  readonly cache?: VerificationCache | null;
  /** Git-ignored files verification leaves (recorded in the build's settings; absent: dirty). */
  readonly ignoredFiles?: 'allowed' | 'dirty';
  /** The setup phase of every command sequence (R-57); absent: none. */
  readonly phases?: VerificationPhases;
}

/** The controller's GitPort over real git: the integrator's private repository, a clone per attempt. */
export function gitBinding(o: GitBindingOptions): GitPort {
  const I = o.integratorRepo;
  /** Commit contents already read (an object never changes). */
  const contents = new Map<string, { tree: string; parentTree: string | null } | null>();
  return {
    async prepareAttemptWorktree(attemptId, branch, baseHead, reworkFrom) {
      const prepared = await prepareAttemptWorktree(I, o.worktreesDir, attemptId, branch, baseHead, reworkFrom);
      return { worktree: prepared.worktree, reworked: prepared.reworked, conflicts: prepared.conflicts };
    },
    findAttemptCommit: (branch, baseHead) => findAttemptCommit(I, branch, baseHead),
    filesChangedBy: (commit) => changedFilesOf(I, commit),
    async contentOf(sha) {
      const known = contents.get(sha);
      if (known !== undefined) return known;
      let found: { tree: string; parentTree: string | null } | null = null;
      try {
        const parents = await commitParents(I, sha);
        found = { tree: await treeOf(I, sha), parentTree: parents[0] === undefined ? null : await treeOf(I, parents[0]) };
      } catch {
        found = null; // not a commit of this repository
      }
      if (found !== null) contents.set(sha, found); // an unknown id may name a commit made later
      return found;
    },
    async materialize(worktree, commit, from) {
      await git(worktree, ['fetch', '-q', '--no-tags', from, commit]);
      await git(worktree, ['read-tree', '-u', '--reset', commit]);
    },
    async deleteAttemptBranches(attemptIds) {
      const rest: string[] = [];
      for (const id of attemptIds) if ((await updateOwnRef(I, ATTEMPT_BRANCH_PREFIX + id, null)) === null) rest.push(id);
      if (rest.length === 0) return;
      const input = rest.map((id) => `delete ${ATTEMPT_BRANCH_PREFIX}${id}\n`).join('');
      await git(I, ['update-ref', '--stdin'], { input });
    },
    commitAttempt: (branch, baseHead, worktree, message, date) =>
      commitAttempt(I, worktree, branch, baseHead, message, date, { maxFileBytes: o.limits.maxFileBytes, ...(o.limits.maxFiles !== undefined ? { maxFiles: o.limits.maxFiles } : {}), indexFile: join(o.indexDir, `${branch.slice(ATTEMPT_BRANCH_PREFIX.length)}.index`) }),
    removeAttemptWorktree: (attemptId) => removeWorkspace(I, join(o.worktreesDir, attemptId)),
    async keptAttemptWorktree(attemptId) {
      const worktree = join(o.worktreesDir, attemptId);
      return existsSync(join(worktree, '.git', 'HEAD')) ? worktree : null;
    },
    candidateProblem: (base, commit, judged) => candidateProblem(I, base, commit, o.limits, judged),
    async integrateAndVerify(jobId, head, candidates, date, commands, opts = {}) {
      // One pass: apply onto head in a fresh detached workspace, verify there (cache first), clean up.
      // A candidate the integrator no longer has (its repository was lost and made again from the
      // published refs) fails the job like a conflict: the node's next attempt makes it again.
      const lost = await missingObjects(I, candidates);
      if (lost.length > 0) {
        const conflict = { argv: ['git', 'cat-file', '-e', lost[0]!], output: Buffer.from(`missing: ${lost.join(' ')}\n`), paths: [], durationMs: 0 };
        return { ok: false as const, reason: `candidate ${lost[0]!.slice(0, 12)} is missing from the integrator's repository (lost with it; made again from the published refs): the node is attempted again`, conflict };
      }
      const once = async () => {
        const applied = await integrateCandidates(I, o.workspacesDir, jobId, head, candidates, date, opts.layers ?? []);
        if (applied.kind === 'conflict') {
          const onto = applied.layer === null && (opts.layers ?? []).length > 0 ? `onto ${head.slice(0, 12)} with ${opts.layers!.map((l) => l.jobId).join(', ')}` : `onto ${head.slice(0, 12)}`;
          const what = applied.layer === null ? `candidate ${applied.candidate.slice(0, 12)} does not apply ${onto}` : `candidate ${applied.candidate.slice(0, 12)} of ${applied.layer} (below this job) does not apply`;
          const conflict = { argv: ['git', 'cherry-pick', applied.candidate], output: Buffer.from(applied.output), paths: applied.paths, durationMs: applied.durationMs };
          return { ok: false as const, reason: `${what}: ${applied.paths.length > 0 ? `conflicts in ${applied.paths.join(', ')}` : applied.detail.split('\n')[0] ?? ''}`, conflict };
        }
        try {
          const run = await verifyWithCache({
            workspace: applied.workspace, gitDir: applied.gitDir, tree: applied.tree, commands, env: o.verifyEnv, timeoutMs: o.verifyTimeoutMs,
            cache: o.cache ?? null, run: o.runVerification, ignoredFiles: o.ignoredFiles ?? 'dirty', fresh: true, ...(o.phases !== undefined ? { phases: o.phases } : {}), ...(opts.reportFiles !== undefined ? { reportFiles: opts.reportFiles } : {}),
          });
          return { ok: true as const, resultCommit: applied.resultCommit, tree: applied.tree, under: applied.under, verification: run as VerificationRun };
        } finally {
          await removeWorkspace(I, applied.workspace);
        }
      };
      const first = await once();
      if (!first.ok || first.verification.passed || opts.retestOnFailure !== true) return first;
      // Retest the same tree once before anyone is blamed (a flaky command, R-25). The same
      // inputs give the same result commit; the evidence keeps both runs, failing one first.
      const second = await once();
      if (!second.ok) return second;
      return {
        ...second,
        verification: {
          ...second.verification,
          ...(second.verification.passed ? {} : { reason: `${second.verification.reason ?? 'failed'} (failed twice on the same tree)` }),
          commands: [...first.verification.commands, ...second.verification.commands],
          retested: true,
          lastRunStart: first.verification.commands.length,
        },
      };
    },
    async checkHead(runId, head, commands, reportFiles) {
      const workspace = join(o.workspacesDir, runId);
      await addDetachedWorkspace(I, workspace, head);
      try {
        const tree = await treeOf(I, head);
        const run = await verifyWithCache({
          workspace, gitDir: workspaceGitDir(workspace), tree, commands, env: o.verifyEnv, timeoutMs: o.verifyTimeoutMs,
          cache: o.cache ?? null, run: o.runVerification, ignoredFiles: o.ignoredFiles ?? 'dirty', fresh: true, ...(o.phases !== undefined ? { phases: o.phases } : {}), ...(reportFiles !== undefined ? { reportFiles } : {}),
        });
        return { tree, verification: run as VerificationRun };
      } finally {
        await removeWorkspace(I, workspace);
      }
    },
    holdoutCommit: (under, result, tests, date) => holdoutCommit(I, under, result, tests, date),
    readRef: (ref) => readRef(I, ref),
    async promote(ref, newCommit, expectedOld) {
      const r = await promote(I, ref, newCommit, expectedOld);
      if (r !== 'promoted') return { ok: false, actual: r.conflict };
      // A user ref elsewhere is left for the next step's R-33 check, which records the repair.
      await publishRef(o.repo, I, ref, newCommit, expectedOld);
      return { ok: true };
    },
    observeRefs: (ref, withAttempts) => observeRefs(o.repo, I, ref, withAttempts),
    async repairRef(repair) {
      if (repair.where === 'published') {
        if (repair.expected === null) await git(o.repo, ['update-ref', '-d', repair.ref]);
        else await publishRef(o.repo, I, repair.ref, repair.expected, null);
        return;
      }
      if ((await updateOwnRef(I, repair.ref, repair.expected)) !== null) return;
      if (repair.expected === null) await git(I, ['update-ref', '-d', repair.ref]);
      else await git(I, ['update-ref', '-m', 'longbuild: repair (R-33)', repair.ref, repair.expected]);
    },
  };
}

/** The refs R-33 compares with the log: the integration ref in both repositories, and (when asked) the attempt branches. */
export async function observeRefs(userRepo: string, integratorRepo: string, ref: string, withAttempts: boolean): Promise<ObservedRefs> {
  const integration = await readRef(integratorRepo, ref);
  const published = await readRef(userRepo, ref);
  if (!withAttempts) return { integration, published };
  // Read from the files git keeps them in (no git process at every resume), else listed by git.
  let listed = listRefFiles(await gitCommonDir(integratorRepo), ATTEMPT_BRANCH_PREFIX);
  if (listed === undefined) {
    const out = (await git(integratorRepo, ['for-each-ref', '--format=%(objectname) %(refname)', ATTEMPT_BRANCH_PREFIX])).stdout;
    listed = new Map(out.split('\n').map((line) => line.split(' ')).filter(([sha, name]) => sha && name).map(([sha, name]) => [name!, sha!]));
  }
  const attempts: Record<string, string> = {};
  for (const [name, sha] of listed) attempts[name.slice(ATTEMPT_BRANCH_PREFIX.length)] = sha;
  return { integration, published, attempts };
}

