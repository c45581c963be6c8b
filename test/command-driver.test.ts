import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, ROOT, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** A fresh copy of examples/scripts (planner, worker, request, config) to edit. */
function scriptsCopy(): string {
  const cfgDir = tempDir('longbuild-cfg-');
  cpSync(join(ROOT, 'examples', 'scripts'), cfgDir, { recursive: true });
  return cfgDir;
}

/** A new repository with a build initialised from the scripts in `cfgDir`. */
function initFrom(cfgDir: string): string {
  const repo = tempDir();
  cliJson(['init', '--request', join(cfgDir, 'request.json'), '--config', join(cfgDir, 'longbuild.config.json')], { cwd: repo });
  return repo;
}

describe('a build driven by real planner and worker commands (issue 6)', () => {
  it('R-14 R-24 runs examples/scripts end to end: proposals validated, worker output committed by the host, verified, renewed', () => {
    const cfgDir = scriptsCopy();
    const repo = tempDir();
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

  it('R-28 a planner whose stdout is never a valid proposal is asked again with the reasons (planner.asks, default 3), each ask recorded; then the build blocks with exit 1', () => {
    const cfgDir = scriptsCopy();
    // It keeps what it was told (stdin) next to its output, so the test sees each ask's input.
    writeFileSync(join(cfgDir, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nconst input = JSON.parse(readFileSync(0, 'utf8'));\nprocess.stdout.write(JSON.stringify({ detailed: [], coarse: [], told: input.feedback ?? null, key: process.env.LONGBUILD_IDEMPOTENCY_KEY }));\n");
    const repo = initFrom(cfgDir);
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/proposal refused: proposal is malformed.*Unrecognized keys.*\(refused 3 times; the planner was asked again with the reasons each time\)/);
    // The refusal is recorded with its rule id, and `log` shows it as recorded; run's line names it only with --verbose.
    expect(runCli(['log', '--type', 'ProposalRejected'], { cwd: repo }).stdout).toMatch(/R-28/);
    const status = cliJson(['status'], { cwd: repo });
    expect(status.horizon).toBeNull();
    expect(status.blocked).toMatch(/Unrecognized keys.*refused 3 times/);
    expect(status.graphRevision).toBe(0);
    const logged = (type: string) => runCli(['log', '--type', type, '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(logged('PlannerInvoked').map((d) => d.callId)).toEqual(['plan.seal.0', 'plan.seal.0.ask2', 'plan.seal.0.ask3']);
    expect(logged('ProposalRejected').map((d) => d.callId)).toEqual(['plan.seal.0', 'plan.seal.0.ask2', 'plan.seal.0.ask3']);
    // The planner saw each earlier refusal and its own idempotency key (echoed in its refused output).
    const returned = logged('PlannerReturned').map((d) => d.proposal);
    expect(returned.map((p) => p.key)).toEqual(['plan.seal.0', 'plan.seal.0.ask2', 'plan.seal.0.ask3']);
    expect(returned[0].told).toBeNull();
    expect(returned[2].told.map((f: { callId: string; rule: string }) => [f.callId, f.rule])).toEqual([['plan.seal.0', 'R-28'], ['plan.seal.0.ask2', 'R-28']]);
    expect(returned[1].told[0].reason).toMatch(/Unrecognized keys: "told", "key"/);
  });

  it('R-28 a planner that adds an unknown key is told why and fixes its proposal on the second ask; the build completes', () => {
    const cfgDir = scriptsCopy();
    const planner = readFileSync(join(cfgDir, 'planner.mjs'), 'utf8');
    // The first ask of each round adds a key the schema does not know (as language models do).
    writeFileSync(join(cfgDir, 'planner.mjs'), planner.replace('process.stdout.write(JSON.stringify(proposal));', "process.stdout.write(JSON.stringify(input.feedback ? proposal : { ...proposal, rationale: 'because' }));"));
    const repo = initFrom(cfgDir);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const rejected = runCli(['log', '--type', 'ProposalRejected', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(rejected.map((d) => d.callId)).toEqual(['plan.seal.0', 'plan.renew.1']); // each round's first ask
    expect(rejected[0].reason).toMatch(/rationale/);
    expect(cliJson(['status'], { cwd: repo }).checkpoints).toEqual(['hello', 'goodbye', 'welcome']);
  });

  it('R-24 a worker that exits non-zero fails the attempt with its output kept as evidence, and the node is retried', () => {
    const cfgDir = scriptsCopy();
    const worker = readFileSync(join(cfgDir, 'worker.mjs'), 'utf8');
    // Fails the first attempt of every node (attempt 1), succeeds after.
    writeFileSync(join(cfgDir, 'worker.mjs'), worker.replace("const packet = JSON.parse(readFileSync(0, 'utf8'));", "const packet = JSON.parse(readFileSync(0, 'utf8'));\nif (packet.attempt === 1) { console.error('first attempt fails on purpose'); process.exit(7); }"));
    const repo = initFrom(cfgDir);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const finished = runCli(['log', '--type', 'AttemptFinished', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(finished.filter((d) => d.outcome === 'failed').map((d) => [d.nodeId, d.reason])).toEqual([
      ['hello-module', 'worker exited 7'], ['goodbye-module', 'worker exited 7'], ['welcome-module', 'worker exited 7'],
    ]);
    // The worker's stderr is kept, content-addressed, as evidence, and the log names the files.
    expect(evidenceContaining(repo, 'first attempt fails on purpose')).not.toBeNull();
    const shown = runCli(['evidence', 'hello-module.1'], { cwd: repo });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^attempt hello-module\.1: failed \(worker exited 7\), recorded at position \d+\n--- stdout \([0-9a-f]{12}\)\n\(empty\)\n--- stderr \([0-9a-f]{12}\)\nfirst attempt fails on purpose\n$/);
    const ok = cliJson(['evidence', 'hello-module.2'], { cwd: repo });
    expect([ok.kind, ok.outcome, ok.streams[0].text]).toEqual(['attempt', 'committed', expect.stringContaining('wrote src/hello.js')]);
    // A job: each verification command with its exit code and output.
    const job = cliJson(['evidence', 'job-1'], { cwd: repo });
    expect([job.kind, job.outcome, job.streams.map((x: { name: string }) => x.name)]).toEqual(['job', 'passed', ['node --test (exit 0) stdout', 'node --test (exit 0) stderr']]);
    expect(job.streams[0].text).toMatch(/pass 1/);
    const missing = runCli(['evidence', 'nope.1'], { cwd: repo });
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^longbuild: evidence: no finished attempt, verified job or acceptance run 'nope\.1' in the log \(attempts are NODE\.N, jobs job-N, acceptance runs accept-N; recent: .*welcome-module\.2, job-3\)$/);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('R-24 a node that fails every attempt blocks the build, and run names why and the command that prints its output; `retry` gives it more attempts and the build finishes', () => {
    const cfgDir = scriptsCopy();
    const worker = readFileSync(join(cfgDir, 'worker.mjs'), 'utf8');
    writeFileSync(join(cfgDir, 'worker.mjs'), "console.error('cannot do it'); process.exit(3);\n");
    const repo = initFrom(cfgDir);
    expect(cliJson(['step'], { cwd: repo }).outcome).toBe('planned');
    // Each step says what happened; a failed attempt says why and where its output is.
    expect(cliJson(['step'], { cwd: repo })).toMatchObject({ outcome: 'dispatched', detail: 'hello-module attempt 1: revising (worker exited 3; `longbuild evidence hello-module.1`)' });
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("hello-module is blocked after 3 attempts (last: worker exited 3; see `longbuild evidence hello-module.3`, then `longbuild retry hello-module` or `longbuild cancel hello-module`)");
    expect(runCli(['evidence', 'hello-module.3'], { cwd: repo }).stdout).toContain('cannot do it');

    // The operator fixes the cause and gives the node one more attempt: the build goes on.
    const refused = runCli(['retry', 'goodbye-module'], { cwd: repo });
    expect([refused.code, refused.stderr.trim()]).toEqual([1, "longbuild: node 'goodbye-module' is queued, not blocked: only a node that used up its attempts can be retried"]);
    expect(runCli(['retry', 'nope'], { cwd: repo }).stderr.trim()).toBe("longbuild: no node 'nope' in the graph (blocked: hello-module)");
    expect(runCli(['retry', 'hello-module', '--attempts', '0'], { cwd: repo }).code).toBe(2);
    writeFileSync(join(cfgDir, 'worker.mjs'), worker.replace("const packet = JSON.parse(readFileSync(0, 'utf8'));", "const packet = JSON.parse(readFileSync(0, 'utf8'));\nwriteFileSync(`packet-${packet.nodeId}.json`, JSON.stringify(packet));"));
    const retried = cliJson(['retry', 'hello-module', '--attempts', '1'], { cwd: repo });
    expect(retried).toMatchObject({ nodeId: 'hello-module', attempts: 1, attemptLimit: 4, unblocked: true });
    const [event] = runCli(['log', '--type', 'NodeRetried', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(event).toMatchObject({ nodeId: 'hello-module', attempts: 1, attemptLimit: 4, operator: { action: 'retry' } });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const packet = JSON.parse(git(repo, 'show', 'refs/heads/longbuild/integration:packet-hello-module.json'));
    // The failure's own output comes with it (the tail of what the worker printed).
    expect([packet.attempt, packet.previousFailure]).toEqual([4, { attemptId: 'hello-module.3', reason: 'worker exited 3', output: 'cannot do it\n' }]);
    const verified = runCli(['verify'], { cwd: repo });
    expect(verified.code, verified.stderr).toBe(0);
    // Retrying a node that is not blocked any more is refused, and nothing is appended.
    const before = runCli(['log', '--json'], { cwd: repo }).stdout;
    expect(runCli(['retry', 'hello-module'], { cwd: repo }).code).toBe(1);
    expect(runCli(['log', '--json'], { cwd: repo }).stdout).toBe(before);
  });
});

describe('verification that fits real projects (issue 14)', () => {
  it('R-26 verifyTimeoutSeconds bounds each verification command: one that hangs fails its job with the reason, and the node is retried', () => {
    const cfgDir = scriptsCopy();
    const config = JSON.parse(readFileSync(join(cfgDir, 'longbuild.config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(cfgDir, 'longbuild.config.json'), JSON.stringify({ ...config, verify: [['node', '-e', 'setTimeout(() => {}, 60000)']], verifyTimeoutSeconds: 1, maxAttempts: 1 }));
    const repo = initFrom(cfgDir);
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('hello-module is blocked after 1 attempt (last: verification failed: ["node","-e","setTimeout(() => {}, 60000)"] timed out after 1000 ms; see `longbuild evidence job-1`, then `longbuild retry hello-module` or `longbuild cancel hello-module`)');
    const job = cliJson(['evidence', 'job-1'], { cwd: repo });
    expect([job.outcome, job.reason]).toEqual(['failed', '["node","-e","setTimeout(() => {}, 60000)"] timed out after 1000 ms']);
  });
});

describe('longbuild cancel (issue 14)', () => {
  it('R-20 a blocked node canceled by an operator: recorded with its operator, the build unblocked and finished without it; its checkpoint lists only accepted work', () => {
    const cfgDir = scriptsCopy();
    // goodbye never works; welcome is planned on hello, so the build can finish without goodbye.
    writeFileSync(join(cfgDir, 'worker.mjs'), readFileSync(join(cfgDir, 'worker.mjs'), 'utf8').replace("const packet = JSON.parse(readFileSync(0, 'utf8'));",
      "const packet = JSON.parse(readFileSync(0, 'utf8'));\nif (packet.nodeId === 'goodbye-module') { console.error('cannot say goodbye'); process.exit(4); }"));
    writeFileSync(join(cfgDir, 'planner.mjs'), readFileSync(join(cfgDir, 'planner.mjs'), 'utf8').replace("deps: i > 0 ? [`${features[i - 1]}-module`] : []", "deps: i > 0 ? ['hello-module'] : []"));
    const config = JSON.parse(readFileSync(join(cfgDir, 'longbuild.config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(cfgDir, 'longbuild.config.json'), JSON.stringify({ ...config, maxAttempts: 1 }));
    const repo = initFrom(cfgDir);
    const blocked = runCli(['run'], { cwd: repo });
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toContain('goodbye-module is blocked after 1 attempt');
    const before = runCli(['log', '--json'], { cwd: repo }).stdout;
    // Refused, nothing appended: accepted work, an unknown node.
    expect(runCli(['cancel', 'hello-module'], { cwd: repo }).stderr).toMatch(/node 'hello-module' is accepted \(compacted into summary-[0-9a-f]{16}\): accepted work is never canceled/);
    expect(runCli(['cancel', 'nope'], { cwd: repo }).code).toBe(1);
    expect(runCli(['log', '--json'], { cwd: repo }).stdout).toBe(before);
    const canceled = cliJson(['cancel', 'goodbye-module', '--reason', 'not this release'], { cwd: repo });
    expect(canceled).toMatchObject({ nodeId: 'goodbye-module', canceled: ['goodbye-module'], unblocked: true });
    const [event] = runCli(['log', '--type', 'NodeCanceled', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(event).toMatchObject({ nodeIds: ['goodbye-module'], reason: 'not this release', operator: { action: 'cancel' } });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const files = git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration').split('\n');
    expect(files).toEqual(['src/hello.js', 'src/welcome.js', 'test/hello.test.js', 'test/welcome.test.js']);
    const checkpoints = runCli(['log', '--type', 'CheckpointWritten', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data.checkpoint);
    expect(checkpoints.map((c: { milestoneId: string; acceptedNodes: unknown[] }) => [c.milestoneId, c.acceptedNodes.length])).toEqual([['hello', 1], ['goodbye', 0], ['welcome', 1]]);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('canceling a node cancels the unaccepted nodes that depend on it; a node in flight is refused', () => {
    const cfgDir = scriptsCopy();
    const repo = initFrom(cfgDir);
    cliJson(['run', '--max-steps', '1'], { cwd: repo }); // the horizon: hello-module, goodbye-module on it
    const out = runCli(['cancel', 'hello-module'], { cwd: repo });
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('hello-module canceled with 1 node that depends on it (goodbye-module)');
    expect(cliJson(['status'], { cwd: repo }).nodes).toEqual({ canceled: 2 });
    expect(runCli(['cancel', 'hello-module'], { cwd: repo }).stderr).toMatch(/already canceled/);
    // A controller killed while the worker runs leaves the node in flight: refused until run settles it.
    const other = initFrom(scriptsCopy());
    expect(runCli(['run'], { cwd: other, env: { LONGBUILD_CRASH_AT: 'before-effect:worker:1' } }).signal).toBe('SIGKILL');
    const busy = runCli(['cancel', 'hello-module'], { cwd: other });
    expect([busy.code, busy.stderr.trim()]).toEqual([1, "longbuild: node 'hello-module' is running: its attempt or integration is in flight; cancel it once `longbuild run` has settled it"]);
  });
});

describe('a project whose tests need an install (issue 14)', () => {
  /** A user repository whose .gitignore names node_modules/, as a real npm project's does. */
  function projectRepo(): string {
    const repo = tempDir();
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(join(repo, '.gitignore'), 'node_modules/\n');
    git(repo, 'add', '.gitignore');
    git(repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'project');
    return repo;
  }
  // The "install": what `npm ci` does for the tests, offline: a dependency under node_modules/.
  const INSTALL = ['node', '-e', "const fs=require('fs');fs.mkdirSync('node_modules/greet',{recursive:true});fs.writeFileSync('node_modules/greet/index.js','module.exports=(w)=>w');console.log('installed greet')"];
  const NEEDS = ['node', '-e', "require('greet');console.log('greet is there')"];

  it.each([['allowed', 0], ['dirty', 1]] as const)('R-26 R-27 setup runs before verify in the same workspace, its output kept as evidence; ignoredFiles %s', (ignoredFiles, code) => {
    const cfgDir = scriptsCopy();
    const config = JSON.parse(readFileSync(join(cfgDir, 'longbuild.config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(cfgDir, 'longbuild.config.json'), JSON.stringify({ ...config, setup: [INSTALL], verify: [NEEDS, ['node', '--test']], ignoredFiles, maxAttempts: 1 }));
    const repo = projectRepo();
    cliJson(['init', '--request', join(cfgDir, 'request.json'), '--config', join(cfgDir, 'longbuild.config.json')], { cwd: repo });
    const r = runCli(['run'], { cwd: repo });
    expect(r.code, r.stderr).toBe(code);
    const job = cliJson(['evidence', 'job-1'], { cwd: repo });
    expect(job.streams[0]).toMatchObject({ name: expect.stringContaining('node -e'), text: 'installed greet\n' });
    if (ignoredFiles === 'allowed') {
      expect(job.outcome).toBe('passed');
      expect(job.streams[2].text).toBe('greet is there\n');
      expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    } else {
      expect(r.stderr).toMatch(/workspace not clean after verification: !! node_modules\//);
    }
  });
});

describe('the work packet an agent works from (issue 14)', () => {
  it.each([true, false])('R-24 a worker gets the request, its milestone, the node description and acceptance, what its dependencies produced, and on a retry why the last attempt failed (compaction %s)', (compaction) => {
    const cfgDir = scriptsCopy();
    const config = JSON.parse(readFileSync(join(cfgDir, 'longbuild.config.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(cfgDir, 'longbuild.config.json'), JSON.stringify({ ...config, compaction }));
    const planner = readFileSync(join(cfgDir, 'planner.mjs'), 'utf8');
    writeFileSync(join(cfgDir, 'planner.mjs'), planner.replace("title: `${f} module`,", "title: `${f} module`, description: `export ${f}(who)`, acceptance: [`${f}('Ada') is '${f} Ada'`],"));
    const worker = readFileSync(join(cfgDir, 'worker.mjs'), 'utf8');
    // Attempt 1 fails; attempt 2 keeps the packet it was given in the tree, where the test reads it.
    writeFileSync(join(cfgDir, 'worker.mjs'), worker.replace("const packet = JSON.parse(readFileSync(0, 'utf8'));",
      "const packet = JSON.parse(readFileSync(0, 'utf8'));\nif (packet.attempt === 1) { console.error('no'); process.exit(7); }\nwriteFileSync(`packet-${packet.nodeId}.json`, JSON.stringify(packet));"));
    const repo = initFrom(cfgDir);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const packet = (node: string) => JSON.parse(git(repo, 'show', `refs/heads/longbuild/integration:packet-${node}.json`));
    const hello = packet('hello-module');
    const goodbye = packet('goodbye-module');
    expect(goodbye.request).toEqual(JSON.parse(readFileSync(join(cfgDir, 'request.json'), 'utf8')));
    expect([goodbye.milestoneTitle, goodbye.milestoneIntent]).toEqual(['Feature goodbye', 'implement goodbye']);
    expect([goodbye.description, goodbye.acceptance]).toEqual(['export goodbye(who)', ["goodbye('Ada') is 'goodbye Ada'"]]);
    expect(goodbye.attempt).toBe(2);
    expect(goodbye.previousFailure).toEqual({ attemptId: 'goodbye-module.1', reason: 'worker exited 7', output: 'no\n' });
    // Its dependency: the accepted commit hello-module was integrated with.
    const helloCommit = runCli(['log', '--type', 'IntegrationPromoted', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data.receipt)
      .flatMap((r) => r.candidates).find((c: { nodeId: string }) => c.nodeId === 'hello-module').commit;
    expect(hello.dependencies).toEqual([]);
    if (!compaction) {
      // With the files its accepted commit changed.
      expect(goodbye.dependencies).toEqual([{ id: 'hello-module', kind: 'writable', title: 'hello module', commit: helloCommit, files: ['packet-hello-module.json', 'src/hello.js', 'test/hello.test.js'] }]);
      return;
    }
    // hello was compacted once checkpointed: goodbye depends on its summary, which names the commit.
    const [dep] = goodbye.dependencies;
    expect(dep.id).toMatch(/^summary-/);
    expect(dep.summary).toEqual({ milestoneId: 'hello', acceptedCommits: [{ nodeId: 'hello-module', commit: helloCommit }], decisions: [] });
    expect(dep.files).toEqual(['packet-hello-module.json', 'src/hello.js', 'test/hello.test.js']);
    expect(git(repo, 'merge-base', '--is-ancestor', helloCommit, dep.commit)).toBe('');
  });
});

/** The name of the evidence blob whose bytes contain `text`, or null. */
function evidenceContaining(repo: string, text: string): string | null {
  const dir = join(repo, '.longbuild', 'evidence');
  return readdirSync(dir).find((n) => readFileSync(join(dir, n), 'utf8').includes(text)) ?? null;
}
