// Stale git locks of longbuild's own refs (issue 7), found without spawning git where the layout
// says where they are: a main worktree's `.git` directory, the integrator's bare repository.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { clearStaleOwnedLocks } from '../src/adapters/git/stale-locks.js';

const root = mkdtempSync(join(tmpdir(), 'lb-locks-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, stdio: 'ignore' });

function repoWithLocks(name: string): { repo: string; ours: string; users: string } {
  const repo = join(root, name);
  mkdirSync(repo);
  git(repo, 'init', '-q');
  git(repo, 'commit', '-q', '--allow-empty', '-m', 'base');
  mkdirSync(join(repo, '.git', 'refs', 'heads', 'longbuild', 'attempts'), { recursive: true });
  const ours = join(repo, '.git', 'refs', 'heads', 'longbuild', 'attempts', 'n1.1.lock');
  const users = join(repo, '.git', 'refs', 'heads', 'feature.lock');
  writeFileSync(ours, '');
  writeFileSync(users, '');
  return { repo, ours, users };
}

describe('stale locks of longbuild refs', () => {
  it('a main worktree: its .git directory is searched, only longbuild refs are unlocked', async () => {
    const { repo, ours, users } = repoWithLocks('main');
    expect(await clearStaleOwnedLocks(repo, [])).toEqual([ours]);
    expect(existsSync(ours)).toBe(false);
    expect(existsSync(users)).toBe(true);
  });

  it('a linked worktree given as the repository (its .git is a file): git names the common directory, whose longbuild locks are cleared', async () => {
    const { repo, ours, users } = repoWithLocks('linked-main');
    const linked = join(root, 'linked');
    git(repo, 'worktree', 'add', '-q', linked);
    expect(await clearStaleOwnedLocks(linked, [])).toEqual([ours]);
    expect(existsSync(ours)).toBe(false);
    expect(existsSync(users)).toBe(true);
  });

  it('a subdirectory of a work tree: git finds the repository', async () => {
    const { repo, ours } = repoWithLocks('sub-main');
    mkdirSync(join(repo, 'pkg'));
    expect(await clearStaleOwnedLocks(join(repo, 'pkg'), [])).toEqual([ours]);
  });

  it('a bare repository (the integrator) is searched as it is', async () => {
    const { repo } = repoWithLocks('bare-src');
    const bare = join(root, 'bare.git');
    execFileSync('git', ['clone', '-q', '--bare', repo, bare]);
    mkdirSync(join(bare, 'refs', 'heads', 'longbuild'), { recursive: true });
    const lock = join(bare, 'refs', 'heads', 'longbuild', 'integration.lock');
    writeFileSync(lock, '');
    expect(await clearStaleOwnedLocks(bare, [])).toEqual([lock]);
    expect(existsSync(lock)).toBe(false);
  });
});
