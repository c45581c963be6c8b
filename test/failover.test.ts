/**
 * Issue 8: builds whose log lives in PostgreSQL. Two controllers in two real processes (standing in
 * for two hosts) share one build; only the lease holder appends; a SIGKILLed holder is replaced by
 * a standby within the lease timeout and the build resumes exactly (the canary's checks, against an
 * uninterrupted SQLite run of the same blueprint). Needs LONGBUILD_PG_URL; skipped with a notice
 * without it.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresEventLog } from '../src/adapters/log/postgres-log.js';
import { LeaseHeldError, LeaseLostError, takePostgresLease } from '../src/adapters/controller/pg-lease.js';
import { readLedger } from '../src/adapters/blueprint/effects-ledger.js';
import { BIN, cliJson, runCli, tempDir, twoMilestoneHelios } from './support/cli.js';
import { freshSchema, pgUrl, tick, tickCatalogue } from './support/pg.js';

const url = pgUrl('failover.test.ts');
const schemas: string[] = [];
afterAll(async () => {
  if (url) for (const s of schemas) await PostgresEventLog.dropSchema(url, s);
});

function pgSpec(): string {
  const schema = freshSchema('fo');
  schemas.push(schema);
  return `postgres:${url}?schema=${schema}`;
}

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();


interface Child {
  readonly pid: number;
  /** Resolves when stderr has printed a line matching `re`; rejects after `ms`. */
  waitStderr(re: RegExp, ms?: number): Promise<void>;
  readonly done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
  kill(signal: NodeJS.Signals): void;
}

/** The built CLI as a real child process that runs while the test does other things. */
function spawnCli(args: readonly string[], cwd: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of [...waiters]) if (w.re.test(stderr)) (waiters.splice(waiters.indexOf(w), 1), w.resolve());
  });
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return {
    pid: child.pid!,
    done,
    kill: (signal) => child.kill(signal),
    waitStderr: (re, ms = 20_000) => new Promise<void>((resolve, reject) => {
      if (re.test(stderr)) return resolve();
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re} on stderr; got: ${stderr}`)), ms);
      waiters.push({ re, resolve: () => (clearTimeout(timer), resolve()) });
      void done.then(() => setTimeout(() => reject(new Error(`process exited before ${re}; stderr: ${stderr}`)), 50));
    }),
  };
}

/**
 * Everything an exact resume must reproduce (the canary's checks, and then some): accepted nodes,
 * checkpoints, calls, integration commits and tree, the event sequence. Summary ids are content
 * hashes over verification evidence (test-runner timings), so they differ between any two runs —
 * as `longbuild fuzz` does, summaries are compared by milestone. The critical path's estimate is
 * made of measured durations (verification times), so only its nodes are compared.
 */
function outcomeOf(repo: string) {
  const { graphSha256: _g, summaries, criticalPath, position: _p, ...status } = cliJson(['status'], { cwd: repo });
  const verify = cliJson(['verify'], { cwd: repo });
  // What a run records as it ends (R-62's ProvenanceRecorded) is where runs ended, not a decision: a
  // build run in stages has more of them. The decisions are compared, in order, with their times.
  const logged = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type !== 'ProvenanceRecorded');
  const alias = (id: string, milestone: string) => (id.startsWith('summary-') ? `summary@${milestone}` : id);
  return {
    status: { ...status, summaries: summaries.length, criticalPath: criticalPath.nodes },
    nodes: cliJson(['show'], { cwd: repo }).nodes.map((n: { id: string; milestone: string; summary?: { milestoneId: string; compacted: string[] } }) => ({
      ...n, id: alias(n.id, n.milestone),
      // What a summary stands for, by the nodes it compacted (absorbed summaries have content-hash ids too).
      ...(n.summary ? { summary: { milestoneId: n.summary.milestoneId, compacted: n.summary.compacted } } : {}),
    })),
    tree: git(repo, 'ls-tree', '-r', 'refs/heads/longbuild/integration'),
    verify: { ok: verify.ok },
    events: logged.map((e) => `${e.streamId} ${e.type} ${e.metadata.recordedAt}`),
  };
}

const ledgerKeys = (path: string) => readLedger(readFileSync(path, 'utf8')).map((e) => `${e.kind}:${e.key}`);

describe.skipIf(!url)('controller fencing and failover on a PostgreSQL log (issue 8)', () => {
  let reference: ReturnType<typeof outcomeOf>;
  let referenceLedger: string[];

  beforeAll(() => {
    // The uninterrupted run, on the default SQLite log.
    const repo = tempDir();
    const ledger = join(repo, '..', `${repo.split('/').pop()}-ledger.ndjson`);
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo)], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo, env: { LONGBUILD_EFFECTS_LEDGER: ledger } }).outcome).toBe('horizon_complete');
    reference = outcomeOf(repo);
    referenceLedger = ledgerKeys(ledger);
  }, 60_000);

  it('a blueprint build runs end to end with its log in PostgreSQL (init --log, run, verify, status): the same log, tree and state as on SQLite', () => {
    const repo = tempDir();
    const spec = pgSpec();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', spec], { cwd: repo });
    expect(JSON.parse(readFileSync(join(repo, '.longbuild', 'log.json'), 'utf8'))).toEqual({ log: spec });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    expect(outcomeOf(repo)).toEqual(reference);
    // Projections stay local SQLite; the events are not there.
    expect(existsSync(join(repo, '.longbuild', 'events.db'))).toBe(false);
  }, 60_000);

  it('R-19 the lease holder is SIGKILLed mid-build; a standby on another process takes over within the lease timeout and resumes exactly', async () => {
    const repo = tempDir();
    const ledger = join(repo, '..', `${repo.split('/').pop()}-ledger.ndjson`);
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', pgSpec()], { cwd: repo });
    // Long enough that the checks while A is frozen (a standby, two statuses, a refused step: a few
    // CLI runs) finish before A's lease can lapse, even on a loaded machine (5 s was not, in CI).
    const timeoutMs = 15_000;
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: String(timeoutMs), LONGBUILD_EFFECTS_LEDGER: ledger };

    // Holder A: stops (frozen) right before appending the first checkpoint, lease held.
    const a = spawnCli(['run', '--json'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-append:CheckpointWritten:1:60000' });
    await a.waitStderr(/paused at before-append:CheckpointWritten:1/);
    // Frozen, A renews no more: from here its lease lives at most `timeoutMs`.
    const frozenAt = Date.now();
    // Standby B waits for the lease...
    const b = spawnCli(['run', '--standby', '--json'], repo, env);
    await b.waitStderr(/standing by: controller lease held by/);
    const atPause = cliJson(['status'], { cwd: repo });
    expect(atPause.calls).toEqual({ planner: 1, worker: 1 });

    // Only one holder: a controller without --standby is refused (exit 3) and changes nothing.
    const refused = runCli(['step'], { cwd: repo, env });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/holds the build's controller lease/);
    expect(cliJson(['status'], { cwd: repo }).position).toBe(atPause.position);

    // ...and takes it within the lease timeout of the holder's death.
    a.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await a.done).signal).toBe('SIGKILL');
    await b.waitStderr(/took over the controller lease \(token 2\)/);
    const takeoverMs = Date.now() - killedAt;
    const sinceLastRenewalMs = Date.now() - frozenAt;
    expect(takeoverMs).toBeLessThan(timeoutMs + 1000);
    expect(sinceLastRenewalMs).toBeLessThan(timeoutMs + 1500);
    console.log(`[failover.test.ts] takeover ${takeoverMs} ms after SIGKILL, ${sinceLastRenewalMs} ms after the holder's last chance to renew (lease timeout ${timeoutMs} ms)`);

    const finished = await b.done;
    expect(finished.code, finished.stderr).toBe(0);
    expect(JSON.parse(finished.stdout).outcome).toBe('horizon_complete');
    // Zero planner replay, no re-implementation: every real call exactly once, as in the clean run.
    expect(ledgerKeys(ledger)).toEqual(referenceLedger);
    expect(new Set(ledgerKeys(ledger)).size).toBe(ledgerKeys(ledger).length);
    // Same accepted nodes, checkpoints, integration tree and commits, the same event sequence.
    expect(outcomeOf(repo)).toEqual(reference);
  }, 90_000);

  it('R-3 a controller that lost its lease cannot append: its append fails on the expected revision (exit 3), nothing written', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', pgSpec()], { cwd: repo });
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: '1000' };
    // A freezes (no renewals: its lease lapses) before appending its first checkpoint...
    const a = spawnCli(['run', '--json'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-append:CheckpointWritten:1:6000' });
    await a.waitStderr(/paused at/);
    // ...B takes the lapsed lease and appends that checkpoint itself.
    const b = spawnCli(['step', '--standby', '--json'], repo, env);
    const stepped = await b.done;
    expect(stepped.code, stepped.stderr).toBe(0);
    expect(JSON.parse(stepped.stdout)).toMatchObject({ outcome: 'checkpointed', milestoneId: 'interfaces-and-api' });
    const afterB = cliJson(['verify'], { cwd: repo });

    // A wakes up believing it still leads, and tries to append with its stale expected revision.
    const stale = await a.done;
    expect(stale.code).toBe(3);
    expect(stale.stderr).toMatch(/expected revision \d+, but the stream is at \d+/);
    const afterA = cliJson(['verify'], { cwd: repo });
    expect(afterA).toEqual(afterB); // not one event from A
    expect(afterA.ok).toBe(true);
    // The build is unharmed: finishing it gives the clean run's result.
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    expect(outcomeOf(repo)).toEqual(reference);
  }, 60_000);

  it('R-3 a deposed controller moves no ref: frozen right before a promotion while a standby finishes the build, it wakes, exits 3 before touching git, and both integration refs stay where the log says', async () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo), '--log', pgSpec()], { cwd: repo });
    const env = { LONGBUILD_LEASE_TIMEOUT_MS: '1000' };
    const a = spawnCli(['run', '--json'], repo, { ...env, LONGBUILD_PAUSE_AT: 'before-effect:promote:1:8000' });
    await a.waitStderr(/paused at before-effect:promote/);
    const b = spawnCli(['run', '--standby', '--json'], repo, env);
    const finished = await b.done;
    expect(finished.code, finished.stderr).toBe(0);
    const head = JSON.parse(finished.stdout).integrationHead as string;
    const stale = await a.done;
    expect(stale.code).toBe(3);
    expect(stale.stderr).toMatch(/controller lease lost/);
    // What a user checks: the refs, in the repository and the integrator's, are the log's head.
    expect(git(repo, 'rev-parse', 'refs/heads/longbuild/integration')).toBe(head);
    expect(git(repo, '--git-dir', join(repo, '.longbuild', 'integrator.git'), 'rev-parse', 'refs/heads/longbuild/integration')).toBe(head);
    expect(cliJson(['verify'], { cwd: repo }).ok).toBe(true);
    expect(outcomeOf(repo)).toEqual(reference);
  }, 90_000);

  it('R-3 the fencing token refuses a stale holder\'s append even at the right expected revision; a live lease is refused to others', async () => {
    const spec = pgSpec();
    const schema = spec.slice(spec.indexOf('schema=') + 7);
    const first = await takePostgresLease({ url: url!, schema, timeoutMs: 5000 });
    await expect(takePostgresLease({ url: url!, schema, timeoutMs: 5000 })).rejects.toBeInstanceOf(LeaseHeldError);
    const staleLog = await PostgresEventLog.open({ url: url!, schema, catalogue: tickCatalogue, fence: first.appendFence! });
    await staleLog.append('s', [tick(1)], 'no-stream');
    // The holder's host is cut off: its lease lapses (expired here by hand) and another takes it.
    await staleLog.query('UPDATE controller_lease SET expires_at = clock_timestamp()');
    const second = await takePostgresLease({ url: url!, schema, timeoutMs: 5000 });
    expect(second.token).toBe(first.token + 1);
    const liveLog = await PostgresEventLog.open({ url: url!, schema, catalogue: tickCatalogue, fence: second.appendFence! });
    try {
      // Same expected revision (0) for both: only the token tells them apart.
      await expect(staleLog.append('s', [tick(2)], 0)).rejects.toBeInstanceOf(LeaseLostError);
      expect(first.lost()).toBe(true);
      await liveLog.append('s', [tick(2)], 0);
      expect((await liveLog.readAll()).map((e) => (e.data as { n: number }).n)).toEqual([1, 2]);
      await expect(staleLog.append('s', [tick(3)], 1)).rejects.toBeInstanceOf(LeaseLostError);
      expect((await liveLog.verifyChain()).events).toBe(2);
    } finally {
      await first.release(); // not ours any more: leaves the new holder's row alone
      await expect(takePostgresLease({ url: url!, schema, timeoutMs: 5000 })).rejects.toBeInstanceOf(LeaseHeldError);
      await second.release();
      const third = await takePostgresLease({ url: url!, schema, timeoutMs: 5000 });
      expect(third.token).toBe(second.token + 1); // released: free at once, token still rising
      await third.release();
      await staleLog.close();
      await liveLog.close();
    }
  });

  it('longbuild export --to postgres:... --switch moves a running SQLite build to PostgreSQL with the same hash chain, and it finishes there', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo)], { cwd: repo });
    cliJson(['run', '--max-steps', '4'], { cwd: repo });
    const before = cliJson(['verify'], { cwd: repo });
    const spec = pgSpec();
    const exported = cliJson(['export', '--to', spec, '--switch'], { cwd: repo });
    expect(exported).toEqual({ events: before.events, headHash: before.headHash, to: spec.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@'), switched: true });
    expect(cliJson(['verify'], { cwd: repo })).toEqual(before); // now read from PostgreSQL
    // The log the build now uses is no export target; nothing copied.
    const again = runCli(['export', '--to', spec], { cwd: repo });
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^longbuild: export: the build's log already is postgres:.*; give another, empty log/);
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    expect(outcomeOf(repo)).toEqual(reference);
  }, 60_000);
});
