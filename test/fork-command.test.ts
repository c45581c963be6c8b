/**
 * Fork of a build driven by real planner and worker commands (R-41, issue 18). Its clock is the
 * wall clock, so the fork's commits are not the parent's (other dates): what makes the parent's
 * results reusable is that input digests read commit ids as the trees they name. Checked here with
 * examples/scripts, where every call is a real child process.
 */
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, ROOT, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const logged = (repo: string) => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as { position: number; type: string; data: Record<string, unknown> });

describe('fork of a command-driven build (R-41)', () => {
  it('an unchanged fork adopts every call after the point although its commits are its own; a changed request is recorded and redoes the calls that see it', () => {
    const cfg = tempDir('longbuild-fork-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
    const parent = tempDir();
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: parent });
    expect(cliJson(['run'], { cwd: parent }).outcome).toBe('horizon_complete');
    const events = logged(parent);
    // Just after the first promotion: the calls after it are made on a head the fork commits anew.
    const at = events.find((e) => e.type === 'IntegrationPromoted')!.position;
    const fork = join(tempDir(), 'fork');
    const made = cliJson(['fork', '--at', String(at), '--to', fork], { cwd: parent });
    expect(made.parent.position).toBe(at);
    expect(made.reusable.worker).toBeGreaterThan(0);
    expect(cliJson(['run'], { cwd: fork }).outcome).toBe('horizon_complete');
    const forked = logged(fork);
    const after = forked.filter((e) => e.position > at + 1 && (e.type === 'AttemptFinished' || e.type === 'PlannerReturned'));
    expect(after.length).toBeGreaterThan(1);
    expect(after.filter((e) => e.data.reused === undefined).map((e) => e.type)).toEqual([]);
    // Other commits (wall-clock dates), the same trees.
    expect(git(fork, 'rev-parse', 'refs/heads/longbuild/integration')).not.toBe(git(parent, 'rev-parse', 'refs/heads/longbuild/integration'));
    expect(git(fork, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(git(parent, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'));
    const status = cliJson(['status'], { cwd: fork });
    expect(status.calls.reused.worker).toBe(after.filter((e) => e.type === 'AttemptFinished').length);
    expect(status.fork.position).toBe(at);
    expect(cliJson(['verify'], { cwd: fork }).ok).toBe(true);

    // A changed request: recorded in ForkedFrom, seen by every later call, so every later call is made.
    const request = join(cfg, 'request-b.json');
    writeFileSync(request, JSON.stringify({ title: 'greetings', goal: 'a greeting library, one feature per milestone', features: ['hello', 'goodbye', 'welcome'], tone: 'formal' }));
    const changed = join(tempDir(), 'changed');
    expect(cliJson(['fork', '--at', String(at), '--to', changed, '--request', request, '--config', join(cfg, 'longbuild.config.json')], { cwd: parent }).driverChanged).toBe(true);
    const forkedFrom = logged(changed).find((e) => e.type === 'ForkedFrom')!;
    expect((forkedFrom.data.request as { tone?: string }).tone).toBe('formal');
    expect(cliJson(['run'], { cwd: changed }).outcome).toBe('horizon_complete');
    const redone = logged(changed).filter((e) => e.position > at + 1 && (e.type === 'AttemptFinished' || e.type === 'PlannerReturned'));
    expect(redone.length).toBeGreaterThan(0);
    expect(redone.filter((e) => e.data.reused !== undefined)).toEqual([]);
    expect(cliJson(['verify'], { cwd: changed }).ok).toBe(true);
  }, 180_000);
});
