// Several integration jobs start at once (speculation, parallel workers), each adding a detached
// workspace to the integrator's repository. Git's own bookkeeping is not safe against itself: a
// `worktree add` reads every other worktree's admin directory while another add may be half way
// through writing its own ("fatal: failed to read worktrees/job-2/commondir", seen in
// test/parallel-workers.test.ts). The workspace functions take their turn per repository.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addDetachedWorkspace, removeWorkspace } from '../src/adapters/git/worktrees.js';

const root = mkdtempSync(join(tmpdir(), 'lb-worktrees-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function bareWithCommit(): { repo: string; commit: string } {
  const work = join(root, 'work');
  mkdirSync(work);
  execFileSync('git', ['init', '-q', work]);
  execFileSync('git', ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'base']);
  const repo = join(root, 'integrator.git');
  execFileSync('git', ['clone', '-q', '--bare', work, repo]);
  return { repo, commit: execFileSync('git', ['-C', repo, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim() };
}

describe('workspaces added and removed concurrently', () => {
  it('24 workspaces added at once (five rounds, removed at once in between) all succeed, each registered and checked out', async () => {
    const { repo, commit } = bareWithCommit();
    const paths = Array.from({ length: 24 }, (_, i) => join(root, 'workspaces', `job-${i + 1}`));
    for (let round = 0; round < 5; round++) {
      await Promise.all(paths.map((p) => addDetachedWorkspace(repo, p, commit)));
      const listed = execFileSync('git', ['-C', repo, 'worktree', 'list', '--porcelain'], { encoding: 'utf8' });
      for (const p of paths) {
        expect(listed).toContain(`worktree ${p}\n`);
        expect(existsSync(join(p, '.git'))).toBe(true);
      }
      await Promise.all(paths.map((p) => removeWorkspace(repo, p)));
      for (const p of paths) expect(existsSync(p)).toBe(false);
    }
  });
});
