/** A user repository, the integrator's own repository made from it, and attempt commits. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attemptBranch, commitAttempt, ensureIntegratorRepo, ensureRepo, prepareAttemptWorktree } from '../../src/adapters/git/git.js';
import { runProcess } from '../../src/adapters/process/run-process.js';
import type { VerificationRunner } from '../../src/adapters/cache/cached-verification.js';

export const FIXTURE_DATE = '2025-01-01T00:00:00Z';

export function tmpDir(prefix = 'lb-git-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** `repo` is the integrator's repository; `user` the user's, whose main is its integration ref. */
export async function newRepo(): Promise<{ repo: string; user: string; head: string; wt: string; ws: string }> {
  const user = tmpDir();
  const head = await ensureRepo(user, FIXTURE_DATE);
  const repo = join(user, '.longbuild', 'integrator.git');
  await ensureIntegratorRepo(repo, user, 'refs/heads/main');
  return { repo, user, head, wt: join(user, '.longbuild', 'worktrees'), ws: join(user, '.longbuild', 'workspaces') };
}

export const commitOpts = () => ({ maxFileBytes: 1024 * 1024, indexFile: join(tmpDir(), 'index') });

/** Make an attempt commit writing `files` on top of base (the host commits the clone's files). */
export async function attemptCommit(repo: string, wt: string, id: string, base: string, files: Record<string, string>, date = FIXTURE_DATE) {
  const p = await prepareAttemptWorktree(repo, wt, id, attemptBranch(id), base);
  for (const [f, c] of Object.entries(files)) {
    mkdirSync(join(p.worktree, f, '..'), { recursive: true });
    writeFileSync(join(p.worktree, f), c);
  }
  const c = await commitAttempt(repo, p.worktree, p.branch, base, `longbuild: ${id}`, date, commitOpts());
  if (c.kind !== 'committed') throw new Error(`nothing committed: ${JSON.stringify(c)}`);
  return { commit: c.commit, tree: c.tree };
}

/** Verification commands run directly, without a sandbox (unit tests of the pipeline). */
export const directRunner: VerificationRunner = (o) => runProcess(o);
