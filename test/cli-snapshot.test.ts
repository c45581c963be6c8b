/**
 * The CLI started from a V8 start-up snapshot (decision 0028; src/adapters/cli/bundle-entry.ts,
 * src/adapters/fuzz/cli-snapshot.ts), which `longbuild fuzz` starts its cases' runs from. What
 * must hold is that such a process is the CLI: it builds exactly what bin/longbuild.js builds, and
 * reads its arguments, environment and working directory when it runs — nothing of the process
 * that built the snapshot — and that a campaign really starts its cases' runs from it (their
 * command lines, seen in /proc while it runs), or says why not.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildCliSnapshot, type CliSnapshot } from '../src/adapters/fuzz/cli-snapshot.js';
import { fuzz } from '../src/adapters/fuzz/runner.js';
import { reproduceCommand } from '../src/adapters/fuzz/report.js';
import { observeBuild } from '../src/adapters/fuzz/observe.js';
import { compareBuilds } from '../src/commands/fuzz-compare.js';
import { HELIOS, runCli, tempDir, twoMilestoneHelios } from './support/cli.js';

let launch: readonly string[] = [];
const built: { snapshot?: CliSnapshot } = {};

function initialised(dir: string, blueprint: string, name: string): string {
  const repo = join(dir, name);
  mkdirSync(repo);
  execFileSync('git', ['init', '-q', repo]);
  // A fixed date: two builds compared commit for commit must start from the same base commit.
  const date = '2026-01-01T00:00:00Z';
  execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'base'], { env: { ...process.env, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date } });
  const r = runCli(['init', '--blueprint', blueprint], { cwd: repo });
  expect(r.code, r.stderr).toBe(0);
  return repo;
}

/** Command lines of this process's descendants that run node with a start-up snapshot or bin/longbuild.js. */
function cliProcesses(seen: Set<string>): void {
  const parent = new Map<number, number>();
  const lines = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      lines.set(Number(name), readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      // gone meanwhile
    }
  }
  const mine = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  for (const [pid, line] of lines) if (mine(pid) && / run --json/.test(line) && /--snapshot-blob|longbuild\.js/.test(line)) seen.add(line);
}

describe('the CLI started from a start-up snapshot', () => {
  beforeAll(async () => {
    // Built in one place, with an environment that would crash any run that read it (and a
    // spawner setting), to be run elsewhere with another.
    const dir = tempDir('lb-snapshot-');
    built.snapshot = await buildCliSnapshot(dir, { ...process.env, LONGBUILD_CRASH_AT: 'before-append:PlannerInvoked:1', NO_COLOR: '1' } as NodeJS.ProcessEnv);
    if ('launch' in built.snapshot) launch = built.snapshot.launch;
  }, 120_000);

  it('is built for this Node.js', () => {
    expect(built.snapshot).toHaveProperty('launch');
    expect(launch).toEqual(['--snapshot-blob', expect.stringMatching(/cli\.blob$/), '--']);
  });

  it('answers --version, help and a usage error as bin/longbuild.js does', () => {
    const cwd = tempDir();
    for (const args of [['--version'], ['help', 'fuzz'], ['frobnicate'], ['status', '--no-such-flag']]) {
      const plain = runCli(args, { cwd });
      const snap = runCli(args, { cwd, launch });
      expect({ code: snap.code, stdout: snap.stdout, stderr: snap.stderr }, args.join(' ')).toEqual({ code: plain.code, stdout: plain.stdout, stderr: plain.stderr });
    }
  });

  it('builds exactly what bin/longbuild.js builds (the same log, accepted nodes, integration tree, commits, checkpoints), in its own working directory, reading the environment it runs with and not the one the snapshot was built with', async () => {
    const dir = tempDir('lb-snapshot-build-');
    const blueprint = twoMilestoneHelios(dir);
    const a = initialised(dir, blueprint, 'plain');
    const b = initialised(dir, blueprint, 'snapshot');
    const plain = runCli(['run', '--json'], { cwd: a });
    const snap = runCli(['run', '--json'], { cwd: b, launch });
    expect(plain.code, plain.stderr).toBe(0);
    // The snapshot was built with LONGBUILD_CRASH_AT set: a run that read it would have been killed.
    expect({ code: snap.code, signal: snap.signal }, snap.stderr).toEqual({ code: 0, signal: null });
    const [pa, pb] = [JSON.parse(plain.stdout), JSON.parse(snap.stdout)];
    expect(pb.position).toBe(pa.position);
    expect(pb.integrationHead).toBe(pa.integrationHead);
    expect(compareBuilds(await observeBuild(a), await observeBuild(b), { exactCommits: true, concurrent: false })).toEqual([]);
    // And set when it runs, it is honoured.
    const c = initialised(dir, blueprint, 'crashed');
    const crashed = runCli(['run', '--json'], { cwd: c, launch, env: { LONGBUILD_CRASH_AT: 'before-append:PlannerInvoked:1' } });
    expect(crashed.signal).toBe('SIGKILL');
  }, 180_000);

  it('a campaign starts its cases\' runs from it (their command lines), the clean run from bin/longbuild.js, and passes', async () => {
    const seen = new Set<string>();
    const watch = setInterval(() => cliProcesses(seen), 15);
    let report;
    try {
      report = await fuzz({ driver: { blueprint: HELIOS }, points: 3, seed: 5, jobs: 1, snapshot: 'on', startFrom: 'start', env: process.env });
    } finally {
      clearInterval(watch);
    }
    expect(report.failed).toEqual([]);
    expect(report.passed).toBe(3);
    expect(report.snapshot).toEqual({ mode: 'on', used: true, buildMs: expect.any(Number) });
    const lines = [...seen];
    expect(lines.filter((l) => l.includes('--snapshot-blob')).length, lines.join('\n')).toBeGreaterThan(0);
    expect(lines.filter((l) => l.includes('--snapshot-blob')).every((l) => / --snapshot-blob \S+\/cli\.blob -- run --json$/.test(l)), lines.join('\n')).toBe(true);
    // bin/longbuild.js ran the clean run only (the cases' three interrupted runs and resumes did not).
    expect(lines.filter((l) => l.includes('longbuild.js')).length, lines.join('\n')).toBeLessThanOrEqual(1);
    // A failure found so is reproduced so: its command asks for the snapshot (a sample of one case would not build it).
    expect(reproduceCommand({ blueprint: 'b.json' }, { fault: 'kill', point: 'after-effect:worker', occurrence: 1 }, undefined, false, report.snapshot.used)).toBe('longbuild fuzz --blueprint b.json --only after-effect:worker:1 --snapshot on');
  }, 300_000);

  it('one that cannot be built leaves the cases\' runs on bin/longbuild.js, and the report says why', async () => {
    const dir = tempDir('lb-snapshot-broken-');
    const broken = join(dir, 'broken.cjs');
    writeFileSync(broken, "throw new Error('this bundle cannot be loaded');\n");
    const report = await fuzz({ driver: { blueprint: HELIOS }, points: 1, seed: 5, jobs: 1, snapshot: 'on', snapshotSource: broken, startFrom: 'start', env: process.env });
    expect(report.failed).toEqual([]);
    expect(report.snapshot.used).toBe(false);
    expect(report.snapshot.reason).toMatch(/^node --build-snapshot exited 1: Error: this bundle cannot be loaded$/);
    const missing = await fuzz({ driver: { blueprint: HELIOS }, points: 1, seed: 5, jobs: 1, snapshot: 'on', snapshotSource: join(dir, 'absent.cjs'), startFrom: 'start', env: process.env });
    expect(missing.snapshot).toEqual({ mode: 'on', used: false, reason: `${join(dir, 'absent.cjs')} is missing (run \`npm run build\` in the package)` });
    // 'auto' with fewer cases than repay a snapshot builds none.
    const few = await fuzz({ driver: { blueprint: HELIOS }, points: 2, seed: 5, jobs: 1, startFrom: 'start', env: process.env });
    expect(few.snapshot).toEqual({ mode: 'auto', used: false });
  }, 300_000);
});
