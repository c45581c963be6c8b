/**
 * `longbuild replan` (issue 46, part 5): a build blocked in planning — every ask of its first plan
 * refused — is not a dead end. Through the CLI with a real command planner (a child process) that
 * proposes a cycle until a file says otherwise: the block names `replan`; `retry` and `replan` on a
 * build not blocked in planning are refused in one line; `replan --reason` records the operator's
 * event, the planner is asked again with every refusal and the reason, and the build completes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

function build(): { repo: string; cfg: string } {
  const cfg = tempDir('longbuild-cfg-');
  // Until fixed.txt exists, a plan whose one node depends on itself (refused, R-12-style); it logs each input it was given.
  writeFileSync(join(cfg, 'planner.mjs'), `import { appendFileSync, existsSync, readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
appendFileSync(${JSON.stringify(join(cfg, 'inputs.ndjson'))}, JSON.stringify(input) + '\\n');
const fixed = existsSync(${JSON.stringify(join(cfg, 'fixed.txt'))});
process.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'greet', kind: 'writable', deps: fixed ? [] : ['greet'] }] }], coarse: [] }));
`);
  writeFileSync(join(cfg, 'worker.mjs'), "import { readFileSync, writeFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nwriteFileSync('greet.txt', 'hello\\n');\n");
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'greet' }));
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', join(cfg, 'planner.mjs')], asks: 2 }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off',
  }));
  const repo = userRepo();
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, cfg };
}

describe('replan: a build blocked in planning asks its planner again (issue 46)', () => {
  it('blocked after every ask was refused, the message names replan; replan --reason records who and why, the planner hears it, the build completes', () => {
    const { repo, cfg } = build();
    const blocked = runCli(['run'], { cwd: repo });
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(/refused 2 times/);
    expect(blocked.stderr).toContain('`longbuild replan [--reason TEXT]` asks the planner again');
    expect(runCli(['run'], { cwd: repo }).stderr).toContain('longbuild replan');
    writeFileSync(join(cfg, 'fixed.txt'), 'yes\n');
    const r = cliJson(['replan', '--reason', 'no node may depend on itself'], { cwd: repo });
    expect(r).toMatchObject({ purpose: 'seal', horizonRevision: 0, asks: 2 });
    const reopened = events(repo).filter((e) => e.type === 'PlanningReopened').map((e) => e.data);
    expect(reopened).toEqual([expect.objectContaining({ purpose: 'seal', callId: 'plan.seal.0.ask2', asks: 2, reason: 'no node may depend on itself', operator: expect.objectContaining({ action: 'replan' }) })]);
    const done = runCli(['run'], { cwd: repo });
    expect(done.code, done.stderr).toBe(0);
    expect(cliJson(['status'], { cwd: repo }).completed).toBe(true);
    // The third ask was told both refusals and the operator's reason.
    const inputs = readFileSync(join(cfg, 'inputs.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(inputs).toHaveLength(3);
    expect(inputs[2].callId).toBe('plan.seal.0.ask3');
    expect(inputs[2].feedback.map((f: { callId: string; rule: string }) => [f.callId, f.rule])).toEqual([['plan.seal.0', expect.any(String)], ['plan.seal.0.ask2', expect.any(String)], ['plan.seal.0.ask2', 'operator']]);
    expect(inputs[2].feedback[2].reason).toBe('asked again by an operator: no node may depend on itself');
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('refused in one line, nothing recorded: on a build not blocked in planning, and bad flags', () => {
    const { repo, cfg } = build();
    writeFileSync(join(cfg, 'fixed.txt'), 'yes\n');
    const fresh = runCli(['replan'], { cwd: repo });
    expect(fresh.code).toBe(1);
    expect(fresh.stderr.trim()).toMatch(/^longbuild: the build is not blocked in planning: replan asks the planner again only after every ask of a round was refused/);
    expect(runCli(['replan', '--asks', '0'], { cwd: repo }).stderr).toMatch(/--asks must be a whole number from 1 to 10/);
    expect(runCli(['replan', '--reason', ''], { cwd: repo }).stderr).toMatch(/--reason must be a text/);
    expect(events(repo).map((e) => e.type)).toEqual(['BuildInitialized']);
  });

  it('a planner whose answer is not JSON is refused with the real reason and how its answer began', () => {
    const cfg = tempDir('longbuild-cfg-');
    writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write('Here is my plan: first we build the API, then we build the user interface.\\n');\n");
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'x' }));
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({ planner: { command: ['node', join(cfg, 'planner.mjs')], asks: 1 }, worker: { command: ['true'] }, verify: [['true']], sandbox: 'off' }));
    const repo = userRepo();
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
    const r = runCli(['run'], { cwd: repo });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`planner command's answer is not JSON; it began: "Here is my plan: first we build the API, then we build the u…"`);
  });
});
