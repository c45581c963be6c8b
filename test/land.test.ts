import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli } from './support/cli.js';

// `longbuild land` (issue 14): the build's result reaches the user's branch — fast-forward when it
// can, a merge when the branch moved on, nothing changed when a merge conflicts.

const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
const root = mkdtempSync(join(tmpdir(), 'lb-land-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let repo = '';
let head = '';
let base = '';
const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=u', '-c', 'user.email=u@u', ...args], { cwd: repo, encoding: 'utf8' }).trim();

beforeAll(() => {
  repo = join(root, 'repo');
  cliJson(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root });
  const run = runCli(['run', '--repo', repo], { cwd: root });
  expect(run.code).toBe(0);
  expect(run.stdout).toContain('`longbuild land` brings it into your branch');
  head = git('rev-parse', 'refs/heads/longbuild/integration');
  base = git('rev-parse', 'main');
});

/** Put `main` back where the build started, with a commit of the user's on top. */
function userCommitOnBase(file: string, text: string): string {
  git('checkout', '-q', 'main');
  git('reset', '-q', '--hard', base);
  mkdirSync(dirname(join(repo, file)), { recursive: true });
  writeFileSync(join(repo, file), text);
  git('add', file);
  git('commit', '-q', '-m', `user: ${file}`);
  return git('rev-parse', 'HEAD');
}

describe('land: the integration head into the user\'s branch', () => {
  it('fast-forwards the checked-out branch (working tree included), then says it is up to date', () => {
    git('checkout', '-q', 'main');
    git('reset', '-q', '--hard', base);
    const landed = cliJson(['land', '--repo', repo], { cwd: root });
    expect(landed).toMatchObject({ into: 'main', from: base, to: head, mode: 'fast-forward', completed: true });
    expect(git('rev-parse', 'main')).toBe(head);
    expect(git('status', '--porcelain')).toBe('');
    const first = git('ls-tree', '-r', '--name-only', head).split('\n')[0]!;
    expect(readFileSync(join(repo, first), 'utf8')).toBe(git('show', `${head}:${first}`) + '\n');
    expect(cliJson(['land', '--repo', repo], { cwd: root }).mode).toBe('up-to-date');
    expect(cliJson(['status', '--repo', repo], { cwd: root }).integrationRef).toBe('refs/heads/longbuild/integration');
  });

  it('merges into a checked-out branch that moved on; creates a branch that does not exist', () => {
    const mine = userCommitOnBase('USER.md', 'mine\n');
    const landed = cliJson(['land', '--repo', repo], { cwd: root });
    expect(landed).toMatchObject({ into: 'main', from: mine, mode: 'merge' });
    expect(git('rev-list', '--parents', '-n', '1', 'main').split(' ').slice(1)).toEqual([mine, head]);
    expect(git('ls-tree', '-r', '--name-only', 'main').split('\n')).toEqual(expect.arrayContaining(['USER.md', ...git('ls-tree', '-r', '--name-only', head).split('\n')]));
    expect(cliJson(['land', '--repo', repo, '--into', 'release'], { cwd: root })).toMatchObject({ mode: 'created', from: null, to: head });
    expect(git('rev-parse', 'release')).toBe(head);
  });

  it('refuses, changing nothing, when the merge conflicts, when a branch not checked out has diverged, and on a detached HEAD', () => {
    const path = git('ls-tree', '-r', '--name-only', head).split('\n')[0]!;
    const mine = userCommitOnBase(path, 'the user wrote this first\n');
    const conflict = runCli(['land', '--repo', repo], { cwd: root });
    expect(conflict.code).toBe(1);
    expect(conflict.stderr.trim()).toMatch(/^longbuild: land: merging into main failed, nothing changed: /);
    expect(conflict.stderr.trim().split('\n')).toHaveLength(1);
    expect([git('rev-parse', 'main'), git('status', '--porcelain')]).toEqual([mine, '']);

    git('checkout', '-q', '-b', 'side', base);
    writeFileSync(join(repo, 'SIDE.md'), 'side\n');
    git('add', 'SIDE.md');
    git('commit', '-q', '-m', 'side');
    const sideTip = git('rev-parse', 'side');
    git('checkout', '-q', 'main');
    const diverged = runCli(['land', '--repo', repo, '--into', 'side'], { cwd: root });
    expect([diverged.code, diverged.stderr.trim()]).toEqual([1, 'longbuild: land: side has commits the integration head lacks; check it out and run `longbuild land` there to merge']);
    expect(git('rev-parse', 'side')).toBe(sideTip);

    git('checkout', '-q', '--detach');
    const detached = runCli(['land', '--repo', repo], { cwd: root });
    expect([detached.code, detached.stderr.split('\n')[0]]).toEqual([2, 'longbuild: land: the repository has no branch checked out (detached HEAD); give --into BRANCH']);
    expect(runCli(['land', '--repo', repo, '--into', 'longbuild/integration'], { cwd: root }).code).toBe(2);
    git('checkout', '-q', 'main');
  });
});
