/**
 * Head gates (issue 46, R-60), through the CLI with real child processes, git and SQLite: a build
 * whose config says `approve: ["checkpoint", "land"]` stops after each milestone's checkpoint and
 * before it completes; a rejected checkpoint reaches the planner's next call as feedback, a rejected
 * final head opens a repair window; `land` publishes only an approved head; each decision is an
 * event naming who made it, and a notifier told of every wait.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

function build(extra: Record<string, unknown>) {
  const cfg = tempDir('longbuild-heads-cfg-');
  const inputs = join(cfg, 'inputs.ndjson');
  const told = join(cfg, 'told.ndjson');
  writeFileSync(join(cfg, 'planner.mjs'), `import { appendFileSync, readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
appendFileSync(${JSON.stringify(inputs)}, JSON.stringify({ callId: input.callId, purpose: input.purpose, reviews: input.reviews ?? [] }) + '\\n');
const n = (id) => ({ id, kind: 'writable', deps: [] });
process.stdout.write(JSON.stringify(input.purpose === 'seal'
  ? { detailed: [{ id: 'm1', title: 'one', nodes: [n('a')] }], coarse: [{ id: 'c1', title: 'later' }] }
  : input.purpose === 'renew' ? { detailed: [{ id: 'c1', title: 'later', nodes: [n('b')] }], coarse: [] }
  : { detailed: [{ id: 'r1', title: 'repair', nodes: [n('fix')] }], coarse: [] }));
`);
  writeFileSync(join(cfg, 'worker.mjs'), "import { readFileSync, writeFileSync } from 'node:fs';\nconst p = JSON.parse(readFileSync(0, 'utf8'));\nwriteFileSync(p.nodeId + '.txt', 'x\\n');\n");
  // The notifier keeps its own record, and (under \`longbuild fuzz\`) reports each delivery to the effects ledger.
  writeFileSync(join(cfg, 'notifier.mjs'), `import { appendFileSync, readFileSync } from 'node:fs';
const text = readFileSync(0, 'utf8');
appendFileSync(${JSON.stringify(told)}, text.replace(/\\n/g, ' ') + '\\n');
if (process.env.LONGBUILD_EFFECTS_LEDGER) appendFileSync(process.env.LONGBUILD_EFFECTS_LEDGER, JSON.stringify({ kind: 'notification', notification: JSON.parse(text) }) + '\\n');
`);
  writeFileSync(join(cfg, 'request.json'), '{"goal":"gated heads"}');
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off',
    notify: [{ on: ['awaiting_approval', 'completed'], command: ['node', join(cfg, 'notifier.mjs')], minIntervalSeconds: 0 }], ...extra,
  }));
  const repo = userRepo();
  const init = runCli(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  expect(init.code, init.stderr).toBe(0);
  return { repo, inputs, told, cfg };
}

type Asked = { callId: string; purpose: string; reviews: { gate: string; milestoneId?: string; head: string; approved: boolean; reason?: string }[] };
const asked = (inputs: string): Asked[] => readFileSync(inputs, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Asked);
const run = (repo: string, code = 0) => {
  const r = runCli(['run', '--json'], { cwd: repo });
  expect(r.code, r.stderr).toBe(code);
  return JSON.parse(r.stdout) as { outcome: string; reason?: string };
};

describe('head gates: checkpoint and land (issue 46, R-60)', () => {
  it('waits at each checkpoint and before completing; a rejected checkpoint is the renewal\'s feedback, a rejected final head is repaired; land publishes only an approved head', () => {
    const { repo, inputs, told } = build({ approve: ['checkpoint', 'land'] });
    const first = run(repo);
    expect(first).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^milestone 'm1''s checkpoint at [0-9a-f]{12} awaits your approval: `longbuild approve --show`/) });
    const log = events(repo);
    const requested = log.filter((e) => e.type === 'ApprovalRequested');
    expect(requested.at(-1)).toMatchObject({ type: 'ApprovalRequested', data: { gate: 'checkpoint', milestoneId: 'm1', horizonRevision: 1 } });
    expect(log.some((e) => e.type === 'PlannerInvoked' && e.data.purpose === 'renew')).toBe(false);
    // Waiting again records nothing and asks nobody.
    expect(run(repo).outcome).toBe('awaiting_approval');
    expect(events(repo).filter((e) => e.type !== 'NotificationSent')).toHaveLength(log.filter((e) => e.type !== 'NotificationSent').length);
    expect(cliJson(['status'], { cwd: repo }).awaitingApproval).toMatch(/milestone 'm1''s checkpoint/);
    const shown = cliJson(['approve', '--show'], { cwd: repo });
    expect(shown).toMatchObject({ gate: 'checkpoint', milestoneId: 'm1', head: requested.at(-1)!.data.head });
    expect(shown.diffStat).toMatch(/a\.txt/);
    // `land` refuses a head nobody approved, changing nothing.
    const early = runCli(['land', '--into', 'shipped'], { cwd: repo });
    expect([early.code, early.stderr]).toEqual([1, expect.stringMatching(/^longbuild: land: the integration head [0-9a-f]{12} is not approved \(config approve: "land"\)/)]);
    expect(execFileSync('git', ['-C', repo, 'branch', '--list', 'shipped'], { encoding: 'utf8' }).trim()).toBe('');

    expect(cliJson(['reject', '--reason', 'a.txt needs a header', '--as', 'alice'], { cwd: repo })).toMatchObject({ gate: 'checkpoint', milestoneId: 'm1' });
    expect(events(repo).filter((e) => e.type === 'HeadReviewed').at(-1)).toMatchObject({ type: 'HeadReviewed', data: { gate: 'checkpoint', milestoneId: 'm1', approved: false, reason: 'a.txt needs a header', operator: { action: 'reject', user: 'alice' } } });
    // The renewal is asked with the rejection as feedback; its milestone's checkpoint waits in turn.
    expect(run(repo)).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^milestone 'c1''s checkpoint/) });
    const renewal = asked(inputs).find((a) => a.purpose === 'renew')!;
    expect(renewal.reviews).toEqual([expect.objectContaining({ gate: 'checkpoint', milestoneId: 'm1', approved: false, reason: 'a.txt needs a header' })]);
    expect(cliJson(['approve', '--as', 'bob'], { cwd: repo })).toMatchObject({ gate: 'checkpoint', milestoneId: 'c1' });

    // The final head waits before the build completes; rejected, a repair window is planned.
    const final = run(repo);
    expect(final).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^the final head [0-9a-f]{12} awaits your approval/) });
    expect(events(repo).some((e) => e.type === 'BuildCompleted')).toBe(false);
    expect(cliJson(['reject', '--reason', 'no docs'], { cwd: repo })).toMatchObject({ gate: 'land' });
    expect(run(repo)).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^milestone 'r1''s checkpoint/) });
    const repair = asked(inputs).find((a) => a.purpose === 'repair')!;
    expect(repair.reviews).toEqual([expect.objectContaining({ gate: 'checkpoint', milestoneId: 'c1', approved: true }), expect.objectContaining({ gate: 'land', approved: false, reason: 'no docs' })]);
    expect(cliJson(['approve'], { cwd: repo }).gate).toBe('checkpoint');
    expect(run(repo).reason).toMatch(/^the final head/);
    const approved = cliJson(['approve', '--reason', 'ship it'], { cwd: repo });
    expect(approved).toMatchObject({ gate: 'land' });
    expect(run(repo).outcome).toBe('horizon_complete');
    const end = events(repo);
    const completed = end.find((e) => e.type === 'BuildCompleted')!;
    expect(completed.data.integrationHead).toBe(approved.head);
    expect(existsSync(join(repo, 'fix.txt'))).toBe(false); // nothing landed yet
    const landed = cliJson(['land', '--into', 'shipped'], { cwd: repo });
    expect(landed).toMatchObject({ into: 'shipped', to: approved.head });
    // Five gates were asked for (m1, c1, the final head, r1, the final head again): each told to the notifier.
    const gates = end.filter((e) => e.type === 'ApprovalRequested');
    expect(gates.map((e) => e.data.milestoneId ?? e.data.gate)).toEqual(['m1', 'c1', 'land', 'r1', 'land']);
    const keys = new Set(readFileSync(told, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { key: string; kind: string }).kind === 'awaiting_approval' ? (JSON.parse(l) as { events: { position: number }[] }).events.map((e) => e.position) : []).flat());
    for (const g of gates) expect(keys.has(g.position), `ApprovalRequested at ${g.position} notified`).toBe(true);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('longbuild fuzz drives a gated build as an operator would: a kill at each gate (the wait recorded, an approval in doubt) and at each notification resumes to the clean run, every delivery audited against the notifier\'s own record', () => {
    const { cfg } = build({ approve: ['plan', 'checkpoint', 'land'] });
    const only = [
      'after-append:PlannerReturned:1', 'before-append:ProposalApproved:2',
      'after-append:ApprovalRequested:1', 'before-append:HeadReviewed:1', 'after-append:HeadReviewed:3',
      'before-append:BuildCompleted:1', 'before-append:NotificationSent:1', 'after-append:NotificationSent:3',
    ];
    const r = runCli(['fuzz', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json'), '--faults', 'kill', ...only.flatMap((p) => ['--only', p]), '--jobs', '2', '--json'], { cwd: tempDir('longbuild-heads-fuzz-') });
    expect(r.code, r.stdout.slice(0, 3000) + r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { cases: { point: string; result: string }[]; clean: { approvals: number; notifications: number } };
    expect(report.clean.approvals).toBe(5); // the first plan, m1's checkpoint, the renewal, c1's checkpoint, the final head
    expect(report.clean.notifications).toBeGreaterThan(0);
    expect(report.cases.map((c) => `${c.point}`).sort()).toEqual(only.map((p) => p.replace(/:\d+$/, '')).sort());
    expect(report.cases.every((c) => c.result === 'passed')).toBe(true);
  }, 240_000);

  it('a rejected final head with no repair window left blocks the build, and approve accepts it after all', () => {
    const { repo } = build({ approve: ['land'], acceptanceRepairs: 0 });
    expect(run(repo).reason).toMatch(/^the final head/);
    expect(runCli(['reject', '--reason', 'not yet', '--as', 'carol'], { cwd: repo }).code).toBe(0);
    const blocked = run(repo, 1);
    expect(blocked).toMatchObject({ outcome: 'blocked', reason: expect.stringMatching(/^the final head [0-9a-f]{12} was rejected by carol: not yet; no repair window is allowed \(acceptanceRepairs 0\); `longbuild approve` accepts it after all$/) });
    const again = runCli(['reject', '--reason', 'still no'], { cwd: repo });
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/is rejected already; `longbuild approve` accepts it after all/)]);
    expect(cliJson(['approve', '--reason', 'fine after all'], { cwd: repo })).toMatchObject({ gate: 'land' });
    expect(run(repo).outcome).toBe('horizon_complete');
    expect(runCli(['land', '--into', 'shipped'], { cwd: repo }).code).toBe(0);
  });
});
