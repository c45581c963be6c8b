import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

// Following a build (issue 14): a piped `run` shows every step as it happens, `--progress ndjson`
// streams steps for scripts, `log --follow` and `status --watch` print as the log moves.

/** A real child process of the CLI; resolves with its output once it exits. */
function start(args: string[], cwd: string) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
  return { child, done, stdout: () => stdout };
}

function helios(): string {
  const repo = tempDir();
  cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
  return repo;
}

describe('following a build', () => {
  it('a piped run prints one line per step on stderr (step, duration, outcome, detail), the result on stdout', () => {
    const repo = helios();
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(0);
    const lines = r.stderr.trim().split('\n');
    const steps = Number(/after (\d+) steps/.exec(r.stdout)![1]);
    expect(lines).toHaveLength(steps);
    lines.forEach((l, i) => expect(l).toMatch(new RegExp(`^\\[ *${i + 1}\\] +\\d+\\.\\ds [a-z_]+ +\\S`)));
    expect(lines.at(-1)).toMatch(/horizon_complete/);
    expect(r.stderr).not.toMatch(/\r|\x1b/);
  });

  it('run --json --progress ndjson streams one step object per step, the result last; ndjson without --json is a usage error', () => {
    const repo = helios();
    const r = runCli(['run', '--json', '--progress', 'ndjson'], { cwd: repo });
    expect(r.code).toBe(0);
    const objects = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const result = objects.at(-1);
    const steps = objects.slice(0, -1);
    expect(result).toMatchObject({ outcome: 'horizon_complete' });
    expect(steps).toHaveLength(result.steps);
    expect(steps.every((s) => s.type === 'step' && typeof s.elapsedMs === 'number')).toBe(true);
    expect(steps.map((s) => s.step)).toEqual(steps.map((_, i) => i + 1));
    // The last step is the build's completion; the result's position is the log's head, after what
    // the run recorded as it ended (R-62's ProvenanceRecorded).
    const logged = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; position: number });
    expect(steps.at(-1)).toMatchObject({ outcome: 'horizon_complete', position: logged.find((e) => e.type === 'BuildCompleted')!.position });
    expect(result.position).toBe(logged.length);
    expect(logged.slice(steps.at(-1).position).map((e) => e.type)).toEqual(['ProvenanceRecorded']);
    const positions = steps.map((s) => s.position);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    const bad = runCli(['run', '--progress', 'ndjson'], { cwd: helios() });
    expect([bad.code, bad.stderr.trim().split('\n')[0]]).toEqual([2, 'longbuild: run: --progress ndjson streams JSON on stdout; give --json as well']);
    expect(runCli(['run', '--progress', 'loud'], { cwd: helios() }).stderr).toMatch(/--progress must be one of tty, lines, ndjson, off, got 'loud'/);
  });

  it('log --follow prints the events a running build appends, as they come, and ends after BuildCompleted: the same lines log prints', async () => {
    const repo = helios();
    const follower = start(['log', '--follow', '--json'], repo);
    // The follower has printed the first event before the build starts.
    for (let i = 0; i < 2400 && follower.stdout() === ''; i++) await new Promise((r) => setTimeout(r, 25));
    expect(follower.stdout().trim().split('\n')).toHaveLength(1);
    const run = start(['run'], repo);
    const [followed, ran] = await Promise.all([follower.done, run.done]);
    expect(ran.code).toBe(0);
    expect(followed.code).toBe(0);
    // The same lines log prints, through BuildCompleted; what the run records as it ends (R-62's
    // ProvenanceRecorded) is printed when it was there by the follower's last read.
    const logged = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n');
    const completed = logged.findIndex((l) => JSON.parse(l).type === 'BuildCompleted');
    const got = followed.stdout.trim().split('\n');
    expect(got.length).toBeGreaterThanOrEqual(completed + 1);
    expect(got).toEqual(logged.slice(0, got.length));
  }, 120_000);

  it('log --follow ends with exit 0 on Ctrl-C', async () => {
    const repo = helios();
    const follower = start(['log', '--follow'], repo);
    for (let i = 0; i < 2400 && follower.stdout() === ''; i++) await new Promise((r) => setTimeout(r, 25));
    follower.child.kill('SIGINT');
    const r = await follower.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/BuildInitialized/);
  });

  it('status --watch --json prints the status each time the log moves, and ends when the build completes', async () => {
    const repo = helios();
    const watcher = start(['status', '--watch', '--json'], repo);
    for (let i = 0; i < 2400 && watcher.stdout() === ''; i++) await new Promise((r) => setTimeout(r, 25));
    const run = start(['run'], repo);
    const [watched, ran] = await Promise.all([watcher.done, run.done]);
    expect(ran.code).toBe(0);
    expect(watched.code).toBe(0);
    const statuses = watched.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(statuses.length).toBeGreaterThanOrEqual(2);
    expect(statuses[0].position).toBe(1);
    // It ends at the first status that is complete: the BuildCompleted event's, or a later one —
    // the run records the build's provenance after it (decision 0044), which a watcher that looked
    // between the two does not wait for.
    const completedAt = (runCli(['log', '--type', 'BuildCompleted', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as { position: number }))[0]!.position;
    const last = statuses.at(-1);
    expect(last.completed).toBe(true);
    expect(last.position).toBeGreaterThanOrEqual(completedAt);
    expect(last.position).toBeLessThanOrEqual(cliJson(['status'], { cwd: repo }).position as number);
    expect(statuses.filter((st) => st.completed === true)).toHaveLength(1);
    const positions = statuses.map((s) => s.position);
    expect(new Set(positions).size).toBe(positions.length);
  }, 120_000);
});
