import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, ROOT, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

describe('a build driven by real planner and worker commands (issue 6)', () => {
  it('R-14 R-24 runs examples/scripts end to end: proposals validated, worker output committed by the host, verified, renewed', () => {
    const repo = tempDir();
    const cfgDir = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfgDir, { recursive: true });
    const init = cliJson(['init', '--request', join(cfgDir, 'request.json'), '--config', join(cfgDir, 'longbuild.config.json')], { cwd: repo });
    expect(init.driver).toBe('command');
    const run = cliJson(['run'], { cwd: repo });
    expect(run.outcome).toBe('horizon_complete');
    const status = cliJson(['status'], { cwd: repo });
    expect(status.checkpoints).toEqual(['hello', 'goodbye', 'welcome']);
    expect(status.horizon.revision).toBe(2);
    expect(status.calls).toEqual({ planner: 2, worker: 3 });
    const files = git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration').split('\n');
    expect(files).toEqual(['src/goodbye.js', 'src/hello.js', 'src/welcome.js', 'test/goodbye.test.js', 'test/hello.test.js', 'test/welcome.test.js']);
    // The horizon pins the configured planner route.
    const sealed = runCli(['log', '--type', 'HorizonSealed', '--json'], { cwd: repo });
    expect(JSON.parse(sealed.stdout.trim().split('\n')[0]!).data.pins.plannerRoute).toBe('example:script-planner');
  });

  it('R-28 a planner whose stdout is not a valid proposal is recorded as rejected and the build blocks with exit 1', () => {
    const repo = tempDir();
    const cfgDir = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfgDir, { recursive: true });
    writeFileSync(join(cfgDir, 'planner.mjs'), 'process.stdout.write(JSON.stringify({ detailed: [], coarse: [] }));\n');
    cliJson(['init', '--request', join(cfgDir, 'request.json'), '--config', join(cfgDir, 'longbuild.config.json')], { cwd: repo });
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/R-13.*one or two detailed milestones/);
    const status = cliJson(['status'], { cwd: repo });
    expect(status.horizon).toBeNull();
    expect(status.blocked).toMatch(/R-13|one or two detailed milestones/);
    expect(status.graphRevision).toBe(0);
    const rejected = runCli(['log', '--type', 'ProposalRejected', '--json'], { cwd: repo });
    expect(rejected.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('R-24 a worker that exits non-zero fails the attempt with its output kept as evidence, and the node is retried', () => {
    const repo = tempDir();
    const cfgDir = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfgDir, { recursive: true });
    const worker = readFileSync(join(cfgDir, 'worker.mjs'), 'utf8');
    // Fails the first attempt of every node (attempt 1), succeeds after.
    writeFileSync(join(cfgDir, 'worker.mjs'), worker.replace("const packet = JSON.parse(readFileSync(0, 'utf8'));", "const packet = JSON.parse(readFileSync(0, 'utf8'));\nif (packet.attempt === 1) { console.error('first attempt fails on purpose'); process.exit(7); }"));
    cliJson(['init', '--request', join(cfgDir, 'request.json'), '--config', join(cfgDir, 'longbuild.config.json')], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const finished = runCli(['log', '--type', 'AttemptFinished', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(finished.filter((d) => d.outcome === 'failed').map((d) => [d.nodeId, d.reason])).toEqual([
      ['hello-module', 'worker exited 7'], ['goodbye-module', 'worker exited 7'], ['welcome-module', 'worker exited 7'],
    ]);
    // The worker's stderr is kept, content-addressed, as evidence.
    expect(evidenceContaining(repo, 'first attempt fails on purpose')).not.toBeNull();
  });
});

/** The name of the evidence blob whose bytes contain `text`, or null. */
function evidenceContaining(repo: string, text: string): string | null {
  const dir = join(repo, '.longbuild', 'evidence');
  return readdirSync(dir).find((n) => readFileSync(join(dir, n), 'utf8').includes(text)) ?? null;
}
