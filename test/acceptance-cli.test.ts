/**
 * System-level acceptance (issue 16) through the CLI, real processes and real git: acceptance
 * commands run (sandboxed, cached like verification) on the head of every checkpoint; a failing
 * one keeps the build from completing and makes the planner plan a repair window; a failure the
 * code cannot fix blocks the build, saying why, until an operator runs it again (`longbuild accept`).
 * The step-level specs are test/acceptance.test.ts; the resume properties test/step-model-double.test.ts.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const events = (repo: string, type: string): any[] => runCli(['log', '--type', type, '--json'], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l).data);

function blueprint(extra: Record<string, unknown>): string {
  const path = join(tempDir(), 'blueprint.json');
  writeFileSync(path, JSON.stringify({
    request: { goal: 'a module that passes an end-to-end check' }, verify: [['node', '-e', 'process.exit(0)']], detailedWindow: 1,
    milestones: [
      { id: 'core', title: 'core', nodes: [{ id: 'core-mod', kind: 'writable', deps: [], files: { 'src/core.txt': 'core\n' } }] },
      { id: 'more', title: 'more', nodes: [{ id: 'more-mod', kind: 'writable', deps: [], files: { 'src/more.txt': 'more\n' } }] },
    ],
    ...extra,
  }));
  return path;
}

describe('system-level acceptance through the CLI (issue 16)', () => {
  it('acceptance that fails until a repair window adds what it checks: every checkpoint is checked, the failure is evidence, the repair is planned and integrated, and the build completes on a head that passes', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint({
      acceptance: [['node', '-e', "require('fs').accessSync('e2e/ok.txt'); console.log('e2e ok')"]],
      repairs: [{ id: 'e2e-fix', title: 'make the end-to-end check pass', nodes: [{ id: 'e2e-ok', kind: 'writable', deps: [], files: { 'e2e/ok.txt': 'ok\n' } }] }],
    })], { cwd: repo });
    const run = cliJson(['run'], { cwd: repo });
    expect(run.outcome).toBe('horizon_complete');
    const started = events(repo, 'AcceptanceStarted');
    const finished = events(repo, 'AcceptanceFinished');
    expect(started.map((s) => s.milestoneId)).toEqual(['core', 'more', 'e2e-fix']);
    expect(finished.map((f) => f.passed)).toEqual([false, false, true]);
    // The failing run's evidence is what the command printed; the planner was asked for a repair.
    const ev = cliJson(['evidence', 'accept-1'], { cwd: repo });
    expect(ev).toMatchObject({ kind: 'acceptance', outcome: 'failed' });
    expect(ev.streams.map((s: { text: string }) => s.text).join('\n')).toMatch(/ENOENT.*e2e\/ok\.txt/);
    expect(events(repo, 'PlannerInvoked').map((p) => p.purpose)).toEqual(['seal', 'renew', 'repair']);
    expect(git(repo, 'show', 'refs/heads/longbuild/integration:e2e/ok.txt')).toBe('ok');
    const status = cliJson(['status'], { cwd: repo });
    expect(status.acceptance).toMatchObject({ runs: 3, latest: { runId: 'accept-3', milestoneId: 'e2e-fix', passed: true } });
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  });

  it('a failure the code cannot fix blocks the build (exit 1, one line naming it, its evidence and `longbuild accept`); fixed outside, `longbuild accept` and `run` complete it', () => {
    const flag = join(tempDir(), 'staging-up');
    const repo = tempDir();
    // The flag lives in the private /tmp the sandbox hides: this build runs unsandboxed (the flow is under test here).
    cliJson(['init', '--blueprint', blueprint({ acceptance: [['node', '-e', `require('fs').accessSync(${JSON.stringify(flag)})`]], acceptanceRepairs: 0, sandbox: 'off' })], { cwd: repo });
    const blocked = runCli(['run'], { cwd: repo });
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(/acceptance failed on [0-9a-f]{12} \(milestone 'more'\): .*exited with 1; no repair window is allowed \(acceptanceRepairs 0\); see `longbuild evidence accept-2`; `longbuild accept` runs it again/);
    expect(cliJson(['status'], { cwd: repo }).blocked).toMatch(/^acceptance failed/);
    expect(runCli(['accept'], { cwd: tempDir() }).stderr).toMatch(/no build in/);
    writeFileSync(flag, 'up\n');
    const asked = cliJson(['accept', '--reason', 'staging is back'], { cwd: repo });
    expect(asked.previous).toMatchObject({ runId: 'accept-2', passed: false });
    expect(events(repo, 'AcceptanceRequested')).toEqual([expect.objectContaining({ reason: 'staging is back', operator: expect.objectContaining({ action: 'accept' }) })]);
    const again = runCli(['accept'], { cwd: repo });
    expect([again.code, again.stderr.trim()]).toEqual([1, 'longbuild: an acceptance run is already asked for: `longbuild run` makes it']);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    expect(events(repo, 'AcceptanceStarted').at(-1)).toMatchObject({ runId: 'accept-3', milestoneId: null });
    expect(events(repo, 'AcceptanceFinished').at(-1)).toMatchObject({ runId: 'accept-3', passed: true });
    expect(runCli(['accept'], { cwd: repo }).stderr.trim()).toBe('longbuild: the build is complete: its acceptance passed');
    rmSync(flag);
    expect(existsSync(flag)).toBe(false);
  });
});
