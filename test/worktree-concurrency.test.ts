// Several integration jobs start at once (speculation, parallel workers), each adding a detached
// workspace to the integrator's repository. Git's own bookkeeping is not safe against itself: a
// `worktree add` reads every other worktree's admin directory while another add may be half way
// through writing its own ("fatal: failed to read worktrees/job-2/commondir", seen in
// test/parallel-workers.test.ts). The workspace functions take their turn per repository.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { addDetachedWorkspace, removeWorkspace } from '../src/adapters/git/worktrees.js';

const root = mkdtempSync(join(tmpdir(), 'lb-worktrees-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function bareWithCommit(name = 'integrator'): { repo: string; commit: string } {
  const work = join(root, `${name}-work`);
  mkdirSync(work);
  execFileSync('git', ['init', '-q', work]);
  execFileSync('git', ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'base']);
  const repo = join(root, `${name}.git`);
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

  // Whether two adds meet inside git's window depends on timing (the test above catches the
  // mutant worktree-adds-concurrent about one run in two). This one asks for the turns themselves:
  // the real git, behind a wrapper on PATH that logs when each worktree command starts and ends
  // and holds it 100 ms, so that commands started together overlap unless they take turns.
  it('the worktree commands of one repository take turns: 12 adds, then 12 removes, all started at once, never overlap (the real git, timed through a wrapper on PATH)', async () => {
    const { repo, commit } = bareWithCommit('turns');
    const bin = join(root, 'bin');
    mkdirSync(bin);
    const log = join(root, 'worktree-commands.log');
    const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
    writeFileSync(join(bin, 'git'), [
      '#!/bin/sh',
      'for a in "$@"; do [ "$a" = worktree ] && w=1; done',
      `[ -z "$w" ] && exec '${realGit}' "$@"`,
      `echo "start $$" >> '${log}'`,
      'sleep 0.1',
      `'${realGit}' "$@"; code=$?`,
      `echo "end $$" >> '${log}'`,
      'exit $code',
      '',
    ].join('\n'), { mode: 0o755 });
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path ?? ''}`;
    const paths = Array.from({ length: 12 }, (_, i) => join(root, 'turns-workspaces', `job-${i + 1}`));
    try {
      await Promise.all(paths.map((p) => addDetachedWorkspace(repo, p, commit)));
      for (const p of paths) expect(existsSync(join(p, '.git'))).toBe(true);
      await Promise.all(paths.map((p) => removeWorkspace(repo, p)));
      for (const p of paths) expect(existsSync(p)).toBe(false);
    } finally {
      process.env.PATH = path;
    }
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines.filter((l) => l.startsWith('start')).length).toBeGreaterThanOrEqual(paths.length); // the adds (a removal may clear the directory itself)
    let running = 0;
    let most = 0;
    for (const l of lines) {
      running += l.startsWith('start') ? 1 : -1;
      most = Math.max(most, running);
    }
    expect(most, 'worktree commands of one repository running at once').toBe(1);
  });
});
