/**
 * Approval gates (issue 46, R-60), through the CLI with real child processes: a build whose config
 * says `approve: ["plan"]` stops before sealing each valid proposal (the first plan and the
 * renewal), an operator rejects one (the planner is asked again with the reason) and approves the
 * next, each decision an event naming who made it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

function build(approve: unknown = ['plan']) {
  const cfg = tempDir('longbuild-approve-cfg-');
  const inputs = join(cfg, 'inputs.ndjson');
  writeFileSync(join(cfg, 'planner.mjs'), `import { appendFileSync, readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
appendFileSync(${JSON.stringify(inputs)}, JSON.stringify({ callId: input.callId, purpose: input.purpose, feedback: input.feedback ?? [] }) + '\\n');
const n = (id) => ({ id, kind: 'writable', deps: [] });
process.stdout.write(JSON.stringify(input.purpose === 'seal'
  ? { detailed: [{ id: 'm1', title: 'one', nodes: [n('a')] }], coarse: [{ id: 'c1', title: 'later' }] }
  : { detailed: [{ id: 'c1', title: 'later', nodes: [n('b')] }], coarse: [] }));
`);
  writeFileSync(join(cfg, 'worker.mjs'), "import { readFileSync, writeFileSync } from 'node:fs';\nconst p = JSON.parse(readFileSync(0, 'utf8'));\nwriteFileSync(p.nodeId + '.txt', 'x\\n');\n");
  writeFileSync(join(cfg, 'request.json'), '{"goal":"gated"}');
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({ planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off', ...(approve !== null ? { approve } : {}) }));
  const repo = userRepo();
  const init = runCli(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, inputs, init };
}

const asked = (inputs: string) => readFileSync(inputs, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { callId: string; purpose: string; feedback: { rule: string; reason: string }[] });

describe('approval gates (issue 46, R-60)', () => {
  it('approve: ["plan"]: the build waits before each seal and renewal; reject sends it back with the reason, approve seals it', () => {
    const { repo, inputs } = build();
    const first = runCli(['run', '--json'], { cwd: repo });
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^the first plan \(plan\.seal\.0\) awaits your approval: `longbuild approve --show` prints it/) });
    const log = events(repo);
    expect(log.at(-1)).toMatchObject({ type: 'PlannerReturned', data: { callId: 'plan.seal.0', awaitingApproval: true } });
    expect(log.some((e) => e.type === 'HorizonSealed' || e.type === 'AttemptStarted')).toBe(false);
    // Waiting records nothing more, and asks nobody again.
    expect(JSON.parse(runCli(['run', '--json'], { cwd: repo }).stdout).outcome).toBe('awaiting_approval');
    expect(events(repo)).toHaveLength(log.length);
    expect(asked(inputs)).toHaveLength(1);
    expect(cliJson(['status'], { cwd: repo }).awaitingApproval).toMatch(/plan\.seal\.0/);
    expect(cliJson(['approve', '--show'], { cwd: repo })).toMatchObject({ callId: 'plan.seal.0', purpose: 'seal', proposal: { detailed: [{ id: 'm1' }], coarse: [{ id: 'c1' }] } });

    const reject = runCli(['reject'], { cwd: repo });
    expect([reject.code, reject.stderr]).toEqual([2, expect.stringMatching(/reject: --reason must be a text/)]);
    expect(cliJson(['reject', '--reason', 'name the milestone better', '--as', 'alice'], { cwd: repo }).callId).toBe('plan.seal.0');
    expect(events(repo).at(-1)).toMatchObject({ type: 'ProposalRejected', data: { callId: 'plan.seal.0', rule: 'operator', reason: 'rejected by an operator: name the milestone better', operator: { action: 'reject', user: 'alice' } } });
    expect(JSON.parse(runCli(['run', '--json'], { cwd: repo }).stdout).outcome).toBe('awaiting_approval');
    const second = asked(inputs)[1]!;
    expect(second.callId).toBe('plan.seal.0.ask2');
    expect(second.feedback).toContainEqual(expect.objectContaining({ rule: 'operator', reason: 'rejected by an operator: name the milestone better' }));

    expect(cliJson(['approve', '--reason', 'good', '--as', 'bob'], { cwd: repo }).callId).toBe('plan.seal.0.ask2');
    expect(events(repo).at(-1)).toMatchObject({ type: 'ProposalApproved', data: { callId: 'plan.seal.0.ask2', reason: 'good', operator: { action: 'approve', user: 'bob' } } });
    // Sealed, m1 built and checkpointed; the renewal waits in its turn.
    const renewal = JSON.parse(runCli(['run', '--json'], { cwd: repo }).stdout);
    expect(renewal).toMatchObject({ outcome: 'awaiting_approval', reason: expect.stringMatching(/^the renewal \(plan\.renew\.1\) awaits your approval/) });
    expect(events(repo).filter((e) => e.type === 'HorizonSealed').map((e) => e.data.callId)).toEqual(['plan.seal.0.ask2']);
    expect(events(repo).some((e) => e.type === 'HorizonRenewed')).toBe(false);
    expect(cliJson(['approve'], { cwd: repo }).callId).toBe('plan.renew.1');
    const end = runCli(['run', '--json'], { cwd: repo });
    expect(JSON.parse(end.stdout).outcome).toBe('horizon_complete');
    expect(events(repo).filter((e) => e.type === 'HorizonRenewed').map((e) => e.data.callId)).toEqual(['plan.renew.1']);
    // Nothing awaits now: approve and reject refuse in one line, recording nothing.
    const none = runCli(['approve'], { cwd: repo });
    expect(none.code).toBe(1);
    expect(none.stderr.trim().split('\n')).toHaveLength(1);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a build that asks for no approval never waits; init refuses an unknown gate naming the field', () => {
    const plain = build(null);
    expect(JSON.parse(runCli(['run', '--json'], { cwd: plain.repo }).stdout).outcome).toBe('horizon_complete');
    expect(runCli(['approve'], { cwd: plain.repo }).stderr).toMatch(/nothing awaits approval \(this build asks for none: config "approve"\)|the build is complete/);
    const bad = build(['deploy']);
    expect(bad.init.code).toBe(1);
    expect(bad.init.stderr).toMatch(/approve\.0: /);
  });
});
