/**
 * Issue 16: workers started from the same head finish in any order; their candidates are applied
 * onto the head as it is when they are integrated. A candidate whose changes still apply is
 * rebased by the integrator (a three-way cherry-pick onto the moved head, verified there); one
 * that conflicts is never merged blind: its integration fails with the conflict as evidence, and
 * its worker gets it back in the same worktree — its own changes applied on the new head, the
 * conflicting files holding git's markers, named in `previousFailure.conflicts` — and resolves it.
 * Real git, real worker processes in the sandbox, two workers in flight.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

const PLANNER = `import { readFileSync } from 'node:fs';
readFileSync(0, 'utf8');
process.stdout.write(JSON.stringify({ detailed: [{ id: 'edits', title: 'Two edits', nodes: [
  { id: 'left', kind: 'writable', deps: [], title: 'the left edit' },
  { id: 'right', kind: 'writable', deps: [], title: 'the right edit' },
] }], coarse: [] }));
`;

/**
 * Each node rewrites its line of shared.txt (`lines`: node -> line index); it prints the
 * previousFailure it was given (kept as evidence). Given conflicts, it resolves them by keeping
 * both sides.
 */
const worker = (lines: Record<string, number>) => `import { readFileSync, writeFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(0, 'utf8'));
console.log(JSON.stringify({ node: p.nodeId, attempt: p.attempt, previousFailure: p.previousFailure ?? null }));
const lines = readFileSync('shared.txt', 'utf8').split('\\n');
if (p.previousFailure?.conflicts?.includes('shared.txt')) {
  writeFileSync('shared.txt', lines.filter((l) => !/^(<<<<<<<|=======|>>>>>>>)/.test(l)).join('\\n'));
} else {
  lines[${JSON.stringify(lines)}[p.nodeId]] = p.nodeId.toUpperCase();
  writeFileSync('shared.txt', lines.join('\\n'));
}
`;

function setup(base: string, lines: Record<string, number>): string {
  const cfg = tempDir('longbuild-cfg-');
  writeFileSync(join(cfg, 'planner.mjs'), PLANNER);
  writeFileSync(join(cfg, 'worker.mjs'), worker(lines));
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'two edits of one file' }));
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', './planner.mjs'] }, worker: { command: ['node', './worker.mjs'], rework: true },
    verify: [['true']], detailedWindow: 1, concurrency: 2, maxAttempts: 3,
  }));
  const repo = tempDir();
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'shared.txt'), base);
  git(repo, 'add', 'shared.txt');
  git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base');
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return repo;
}

const events = (repo: string, type: string): any[] => runCli(['log', '--type', type, '--json'], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l).data);

describe('candidates on a moved head (issue 16)', () => {
  it('edits of different lines of one file, made in parallel from the same head, are both rebased onto the moved head and accepted without a failure', () => {
    const repo = setup('one\ntwo\nthree\n', { left: 0, right: 2 });
    const run = cliJson(['run'], { cwd: repo });
    expect(run.outcome).toBe('horizon_complete');
    // Both workers started from the same head (they ran at once) ...
    const started = events(repo, 'AttemptStarted');
    expect(started.map((s) => s.attempt)).toEqual([1, 1]);
    expect(new Set(started.map((s) => s.baseHead)).size).toBe(1);
    // ... and both edits are on the integration head, with no failure and no retry.
    expect(git(repo, 'show', 'refs/heads/longbuild/integration:shared.txt')).toBe('LEFT\ntwo\nRIGHT');
    expect(events(repo, 'IntegrationFailed')).toEqual([]);
  });

  it('edits of the same line conflict: the second is not merged blind; its worker reworks it with the conflict as evidence, resolves the markers, and both edits are accepted', () => {
    const repo = setup('base\n', { left: 0, right: 0 });
    const run = cliJson(['run'], { cwd: repo });
    expect(run.outcome).toBe('horizon_complete');
    const failed = events(repo, 'IntegrationFailed');
    expect(failed).toHaveLength(1);
    expect(failed[0].reason).toMatch(/does not apply onto [0-9a-f]{12}.*: conflicts in shared\.txt/);
    const loser: string = failed[0].nodeIds[0];
    // The failed job's evidence is the conflict itself: what git said, and the file with its markers.
    const ev = cliJson(['evidence', failed[0].jobId], { cwd: repo });
    const conflict = ev.streams.map((s: { text: string }) => s.text).join('\n');
    expect(conflict).toMatch(/CONFLICT \(content\): Merge conflict in shared\.txt/);
    expect(conflict).toMatch(/<<<<<<< [\s\S]*=======[\s\S]*>>>>>>> /);
    // The retry got the same worktree back: its own change applied on the new head, the conflict named.
    const second = JSON.parse(cliJson(['evidence', `${loser}.2`], { cwd: repo }).streams[0].text.trim());
    expect(second.previousFailure).toMatchObject({ conflicts: ['shared.txt'], reworks: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(second.previousFailure.output).toMatch(/CONFLICT \(content\)/);
    // Resolved by keeping both sides: both edits on the integration head, no markers left.
    const result = git(repo, 'show', 'refs/heads/longbuild/integration:shared.txt');
    expect(result.split('\n').sort()).toEqual(['LEFT', 'RIGHT']);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  });
});
