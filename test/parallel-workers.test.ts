/**
 * Issue 16 through the CLI: with `concurrency` K > 1 a build keeps several worker calls in flight
 * (real git, real processes), and a SIGKILL while several are in flight resumes to the same tree.
 * The properties over random DAGs, K and durations are in test/step-model-double.test.ts; the
 * speed-up is measured by bench/parallel.mjs (README).
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';
import { execFileSync } from 'node:child_process';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

const N = 6;
function blueprint(dir: string, concurrency: number | undefined, maxBatch = 1): string {
  const path = join(dir, 'blueprint.json');
  writeFileSync(path, JSON.stringify({
    request: { goal: 'six independent modules' }, verify: [['node', '-e', 'process.exit(0)']], detailedWindow: 1, maxBatch, ...(concurrency === undefined ? {} : { concurrency }), sandbox: 'off',
    milestones: [{ id: 'm1', title: 'modules', nodes: Array.from({ length: N }, (_, i) => ({ id: `mod-${i}`, kind: 'writable', deps: [], files: { [`src/mod-${i}.txt`]: `module ${i}\n` } })) }],
  }));
  return path;
}

const types = (repo: string): { type: string; data: any; metadata: any }[] => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
/** The most attempts open at once in a log (started, not yet finished). */
function maxOpen(log: { type: string }[]): number {
  let open = 0;
  let max = 0;
  for (const e of log) {
    if (e.type === 'AttemptStarted') max = Math.max(max, ++open);
    if (e.type === 'AttemptFinished') open--;
  }
  return max;
}
const treeOf = (repo: string) => git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}');

describe('several workers in flight through the CLI (issue 16)', () => {
  it('run --max-steps N takes exactly N steps with several in flight (the steps in flight count), and runs on from there', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint(repo, 3)], { cwd: repo });
    for (const n of [5, 4]) {
      const r = cliJson(['run', '--max-steps', String(n)], { cwd: repo });
      expect(r.steps).toBe(n);
    }
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
  });

  it('concurrency 3: up to 3 attempts are open at once, never more, and the build ends with every module on the integration ref', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint(tempDir(), 3)], { cwd: repo });
    const run = cliJson(['run'], { cwd: repo });
    expect(run.outcome).toBe('horizon_complete');
    const log = types(repo);
    expect(maxOpen(log)).toBe(3);
    expect(git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration').split('\n').filter((p) => p.startsWith('src/'))).toHaveLength(N);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    // R-35 with several calls in flight: a checkpoint was signed as every promotion, milestone
    // checkpoint and the end were appended, not only at the end of the run.
    const signed = new Set(readdirSync(join(repo, '.longbuild', 'checkpoints')).map((f) => Number(f.replace('.checkpoint', ''))));
    const due = log.map((e, i) => ({ e, position: i + 1, next: log[i + 1] }))
      .filter(({ e, next }) => ['CheckpointWritten', 'BuildCompleted'].includes(e.type) || (e.type === 'IntegrationPromoted' && !(next?.type === 'IntegrationPromoted' && next.metadata.causationId === e.metadata.causationId)))
      .map(({ position }) => position);
    expect(due.length).toBeGreaterThan(3);
    for (const p of due) expect(signed.has(p), `a checkpoint signed at position ${p}`).toBe(true);
    // status counts the planned work, compacted nodes included (issue 18: not "accepted 1").
    const status = cliJson(['status'], { cwd: repo });
    expect(status.work).toEqual({ planned: N, accepted: N, compacted: N });
    expect(runCli(['status'], { cwd: repo }).stdout).toContain(`work: ${N} of ${N} planned nodes accepted (${N} of them compacted into summaries)`);
  });

  it('concurrency 1 records exactly what a build without the setting records (the same log but for the setting itself)', () => {
    const a = tempDir();
    const b = tempDir();
    cliJson(['init', '--blueprint', blueprint(tempDir(), 1)], { cwd: a });
    cliJson(['run'], { cwd: a });
    const path = blueprint(tempDir(), undefined);
    cliJson(['init', '--blueprint', path], { cwd: b });
    cliJson(['run'], { cwd: b });
    expect(maxOpen(types(a))).toBe(1);
    // The same events but for the build's id (the blueprints' bytes differ by the setting), measured
    // durations, and what the id reaches through the commits' trailers (R-62): commit SHAs, digests
    // over them, summary ids. Each of those is named by the order it first appears in, so the same
    // value must stand in the same places in both logs.
    const idFree = (repo: string) => {
      const log = types(repo);
      const names = new Map<string, string>();
      return JSON.stringify(log.slice(1).map((e) => [e.type, e.data])).replaceAll(log[0]!.data.buildId, 'BUILD').replace(/"durationMs":\d+/g, '"durationMs":0')
        .replace(/\b[0-9a-f]{40}(?:[0-9a-f]{24})?\b|summary-[0-9a-f]{16}/g, (sha) => names.get(sha) ?? (names.set(sha, `C${names.size}`), `C${names.size - 1}`));
    };
    expect(idFree(a)).toBe(idFree(b));
    expect(treeOf(a)).toBe(treeOf(b));
  });

  it('R-18 R-19 a SIGKILL after the second of several calls in flight returned: the resume settles every open attempt (none called again that kept its outcome) and ends with the same tree', () => {
    const dir = tempDir();
    const path = blueprint(dir, 3);
    const clean = tempDir();
    cliJson(['init', '--blueprint', path], { cwd: clean });
    cliJson(['run'], { cwd: clean });
    const repo = tempDir();
    cliJson(['init', '--blueprint', path], { cwd: repo });
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-keep:worker:2' } }).signal).toBe('SIGKILL');
    const before = types(repo);
    const resumed = runCli(['run', '--json'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    const log = types(repo);
    // Every attempt open at the crash was settled; a call whose outcome was kept was not re-invoked.
    expect(log.filter((e) => e.type === 'EffectReinvoked').length).toBeLessThanOrEqual(maxOpen(before) - 1);
    expect(treeOf(repo)).toBe(treeOf(clean));
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
  });
});
