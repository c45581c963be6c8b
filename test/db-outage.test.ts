/**
 * Issue 17, faults 3 and 4: the PostgreSQL server of a build's log stopped hard (`pg_ctl stop -m
 * immediate`) while a controller runs, on a private cluster of this test's own (started and
 * stopped here, never the shared one); and a controller frozen past its lease, woken after
 * another took over. Real server, real processes.
 */
import { spawn, execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, cliJson, runCli, tempDir, twoMilestoneHelios } from './support/cli.js';
import { postgresBin, startPrivateCluster, type PrivateCluster } from './support/private-pg.js';
import { deadLocalHolder, holderId } from '../src/adapters/controller/pg-lease.js';
import { isConnectionLoss, redactedUrl } from '../src/adapters/log/pg-connection.js';

const available = postgresBin() !== null;
if (!available && process.env.CI) throw new Error('db-outage.test.ts needs PostgreSQL installed (CI installs it)');
let cluster: PrivateCluster | undefined;
beforeAll(async () => {
  if (available) cluster = await startPrivateCluster();
}, 120_000);
afterAll(() => cluster?.destroy());

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let schemaN = 0;
const spec = () => `postgres:${cluster!.url}?schema=outage_${process.pid}_${schemaN++}`;


let reference: { tree: string; types: string[] } | undefined;
function referenceRun(): { tree: string; types: string[] } {
  if (reference === undefined) {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo)], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    reference = { tree: git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'), types: types(repo) };
  }
  return reference;
}
const types = (repo: string) => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l).type as string);

function spawnRun(args: readonly string[], repo: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: repo, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const waitFor = async (re: RegExp, ms = 60_000) => {
    const end = Date.now() + ms;
    while (!re.test(stderr)) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${re}; stderr: ${stderr}`);
      await sleep(25);
    }
  };
  return { child, done, waitFor, stderr: () => stderr, stdout: () => stdout };
}

describe.skipIf(!available)('the log\'s PostgreSQL server goes away (issue 17, fault 3)', () => {
  it('R-18 stopped hard for 6 s mid-run, longer than the 3 s lease: the run says it is retrying once, waits it out, keeps its lease (nobody took it) and finishes exactly', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', spec()], { cwd: repo });
    const run = spawnRun(['run', '--progress', 'off'], repo, { LONGBUILD_LEASE_TIMEOUT_MS: '3000', LONGBUILD_PAUSE_AT: 'before-append:CheckpointWritten:1:500' });
    await run.waitFor(/paused at/);
    cluster!.stop('immediate');
    await sleep(6000);
    cluster!.start();
    const end = await run.done;
    expect(end.code, run.stderr()).toBe(0);
    expect(run.stderr()).toMatch(/is unreachable \(.*\); retrying for up to 30 s/);
    expect(run.stderr()).not.toMatch(/internal error|    at |Unhandled/);
    expect(run.stderr().match(/retrying for up to/g)!.length).toBeLessThanOrEqual(2); // once for the log, at most once for the lease
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(referenceRun().tree);
    expect(types(repo)).toEqual(referenceRun().types);
  }, 120_000);

  it('R-3 down longer than the reconnect window: exit 1 with one line (where the log is intact up to, how to resume); back up, `run` takes the dead controller\'s lease at once (no exit 3) and finishes exactly', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', spec()], { cwd: repo });
    // A lease of a minute: only the dead-holder rule can let the next run in promptly.
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: '60000', LONGBUILD_PG_RECONNECT_SECONDS: '2' };
    const run = spawnRun(['run', '--progress', 'off'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-append:CheckpointWritten:1:500' });
    await run.waitFor(/paused at/);
    cluster!.stop('immediate');
    let end;
    try {
      end = await run.done;
    } finally {
      cluster!.start();
    }
    expect(end.code, run.stderr()).toBe(1);
    const last = run.stderr().trim().split('\n').pop()!;
    expect(last).toMatch(/^longbuild: the log at postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?schema=\w+ is unreachable \(.+\); the log is intact up to position \d+; once it is back, `longbuild run` resumes$/);
    expect(run.stderr()).not.toMatch(/internal error|    at |Unhandled/);
    const started = Date.now();
    const resumed = runCli(['run', '--progress', 'off'], { cwd: repo, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(Date.now() - started).toBeLessThan(45_000); // not the minute the dead holder's lease had left
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(referenceRun().tree);
  }, 120_000);

  it('R-3 a standby waiting for the lease survives a 3 s outage and takes over when the holder dies', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', spec()], { cwd: repo });
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: '2000' };
    const holder = spawnRun(['run', '--progress', 'off'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-append:CheckpointWritten:1:30000' });
    await holder.waitFor(/paused at/);
    const standby = spawnRun(['run', '--standby', '--progress', 'off'], repo, env);
    await standby.waitFor(/standing by/);
    cluster!.stop('immediate');
    await sleep(3000);
    cluster!.start();
    await sleep(500);
    holder.child.kill('SIGKILL');
    const end = await standby.done;
    expect(end.code, standby.stderr()).toBe(0);
    expect(standby.stderr()).toMatch(/took over the controller lease/);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}')).toBe(referenceRun().tree);
  }, 120_000);
});

describe.skipIf(!available)('a frozen controller woken after losing its lease (issue 17, fault 4)', () => {
  it('R-3 frozen inside a worker step while another controller finishes the build: it wakes in a world changed under it and exits 3 (lease lost), never 1, appending nothing', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', spec()], { cwd: repo });
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: '1000' };
    const frozen = spawnRun(['run', '--progress', 'off'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-effect:worker:1:8000' });
    await frozen.waitFor(/paused at/);
    const other = runCli(['run', '--standby', '--progress', 'off'], { cwd: repo, env });
    expect(other.code, other.stderr).toBe(0);
    const afterOther = cliJson(['verify'], { cwd: repo });
    const end = await frozen.done;
    expect(end.code, frozen.stderr()).toBe(3);
    expect(frozen.stderr().trim().split('\n').pop()).toMatch(/^longbuild: (controller lease lost|stream '.*': expected revision)/);
    expect(cliJson(['verify'], { cwd: repo })).toEqual(afterOther);
  }, 120_000);
});

describe('connection loss and lease holders', () => {
  it('what counts as a lost connection; URLs are told without their password', () => {
    expect(isConnectionLoss(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isConnectionLoss(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionLoss(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true);
    expect(isConnectionLoss(Object.assign(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]), {}))).toBe(true);
    expect(isConnectionLoss(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
    expect(redactedUrl('postgres://u:secret@h:5432/db?schema=s')).toBe('postgres://u:***@h:5432/db?schema=s');
  });

  it('a holder of this host is dead when its pid is gone or it ran in an earlier boot; another host\'s never is', () => {
    expect(deadLocalHolder(holderId(process.pid))).toBe(false);
    expect(deadLocalHolder(holderId(123456), () => false)).toBe(true);
    expect(deadLocalHolder(holderId(process.pid, undefined, 'ffffffff'))).toBe(true);
    expect(deadLocalHolder(holderId(123456, 'some-other-host'), () => false)).toBe(false);
    expect(deadLocalHolder('legacy-holder:1:abcd1234', () => false)).toBe(false);
  });
});
