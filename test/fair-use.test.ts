/**
 * Issue 16, fair use of the machine: a global cap on the untrusted processes a build runs at once
 * (`maxProcesses`: workers, planners, verification), resource limits on each call's processes
 * (`sandbox.limits`, prlimit inside the sandbox), and progress that shows every call in flight.
 * Limits are proved by what a hostile or runaway process tries: the allocation fails, the CPU hog
 * is killed in about its limit (not its timeout), and nothing of it is alive afterwards.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HAVE_BWRAP } from './support/bwrap.js';
import { cliJson, runCli, tempDir } from './support/cli.js';

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** A probe verification command: it notes its start and end (ms) in `log`, and takes `ms` in between. */
function probe(dir: string, log: string, ms: number): string {
  const path = join(dir, 'probe.mjs');
  writeFileSync(path, `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(log)}, 'start ' + Date.now() + '\\n');\nawait new Promise((r) => setTimeout(r, ${ms}));\nappendFileSync(${JSON.stringify(log)}, 'end ' + Date.now() + '\\n');\n`);
  return path;
}

/** The most probes running at once, from their log. */
function overlap(log: string): number {
  let now = 0;
  let max = 0;
  const marks = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ')).map(([k, t]) => ({ k, t: Number(t) })).sort((a, b) => a.t - b.t || (a.k === 'end' ? -1 : 1));
  for (const m of marks) max = Math.max(max, (now += m.k === 'start' ? 1 : -1));
  return max;
}

function blueprint(dir: string, extra: Record<string, unknown>, verify: string[][], n = 6): string {
  const path = join(dir, 'blueprint.json');
  writeFileSync(path, JSON.stringify({
    request: { goal: 'independent modules' }, verify, detailedWindow: 1, concurrency: 4, sandbox: 'off', ...extra,
    milestones: [{ id: 'm1', title: 'modules', nodes: Array.from({ length: n }, (_, i) => ({ id: `mod-${i}`, kind: 'writable', deps: [], files: { [`src/mod-${i}.txt`]: `module ${i}\n` } })) }],
  }));
  return path;
}

describe('fair use of the machine (issue 16)', () => {
  it('maxProcesses caps the verification processes run at once, whatever concurrency and speculation allow; without it they overlap', () => {
    const runWith = (extra: Record<string, unknown>) => {
      const dir = tempDir();
      const log = join(dir, 'probe.log');
      writeFileSync(log, '');
      const repo = tempDir();
      cliJson(['init', '--blueprint', blueprint(dir, extra, [['node', probe(dir, log, 400)]])], { cwd: repo });
      expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
      expect(git(repo, 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration').split('\n').filter((p) => p.startsWith('src/'))).toHaveLength(6);
      return overlap(log);
    };
    expect(runWith({})).toBeGreaterThan(1);
    expect(runWith({ maxProcesses: 1 })).toBe(1);
  });

  it('R-30 a verification command that allocates beyond sandbox.limits.verify.memoryMb fails, and is recorded with the evidence; without the limit the same build passes', () => {
    const hog = [['node', '-e', 'const b = Buffer.alloc(768 * 1024 * 1024, 1); console.log("allocated", b.length)']];
    const limited = tempDir();
    cliJson(['init', '--blueprint', blueprint(tempDir(), { concurrency: 1, maxAttempts: 1, sandbox: { mode: 'off', limits: { verify: { memoryMb: 256 } } } }, hog, 1)], { cwd: limited });
    const r = runCli(['run'], { cwd: limited });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/blocked/);
    const failed = runCli(['log', '--type', 'IntegrationFailed', '--json'], { cwd: limited }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(failed[0].reason).toMatch(/"node","-e",.* exited with/);
    const ev = cliJson(['evidence', failed[0].jobId], { cwd: limited });
    expect(ev.streams.map((s: { text: string }) => s.text).join('\n')).toMatch(/Array buffer allocation failed|out of memory|OOM|ENOMEM|RangeError|heap/i);
    expect(cliJson(['status'], { cwd: limited }).sandbox).toMatch(/limits: verify memory 256 MiB/);
    const free = tempDir();
    cliJson(['init', '--blueprint', blueprint(tempDir(), { concurrency: 1, maxAttempts: 1 }, hog, 1)], { cwd: free });
    expect(cliJson(['run'], { cwd: free }).outcome).toBe('horizon_complete');
  });

  it('R-30 a worker that spins the CPU is killed at sandbox.limits.worker.cpuSeconds, long before its timeout; none of its processes is left alive', () => {
    const cfg = tempDir('longbuild-cfg-');
    const marker = `longbuild-cpu-hog-${process.pid}-${Date.now()}`;
    writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'spin', kind: 'writable', deps: [] }] }], coarse: [] }));\n");
    // The worker starts a child that spins too (its own process, same limit), then spins itself.
    writeFileSync(join(cfg, 'worker.mjs'), `import { spawn } from 'node:child_process';\nspawn(process.execPath, ['-e', 'for(;;){}', ${JSON.stringify(marker)}], { stdio: 'ignore' });\nfor (;;) {}\n`);
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'spin' }));
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
      planner: { command: ['node', './planner.mjs'] }, worker: { command: ['node', './worker.mjs'], timeoutSeconds: 300 },
      verify: [['true']], maxAttempts: 1, sandbox: { mode: 'bwrap', limits: { worker: { cpuSeconds: 2 } } },
    }));
    const repo = tempDir();
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
    const started = Date.now();
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(120_000); // the timeout is 300 s: the limit ended it
    const finished = runCli(['log', '--type', 'AttemptFinished', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(finished).toHaveLength(1);
    expect(finished[0]).toMatchObject({ outcome: 'failed' });
    expect(finished[0].reason).toMatch(/SIGKILL|signal|killed/i);
    expect(finished[0].durationMs).toBeLessThan(60_000);
    // Nothing of the call is alive: not the worker, not the child it started.
    const alive = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(marker));
    expect(alive).toEqual([]);
  });

  it.runIf(HAVE_BWRAP || process.env.CI === 'true')('R-30 a call\'s private tmpfs mounts are sized (sandbox.limits.worker.tmpfsMb, default 1024 MiB) and /dev is read-only: filling /tmp or /dev/shm past it fails, writing into /dev fails', () => {
    const cfg = tempDir('longbuild-cfg-');
    writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'fill', kind: 'writable', deps: [] }] }], coarse: [] }));\n");
    // The worker tries each, reports what happened on stdout (its evidence), and leaves a file to commit.
    writeFileSync(join(cfg, 'worker.mjs'), `import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const tryWrite = (p, mb) => { try { writeFileSync(p, Buffer.alloc(mb * 1024 * 1024, 1)); return 'ok'; } catch (e) { return e.code; } };
const size = (p) => execFileSync('df', ['-k', '--output=size', p], { encoding: 'utf8' }).trim().split('\\n')[1].trim();
console.log('tmp', tryWrite('/tmp/fill', 12), 'shm', tryWrite('/dev/shm/fill', 12), 'dev', tryWrite('/dev/evil', 1), 'sizes', size('/tmp'), size('/dev/shm'), size('/var/tmp'));
writeFileSync('done.txt', 'done\\n');
`);
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'fill' }));
    const build = (limits: Record<string, unknown> | undefined) => {
      writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
        planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] },
        verify: [['true']], maxAttempts: 1, sandbox: { mode: 'bwrap', ...(limits ? { limits } : {}) },
      }));
      const repo = tempDir();
      cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
      expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
      return cliJson(['evidence', 'fill.1'], { cwd: repo }).streams[0].text as string;
    };
    expect(build({ worker: { tmpfsMb: 8 } }).trim()).toBe('tmp ENOSPC shm ENOSPC dev EROFS sizes 8192 8192 8192');
    expect(build(undefined).trim()).toBe('tmp ok shm ok dev EROFS sizes 1048576 1048576 1048576');
  });

  it.runIf(HAVE_BWRAP || process.env.CI === 'true')('issue 45 a worker that forks without end is stopped at sandbox.limits.worker.processes (a pids cgroup, which binds root too); the default cap lets 300 through; nothing is left alive', () => {
    const cfg = tempDir('longbuild-cfg-');
    const marker = `longbuild-fork-${process.pid}-${Date.now()}`;
    writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'fork', kind: 'writable', deps: [] }] }], coarse: [] }));\n");
    // The worker starts processes until the kernel refuses one (or it has 300), says how many and why, then ends them.
    writeFileSync(join(cfg, 'worker.mjs'), `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const kids = [];
let why = 'none';
for (let i = 0; i < 300; i++) {
  const k = spawn('sleep', ['60', ${JSON.stringify(marker)}], { stdio: 'ignore' });
  const r = await new Promise((res) => { k.once('spawn', () => res(null)); k.once('error', (e) => res(e.code)); });
  if (r !== null) { why = r; break; }
  kids.push(k);
}
console.log('started', kids.length, 'refused', why);
for (const k of kids) k.kill('SIGKILL');
await Promise.all(kids.map((k) => new Promise((res) => (k.exitCode !== null || k.signalCode !== null ? res() : k.once('exit', res)))));
writeFileSync('done.txt', 'done\\n');
`);
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'fork' }));
    const build = (limits: Record<string, unknown> | undefined) => {
      writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
        planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')], timeoutSeconds: 120 },
        verify: [['true']], maxAttempts: 1, sandbox: { mode: 'bwrap', ...(limits ? { limits } : {}) },
      }));
      const repo = tempDir();
      cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
      expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
      return cliJson(['evidence', 'fork.1'], { cwd: repo }).streams[0].text as string;
    };
    const capped = /started (\d+) refused (\S+)/.exec(build({ worker: { processes: 64 } }))!;
    expect(capped[2]).toBe('EAGAIN');
    // node's own threads count too: fewer than 64 children started.
    expect(Number(capped[1])).toBeGreaterThan(10);
    expect(Number(capped[1])).toBeLessThan(64);
    expect(build(undefined).trim()).toBe('started 300 refused none');
    const alive = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(marker));
    expect(alive).toEqual([]);
  });

  it('progress shows every call in flight with its elapsed time (ndjson: inFlight; lines: "in flight:")', () => {
    const dir = tempDir();
    const log = join(dir, 'probe.log');
    writeFileSync(log, '');
    const path = blueprint(dir, {}, [['node', probe(dir, log, 600)]]);
    const a = tempDir();
    cliJson(['init', '--blueprint', path], { cwd: a });
    const r = runCli(['run', '--json', '--progress', 'ndjson'], { cwd: a });
    expect(r.code).toBe(0);
    const steps = r.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((o) => o.type === 'step');
    const busiest = steps.reduce((m, s) => (s.inFlight.length > m.inFlight.length ? s : m));
    expect(busiest.inFlight.length).toBeGreaterThanOrEqual(2);
    for (const c of busiest.inFlight) {
      expect(c.id).toMatch(/^job-\d+$/);
      expect(c.call).toMatch(/^verifying job-\d+/);
      expect(c.elapsedMs).toBeGreaterThanOrEqual(0);
    }
    const b = tempDir();
    cliJson(['init', '--blueprint', path], { cwd: b });
    const lines = runCli(['run', '--progress', 'lines'], { cwd: b });
    expect(lines.stderr).toMatch(/in flight: verifying job-\d+.* \d+s, verifying job-\d+/);
  });
});
