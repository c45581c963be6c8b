import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { splitHalves } from '../src/commands/batch.js';
import { cliAsync, cliJson, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const INTEGRATION_REF = 'refs/heads/longbuild/integration';

/**
 * A fast trusted verification command: fails when a scripted failing attempt's test file is in
 * the tree (the worker's default `failFiles`), passes otherwise. No shell.
 */
const VERIFY = ['node', '-e', 'const fs=require("fs");const bad=fs.existsSync("test")?fs.readdirSync("test").filter((f)=>f.startsWith("longbuild-fail-")):[];if(bad.length){console.error("failing: "+bad.join(","));process.exit(1)}console.log("ok")'];

/** n independent writable nodes n1..nN in one milestone; `bad` nodes fail their first attempt. */
function blueprint(dir: string, n: number, opts: { maxBatch: number; bad?: string[]; verify?: string[][]; sandbox?: 'off' }): string {
  const nodes = Array.from({ length: n }, (_, i) => {
    const id = `n${i + 1}`;
    return { id, kind: 'writable', deps: [], files: { [`src/${id}.txt`]: `${id}\n` }, ...(opts.bad?.includes(id) ? { failAttempts: 1 } : {}) };
  });
  const bp = { request: { title: 'batch' }, verify: opts.verify ?? [VERIFY], detailedWindow: 1, maxBatch: opts.maxBatch, ...(opts.sandbox ? { sandbox: opts.sandbox } : {}), milestones: [{ id: 'm1', title: 'M1', nodes }] };
  const path = join(dir, 'bp.json');
  writeFileSync(path, JSON.stringify(bp));
  return path;
}

interface Ev {
  readonly position: number;
  readonly type: string;
  readonly data: any;
}

function events(repo: string): Ev[] {
  return runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as Ev);
}

const reflog = (repo: string) => git(repo, 'reflog', 'show', '--format=%H', INTEGRATION_REF).split('\n').filter(Boolean);

/** The recorded outcome of a build, in a form two runs can be compared by (adoption aside). */
function outcome(repo: string) {
  const evs = events(repo);
  return {
    tree: git(repo, 'rev-parse', `${INTEGRATION_REF}^{tree}`),
    integration: evs
      .filter((e) => ['IntegrationStarted', 'BatchSplit', 'IntegrationPromoted', 'IntegrationFailed'].includes(e.type))
      .map((e) => e.type === 'BatchSplit' ? `split ${JSON.stringify(e.data.halves)}`
        : e.type === 'IntegrationPromoted' ? `promoted ${e.data.receipt.nodeIds.join(',')} -> ${e.data.receipt.resultCommit}`
        : `${e.type === 'IntegrationStarted' ? 'started' : 'failed'} ${e.data.nodeIds.join(',')}`),
    attempts: evs.filter((e) => e.type === 'AttemptStarted').map((e) => e.data.attemptId).sort(),
    completed: evs.some((e) => e.type === 'BuildCompleted'),
  };
}

describe('batch integration (R-25, R-12, R-24)', () => {
  it('R-25 a split partitions a failed batch into two non-empty halves, order kept, so bisection always terminates', () => {
    fc.assert(fc.property(fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), { minLength: 2, maxLength: 64 }), (ids) => {
      const [a, b] = splitHalves(ids);
      expect([...a, ...b]).toEqual(ids);
      expect(a.length).toBeGreaterThan(0);
      expect(b.length).toBeGreaterThan(0);
      expect(a.length - b.length).toBeGreaterThanOrEqual(0);
      expect(a.length - b.length).toBeLessThanOrEqual(1);
    }), { numRuns: 200 });
  });

  it('R-25 four independent nodes are dispatched from one head and promoted by ONE compare-and-set ref update', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint(repo, 4, { maxBatch: 4 })], { cwd: repo });
    const before = reflog(repo);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const evs = events(repo);
    const starts = evs.filter((e) => e.type === 'AttemptStarted');
    expect(starts.map((e) => e.data.nodeId)).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(new Set(starts.map((e) => e.data.baseHead)).size).toBe(1); // every worker from the same head
    const jobs = evs.filter((e) => e.type === 'IntegrationStarted');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.data.nodeIds).toEqual(['n1', 'n2', 'n3', 'n4']);
    const promoted = evs.filter((e) => e.type === 'IntegrationPromoted');
    expect(promoted).toHaveLength(1);
    expect(promoted[0]!.data.receipt.candidates.map((c: { nodeId: string }) => c.nodeId)).toEqual(['n1', 'n2', 'n3', 'n4']);
    // One atomic boundary: the integration ref moved exactly once for the whole batch.
    const after = reflog(repo);
    expect(after).toHaveLength(before.length + 1);
    expect(after[0]).toBe(promoted[0]!.data.receipt.resultCommit);
    expect(git(repo, 'ls-tree', '-r', '--name-only', INTEGRATION_REF).split('\n')).toEqual(['src/n1.txt', 'src/n2.txt', 'src/n3.txt', 'src/n4.txt']);
  });

  it('R-12 maxBatch 1 keeps one-node dispatch and one job per node', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint(repo, 3, { maxBatch: 1 })], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    const evs = events(repo);
    expect(evs.filter((e) => e.type === 'IntegrationStarted').map((e) => e.data.nodeIds)).toEqual([['n1'], ['n2'], ['n3']]);
    const heads = evs.filter((e) => e.type === 'AttemptStarted').map((e) => e.data.baseHead);
    expect(new Set(heads).size).toBe(3); // each fresh packet starts from the head the previous node promoted
  });

  it('R-25 one bad member among 8 is found by bisection; the seven others are promoted and never sent to revising', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', blueprint(repo, 8, { maxBatch: 8, bad: ['n5'] })], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const evs = events(repo);
    expect(evs.filter((e) => e.type === 'BatchSplit').map((e) => e.data.halves)).toEqual([
      [['n1', 'n2', 'n3', 'n4'], ['n5', 'n6', 'n7', 'n8']],
      [['n5', 'n6'], ['n7', 'n8']],
      [['n5'], ['n6']],
    ]);
    const failed = evs.filter((e) => e.type === 'IntegrationFailed');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data.nodeIds).toEqual(['n5']);
    expect(failed[0]!.data.evidenceSha256).toMatch(/^[0-9a-f]{64}$/);
    // The culprit was retested on the same tree before it was blamed: two failing runs recorded.
    const culpritJob = evs.find((e) => e.type === 'VerificationFinished' && e.data.jobId === failed[0]!.data.jobId)!;
    expect(culpritJob.data.evidence.map((c: { exitCode: number }) => c.exitCode)).toEqual([1, 1]);
    expect(outcome(repo).integration.filter((l) => l.startsWith('promoted')).map((l) => l.split(' ')[1])).toEqual(['n1,n2,n3,n4', 'n6', 'n7,n8', 'n5']);
    // Only the culprit needed a second attempt; every other node was accepted with its first.
    expect(outcome(repo).attempts).toEqual(['n1.1', 'n2.1', 'n3.1', 'n4.1', 'n5.1', 'n5.2', 'n6.1', 'n7.1', 'n8.1']);
    expect(reflog(repo)).toHaveLength(1 + 4);
  });

  it('R-25 a flaky command (fails once, then passes on the same tree) is retested and sends no innocent node to revising', () => {
    const repo = tempDir();
    const marker = join(tempDir('lb-flaky-'), 'failed-once');
    const flaky = ['node', '-e', `const fs=require("fs");if(!fs.existsSync(${JSON.stringify(marker)})){fs.writeFileSync(${JSON.stringify(marker)},"x");console.error("flaky failure");process.exit(1)}console.log("ok")`];
    // The flake keeps its state in a file outside the workspace, which a sandboxed command cannot
    // reach; this test is about retesting, so it runs its verification unsandboxed.
    cliJson(['init', '--blueprint', blueprint(repo, 4, { maxBatch: 4, verify: [flaky], sandbox: 'off' })], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const evs = events(repo);
    expect(evs.filter((e) => e.type === 'BatchSplit' || e.type === 'IntegrationFailed')).toEqual([]);
    const verified = evs.filter((e) => e.type === 'VerificationFinished');
    expect(verified).toHaveLength(1);
    expect(verified[0]!.data.passed).toBe(true);
    expect(verified[0]!.data.evidence.map((c: { exitCode: number }) => c.exitCode)).toEqual([1, 0]);
    const receipt = evs.find((e) => e.type === 'IntegrationPromoted')!.data.receipt;
    expect(receipt.nodeIds).toEqual(['n1', 'n2', 'n3', 'n4']);
    expect(receipt.evidenceSha256s).toHaveLength(4); // both runs' stdout and stderr
  });
});

describe('batch integration under SIGKILL (R-25, R-18, R-19)', () => {
  // A batch of four with one bad member: one batch job, a split, a promoted half, a second split,
  // a blamed culprit, a promoted single, the culprit's second attempt promoted.
  // One point of each kind with real processes; every point of random batch builds, twice per
  // case, is crashed in test/step-model-double.test.ts (the real controller on a simulated world).
  const POINTS = [
    'before-append:IntegrationStarted:1', // nothing recorded yet: the wave is integrated again
    'before-append:VerificationFinished:1', // verified (and cached) but not recorded
    'before-append:BatchSplit:1', // failure recorded, split not
    'after-effect:promote:1', // the ref moved, the promotion not recorded: adopted on resume
    'before-append:IntegrationPromoted:1',
    'before-append:IntegrationFailed:1', // the culprit not yet blamed
  ];

  it('R-25 a SIGKILL at every batch interruption point resumes to the one recorded outcome of an uninterrupted run', async () => {
    const setup = () => {
      const repo = tempDir();
      cliJson(['init', '--blueprint', blueprint(repo, 4, { maxBatch: 4, bad: ['n3'] })], { cwd: repo });
      return repo;
    };
    const clean = setup();
    expect(cliJson(['run'], { cwd: clean }).outcome).toBe('horizon_complete');
    const expected = outcome(clean);
    expect(expected.integration).toEqual([
      'started n1,n2,n3,n4', 'split [["n1","n2"],["n3","n4"]]',
      'started n1,n2', expect.stringMatching(/^promoted n1,n2 -> /),
      'started n3,n4', 'split [["n3"],["n4"]]',
      'started n3', 'failed n3',
      'started n4', expect.stringMatching(/^promoted n4 -> /),
      'started n3', expect.stringMatching(/^promoted n3 -> /),
    ]);

    const cases = POINTS.map((point) => ({ point, repo: setup() }));
    const failures: string[] = [];
    const runCase = async ({ point, repo }: { point: string; repo: string }) => {
      const crashed = await cliAsync(['run'], repo, { LONGBUILD_CRASH_AT: point });
      if (crashed.signal !== 'SIGKILL') failures.push(`${point}: the controller was not killed (exit ${crashed.code})`);
      const resumed = await cliAsync(['run'], repo);
      if (resumed.code !== 0) failures.push(`${point}: resume exited ${resumed.code ?? resumed.signal}`);
    };
    // Three at a time: real processes, bounded load.
    for (let i = 0; i < cases.length; i += 3) await Promise.all(cases.slice(i, i + 3).map(runCase));
    expect(failures).toEqual([]);
    for (const { point, repo } of cases) {
      const got = outcome(repo);
      expect({ point, ...got }).toEqual({ point, ...expected });
      // Every move of the integration ref is a recorded promotion: never a partial one nobody recorded.
      const promotions = events(repo).filter((e) => e.type === 'IntegrationPromoted');
      expect({ point, moves: reflog(repo).length - 1 }).toEqual({ point, moves: promotions.length });
      expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    }
  }, 240_000);
});
