/**
 * Spend and budgets (issue 46, R-58, R-59), through the CLI with real child processes: command
 * planners and workers that report what each call used in LONGBUILD_USAGE_FILE and keep their own
 * ledger of what they reported (the oracle), real SIGKILLs at the controller's fault points and in
 * the middle of a worker's call, real git and SQLite.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BIN, cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

import { build, reported, sum } from './support/spend-build.js';

describe('spend and budgets (issue 46, R-58, R-59)', () => {
  it('every call records what it used: the agent\'s cost, else priced from `prices`, else unknown; status and show --at report it', () => {
    const { repo, ledger } = build({
      prices: { 'planner-model': { input: 3, output: 15 }, 'priced-model': { input: 2, output: 10, cached: 0.5 } },
      // Nodes n0 report a cost, n1 a priced model, in m2 an unpriced model.
      workerUsage: "packet.nodeId.endsWith('n0') ? { model: 'worker-model', inputTokens: 5000, outputTokens: 700, costUsd: 0.25 } : packet.nodeId.startsWith('m1') ? { model: 'priced-model', inputTokens: 10000, outputTokens: 1000, cachedTokens: 4000 } : { model: 'nobody-knows', inputTokens: 10, outputTokens: 1 }",
    });
    expect(runCli(['run'], { cwd: repo }).code).toBe(0);
    const log = events(repo);
    expect(log.find((e) => e.type === 'PlannerReturned')!.data.usage).toEqual({ model: 'planner-model', inputTokens: 1000, outputTokens: 200, costUsd: 0.006, costFrom: 'prices' });
    const byNode = Object.fromEntries(log.filter((e) => e.type === 'AttemptFinished').map((e) => [e.data.nodeId, e.data.usage]));
    expect(byNode['m1-n0']).toEqual({ model: 'worker-model', inputTokens: 5000, outputTokens: 700, costUsd: 0.25, costFrom: 'agent' });
    // 6,000 input at $2, 4,000 cached at $0.50, 1,000 output at $10 per million.
    expect(byNode['m1-n1']).toEqual({ model: 'priced-model', inputTokens: 10000, outputTokens: 1000, cachedTokens: 4000, costUsd: 0.024, costFrom: 'prices' });
    expect(byNode['m2-n1']).toEqual({ model: 'nobody-knows', inputTokens: 10, outputTokens: 1 });
    const status = cliJson(['status'], { cwd: repo });
    const all = reported(ledger);
    expect(status.spend).toMatchObject({ calls: 5, reported: 5, costed: 4, inputTokens: sum(all, 'inputTokens'), outputTokens: sum(all, 'outputTokens'), cachedTokens: sum(all, 'cachedTokens') });
    expect(status.spend.usd).toBeCloseTo(0.006 + 0.25 + 0.024 + 0.25, 9);
    expect(status.spend.milestones.m2).toMatchObject({ calls: 2, reported: 2, costed: 1, usd: 0.25 });
    expect(runCli(['status'], { cwd: repo }).stdout).toMatch(/^spend: \$0\.53, 23,611 tokens in 5 calls; planner \$0\.0060, 1,200 tokens; m1 \$0\.27, 16,700 tokens; m2 \$0\.25, 5,711 tokens$/m);
    // Time travel: the spend as of the first worker's result.
    const at = (log.find((e) => e.type === 'AttemptFinished') as unknown as { position: number }).position;
    expect(cliJson(['show', '--at', String(at)], { cwd: repo }).spend).toMatchObject({ calls: 2, usd: 0.256 });
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a budget pauses the build before the next call would start past it (one line, one BudgetReached), `budget` raises it and run goes on', () => {
    const { repo, ledger } = build({ budget: { usd: 1 }, perMilestone: 3, plannerUsage: { model: 'm', inputTokens: 1, outputTokens: 1, costUsd: 0.01 } });
    const first = runCli(['run', '--json'], { cwd: repo });
    expect(first.code, first.stderr).toBe(0);
    const out = JSON.parse(first.stdout);
    expect(out.outcome).toBe('paused');
    expect(out.reason).toBe("$1.01 spent of the build's $1.00 budget; `longbuild budget --usd N` raises it, then `longbuild run` goes on");
    // The planner ($0.01) and four workers ($0.25 each): the fifth would start past the limit.
    expect(reported(ledger).filter((r) => r.role === 'worker')).toHaveLength(4);
    expect(events(repo).filter((e) => e.type === 'BudgetReached').map((e) => e.data)).toEqual([
      { scope: 'build', unit: 'usd', limit: 1, spent: 1.01, reason: "$1.01 spent of the build's $1.00 budget", graphRevision: expect.any(Number) },
    ]);
    // Run again without raising it: paused again at once, nothing more recorded or called.
    const again = runCli(['run'], { cwd: repo });
    expect(again.stdout).toMatch(/^paused after 1 steps/);
    expect(events(repo).filter((e) => e.type === 'BudgetReached')).toHaveLength(1);
    expect(reported(ledger).filter((r) => r.role === 'worker')).toHaveLength(4);
    expect(cliJson(['status'], { cwd: repo }).paused).toMatch(/^\$1\.01 spent of the build's \$1\.00 budget/);
    expect(runCli(['budget', '--usd', '0'], { cwd: repo }).stderr).toMatch(/--usd must be a positive number/);
    const raised = cliJson(['budget', '--usd', '5', '--reason', 'worth it'], { cwd: repo });
    expect(raised.budget).toEqual({ usd: 5 });
    expect(events(repo).at(-1)).toMatchObject({ type: 'BudgetChanged', data: { budget: { usd: 5 }, reason: 'worth it', operator: { action: 'budget' } } });
    const rest = runCli(['run', '--json'], { cwd: repo });
    expect(JSON.parse(rest.stdout).outcome).toBe('horizon_complete');
    expect(cliJson(['status'], { cwd: repo }).spend.usd).toBeCloseTo(0.01 + 6 * 0.25, 9);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a token budget and a milestone budget pause the same way; with calls in flight they finish first (concurrency 2)', () => {
    const tokens = build({ budget: { tokens: 12000 }, plannerUsage: null });
    expect(JSON.parse(runCli(['run', '--json'], { cwd: tokens.repo }).stdout).outcome).toBe('paused');
    // 5,700 tokens a call: the third starts at 11,400 and none after it.
    expect(reported(tokens.ledger)).toHaveLength(3);
    expect(events(tokens.repo).filter((e) => e.type === 'BudgetReached').map((e) => e.data.unit)).toEqual(['tokens']);
    const milestone = build({ budget: { perMilestone: { usd: 0.25 } }, perMilestone: 3, concurrency: 2 });
    expect(JSON.parse(runCli(['run', '--json'], { cwd: milestone.repo }).stdout).outcome).toBe('paused');
    // Up to two calls in flight, each started under the limit: those finish (recorded), none starts after the first returns.
    const workers = reported(milestone.ledger).filter((r) => r.role === 'worker').length;
    expect(workers).toBeGreaterThanOrEqual(1);
    expect(workers).toBeLessThanOrEqual(2);
    expect(events(milestone.repo).filter((e) => e.type === 'AttemptFinished')).toHaveLength(workers);
    expect(events(milestone.repo).filter((e) => e.type === 'BudgetReached').map((e) => [e.data.scope, e.data.milestoneId])).toEqual([['milestone', 'm1']]);
    expect(cliJson(['budget', '--per-milestone-usd', '1'], { cwd: milestone.repo }).budget).toEqual({ perMilestone: { usd: 1 } });
    expect(events(milestone.repo).at(-1)!.type).toBe('BudgetChanged');
    expect(JSON.parse(runCli(['run', '--json'], { cwd: milestone.repo }).stdout).outcome).toBe('horizon_complete');
  });

  it('a node that alone spent its perNode limit is blocked with that reason; the rest of the build goes on', () => {
    // n0 fails every attempt at $0.50 a call: after two it has spent its $0.80.
    const { repo } = build({ budget: { perNode: { usd: 0.8 } }, milestones: 1, maxAttempts: 5, workerUsage: "({ inputTokens: 10, outputTokens: 10, costUsd: 0.5 })", workerExtra: "if (packet.nodeId === 'm1-n0') process.exit(1);" });
    const r = runCli(['run', '--json'], { cwd: repo });
    expect(JSON.parse(r.stdout).outcome).toBe('blocked');
    const log = events(repo);
    expect(log.filter((e) => e.type === 'AttemptStarted' && e.data.nodeId === 'm1-n0')).toHaveLength(2);
    expect(log.filter((e) => e.type === 'BudgetReached').map((e) => e.data)).toEqual([{
      scope: 'node', nodeId: 'm1-n0', unit: 'usd', limit: 0.8, spent: 1, graphRevision: expect.any(Number),
      reason: "$1.00 spent of the node's $0.80 budget (perNode); `longbuild budget --per-node-usd N` (or --per-node-tokens) and `longbuild retry m1-n0` let it go on",
    }]);
    expect(cliJson(['show'], { cwd: repo }).nodes.filter((n: { state: string }) => n.state === 'accepted').map((n: { id: string }) => n.id)).toEqual(['m1-n1']);
    expect(cliJson(['status'], { cwd: repo }).blocked).toMatch(/m1-n0 is blocked after 2 attempts \(last: \$1\.00 spent of the node's \$0\.80 budget/);
  });

  it('init refuses a bad budget or price table naming the field', () => {
    const cfg = tempDir('longbuild-spend-bad-');
    writeFileSync(join(cfg, 'request.json'), '{"goal":"g"}');
    const refused = (extra: object) => {
      writeFileSync(join(cfg, 'c.json'), JSON.stringify({ planner: { command: ['true'] }, worker: { command: ['true'] }, ...extra }));
      const r = runCli(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'c.json')], { cwd: userRepo() });
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      return r.stderr;
    };
    expect(refused({ budget: { usd: -5 } })).toMatch(/budget\.usd: .*>0/);
    expect(refused({ budget: { dollars: 5 } })).toMatch(/budget: Unrecognized key: "dollars"/);
    expect(refused({ budget: { perNode: { tokens: 1.5 } } })).toMatch(/budget\.perNode\.tokens/);
    expect(refused({ prices: { m: { input: 1 } } })).toMatch(/prices\.m\.output/);
  });
});

describe('the ledger across crashes (issue 46): counted as made, exact to what the drivers reported', () => {
  it('property: for random kill points and costs, the ledger equals the drivers\' own ledger, and every report past a crash is marked', async () => {
    const points = ['before-effect:worker', 'after-effect:worker', 'after-keep:worker', 'after-effect:planner', 'after-keep:planner', 'before-effect:verify'];
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ point: fc.constantFrom(...points), n: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 1, max: 9 }),
      async (kills, cents) => {
        const { repo, ledger } = build({ milestones: 1, perMilestone: 3, workerUsage: `({ inputTokens: 100 + packet.nodeId.length, outputTokens: ${cents}, costUsd: ${cents} / 100 })` });
        for (const k of kills) runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: `${k.point}:${k.n}` } });
        const end = runCli(['run'], { cwd: repo });
        expect(end.code, end.stderr).toBe(0);
        const all = reported(ledger);
        const spend = cliJson(['status'], { cwd: repo }).spend;
        expect({ in: spend.inputTokens, out: spend.outputTokens, calls: spend.reported }).toEqual({ in: sum(all, 'inputTokens'), out: sum(all, 'outputTokens'), calls: all.length });
        expect(spend.usd).toBeCloseTo(all.reduce((n, r) => n + (r.costUsd ?? 0), 0), 9);
        // Every call made again is counted as made, and marked in the log.
        const reinvoked = events(repo).filter((e) => e.type === 'EffectReinvoked');
        expect(spend.calls).toBe(1 + 3 + reinvoked.length);
      },
    ), { numRuns: 6, seed: Number(process.env.FC_SEED ?? 46), verbose: 1 });
  }, 240_000);

  it('a worker killed (SIGKILL of the whole controller) after it reported: the call made again records the lost invocation\'s usage', async () => {
    const once = join(tempDir('longbuild-spend-once-'), 'once');
    // The first invocation reports and then waits to be killed; the second finishes.
    const { repo, ledger } = build({ milestones: 1, perMilestone: 1, workerExtra: `if (!existsSync(${JSON.stringify(once)})) { writeFileSync(${JSON.stringify(once)}, ''); await new Promise((r) => setTimeout(r, 600_000)); }` });
    const child = spawn(process.execPath, [BIN, 'run'], { cwd: repo, env: { ...process.env, NO_COLOR: '1' }, stdio: 'ignore', detached: true });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    while (reported(ledger).filter((r) => r.role === 'worker').length === 0) await new Promise((r) => setTimeout(r, 50));
    process.kill(-child.pid!, 'SIGKILL');
    await exited;
    const r = runCli(['run'], { cwd: repo });
    expect(r.code, r.stderr).toBe(0);
    const reinvoked = events(repo).filter((e) => e.type === 'EffectReinvoked');
    expect(reinvoked.map((e) => e.data)).toEqual([{ effect: 'worker', key: expect.any(String), usage: { model: 'worker-model', inputTokens: 5000, outputTokens: 700, cachedTokens: 1000, costUsd: 0.25, costFrom: 'agent' } }]);
    const spend = cliJson(['status'], { cwd: repo }).spend;
    expect(spend).toMatchObject({ calls: 3, reported: 3, unknownReinvocations: 0 });
    expect(spend.usd).toBeCloseTo(reported(ledger).reduce((n, x) => n + (x.costUsd ?? 0), 0), 9);
  }, 60_000);

  it('longbuild fuzz covers a budgeted build: every kill point resumes without a call past the budget, the ledger exact (interrupted invocations aside)', () => {
    const { cfg } = build({ budget: { usd: 0.6 }, milestones: 1, perMilestone: 3 });
    const r = runCli(['fuzz', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json'), '--faults', 'kill', '--points', '10', '--seed', '46', '--jobs', '2', '--json'], { cwd: tempDir('longbuild-spend-fuzz-') });
    expect(r.code, r.stdout.slice(0, 2000) + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.cases.length).toBe(10);
    expect(report.cases.every((c: { result: string }) => c.result === 'passed')).toBe(true);
  }, 180_000);

  it('a hostile usage file (a symlink to a host file, a huge file, a bad report) is not read: the call\'s usage is unknown, with one warning', () => {
    const cases: [string, string][] = [
      ['symlink', "rmSync(process.env.LONGBUILD_USAGE_FILE); symlinkSync('/etc/passwd', process.env.LONGBUILD_USAGE_FILE);"],
      ['huge', "writeFileSync(process.env.LONGBUILD_USAGE_FILE, ' '.repeat(200000) + '{}');"],
      ['negative', "writeFileSync(process.env.LONGBUILD_USAGE_FILE, JSON.stringify({ inputTokens: -1, outputTokens: 1 }));"],
    ];
    for (const [name, extra] of cases) {
      const { repo } = build({ milestones: 1, perMilestone: 1, plannerUsage: null, workerExtra: extra });
      const r = runCli(['run'], { cwd: repo });
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stderr, name).toMatch(/usage\.json is not a usage report: .*; the call's usage is recorded as unknown/);
      expect(events(repo).find((e) => e.type === 'AttemptFinished')!.data.usage, name).toBeUndefined();
      expect(cliJson(['status'], { cwd: repo }).spend, name).toMatchObject({ calls: 2, reported: 0 });
    }
  });
});
