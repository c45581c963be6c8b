import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cliJson, ROOT, runCli, tempDir } from './support/cli.js';
import { startScriptedModelServer, writeFilesCommand, type ScriptRule, type ScriptedModelServer } from './doubles/scripted-model-server-double.js';

// The live canary of issue 14: real agent binaries (Claude Code, Codex CLI, opencode; pinned in
// agents/package.json, installed by .ci/run) plan and implement a two-milestone build, with real
// SIGKILLs of the controller, real bubblewrap, real git and the project's real tests. Only the
// model provider is a test double (scripted-model-server-double.ts): there is no model API here.

const AGENTS_BIN = process.env.LONGBUILD_AGENTS_BIN ?? join(ROOT, 'agents', 'node_modules', '.bin');
const AGENTS = [
  { agent: 'claude', exe: join(AGENTS_BIN, 'claude'), key: { ANTHROPIC_API_KEY: 'sk-ant-canary-not-a-real-key' } },
  { agent: 'codex', exe: join(AGENTS_BIN, 'codex'), key: { OPENAI_API_KEY: 'sk-canary-not-a-real-key' } },
  { agent: 'opencode', exe: join(AGENTS_BIN, 'opencode'), key: { OPENAI_API_KEY: 'sk-canary-not-a-real-key' } },
] as const;

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** The canary's project: `add` (milestone one), then `mul` built on it (milestone two). */
const ADD = {
  'src/add.js': 'export const add = (a, b) => a + b;\n',
  'test/add.test.js': "import test from 'node:test';\nimport assert from 'node:assert';\nimport { add } from '../src/add.js';\ntest('add', () => assert.strictEqual(add(2, 3), 5));\n",
  'package.json': '{ "type": "module" }\n',
};
const MUL_BUGGY = {
  'src/mul.js': "import { add } from './add.js';\nexport const mul = (a, b) => add(a, b);\n",
  'test/mul.test.js': "import test from 'node:test';\nimport assert from 'node:assert';\nimport { mul } from '../src/mul.js';\ntest('mul', () => assert.strictEqual(mul(2, 3), 6));\n",
};
/** The fix writes only src/mul.js: the test file in the final tree comes from the attempt it reworks. */
const MUL_FIX = { 'src/mul.js': 'export const mul = (a, b) => a * b;\n' };

const PROPOSAL = {
  detailed: [
    { id: 'adding', title: 'Addition', intent: 'an add function with its test', nodes: [{ id: 'add', kind: 'writable', deps: [], title: 'add(a, b)', description: 'src/add.js exports add', acceptance: ['add(2, 3) is 5'] }] },
    { id: 'multiplying', title: 'Multiplication', intent: 'a mul function', nodes: [{ id: 'mul', kind: 'writable', deps: ['add'], title: 'mul(a, b)', description: 'src/mul.js exports mul', acceptance: ['mul(2, 3) is 6'] }] },
  ],
  coarse: [],
};

const RULES: ScriptRule[] = [
  // Models put prose around JSON: the planner's answer is a sentence and a fenced block, which the preset must read.
  { name: 'planner', matches: (p) => p.includes('You are the planner'), answer: () => ({ kind: 'text', text: `Here is the plan.\n\n\`\`\`json\n${JSON.stringify(PROPOSAL)}\n\`\`\`\n` }) },
  {
    name: 'worker:add', matches: (p) => p.includes('You are a worker') && /\n {2}"nodeId": "add"/.test(p),
    answer: ({ step }) => (step === 0 ? { kind: 'shell', command: writeFilesCommand(ADD) } : step === 1 ? { kind: 'shell', command: 'node --test' } : { kind: 'text', text: 'add is done' }),
  },
  {
    name: 'worker:mul', matches: (p) => p.includes('You are a worker') && /\n {2}"nodeId": "mul"/.test(p),
    answer: ({ prompt, step }) => {
      // Attempt 2 gets the failure's evidence (the test's own output) and fixes only the code.
      const fixing = prompt.includes('"previousFailure"') && prompt.includes('5 !== 6');
      if (step === 0) return { kind: 'shell', command: writeFilesCommand(fixing ? MUL_FIX : MUL_BUGGY) };
      return { kind: 'text', text: fixing ? 'mul fixed from the failure output' : 'mul is done' };
    },
  },
];

function configFor(agent: string, exe: string, url: string): string {
  const dir = tempDir('longbuild-canary-cfg-');
  const baseUrl = agent === 'claude' ? url : `${url}/v1`;
  writeFileSync(join(dir, 'request.json'), JSON.stringify({ title: 'calc', goal: 'an arithmetic library: add, then mul built on add' }));
  writeFileSync(join(dir, 'longbuild.config.json'), JSON.stringify({
    planner: { agent, executable: exe, model: 'scripted-model', baseUrl, timeoutSeconds: 300 },
    worker: { agent, executable: exe, model: 'scripted-model', baseUrl, timeoutSeconds: 300 },
    verify: [['node', '--test']],
    maxAttempts: 3,
  }));
  return dir;
}

interface Ev { position: number; type: string; data: Record<string, any>; metadata: Record<string, any> }
const events = (repo: string): Ev[] => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as Ev);

/** `longbuild run` as a real child in its own process group; resolves with its exit. */
function startRun(repo: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, 'run'], { cwd: repo, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
  child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, exited, output: () => out };
}

const servers: ScriptedModelServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe.each(AGENTS)('live canary: the real $agent binary plans and implements a build (model provider: scripted test double)', ({ agent, exe, key }) => {
  const installed = existsSync(exe);
  if (!installed && process.env.CI) throw new Error(`${exe} is not installed: .ci/run installs the pinned agent CLIs (npm install --prefix agents --no-package-lock)`);

  it.skipIf(!installed)(`two milestones, SIGKILL after the planner's answer and in the middle of a worker's call: resumes to the same tree, no model request repeated but the in-doubt worker's; a worker fixes its own attempt from its evidence`, async () => {
    const server = await startScriptedModelServer(RULES);
    servers.push(server);
    const cfg = configFor(agent, exe, server.url);
    const repo = tempDir('longbuild-canary-');
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env: key });

    // 1. A real SIGKILL between the planner's answer and its record.
    const first = startRun(repo, { ...key, LONGBUILD_CRASH_AT: 'after-effect:planner:1' });
    expect((await first.exited).signal, first.output()).toBe('SIGKILL');
    expect(events(repo).some((e) => e.type === 'HorizonSealed')).toBe(false);

    // 2. A real SIGKILL of the controller's whole process group while the `add` worker waits on the model.
    const held = server.holdNext((e) => e.rule === 'worker:add' && e.step === 1);
    const second = startRun(repo, key);
    await Promise.race([held, second.exited.then((x) => { throw new Error(`run ended before the worker's call was held: ${JSON.stringify(x)}\n${second.output()}`); })]);
    process.kill(-second.child.pid!, 'SIGKILL');
    await second.exited;

    // 3. Resume to the end.
    const third = startRun(repo, key);
    const end = await third.exited;
    expect(end.code, third.output()).toBe(0);

    const status = cliJson(['status'], { cwd: repo });
    expect(status.completed).toBe(true);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    const head = status.integrationRef as string;
    const tree = Object.fromEntries(git(repo, 'ls-tree', '-r', '--name-only', head).split('\n').map((f) => [f, git(repo, 'show', `${head}:${f}`) + '\n']));
    expect(tree).toEqual({ ...ADD, ...MUL_BUGGY, ...MUL_FIX });

    const log = events(repo);
    // The worker failed verification once and fixed its own attempt: two attempts of mul, the second
    // prompt carried the test's output, and its tree kept the first attempt's test file.
    const mulAttempts = log.filter((e) => e.type === 'AttemptStarted' && e.data.nodeId === 'mul');
    expect(mulAttempts).toHaveLength(2);
    expect(log.filter((e) => e.type === 'IntegrationFailed').map((e) => e.data.nodeIds)).toEqual([['mul']]);
    expect(server.ledger.filter((e) => e.rule === 'worker:mul' && e.step === 0)).toHaveLength(2);

    // No model request was repeated for work whose result was recorded. The planner killed after
    // answering is made again under its key (EffectReinvoked) but answered from the answers kept
    // on receipt: its model saw one request. The worker killed mid-call is the only in-doubt
    // call, and the only one whose requests repeat.
    const reinvoked = new Set(log.filter((e) => e.type === 'EffectReinvoked').map((e) => e.data.key as string));
    expect(reinvoked).toEqual(new Set(['plan.seal.0', `${status.buildId ?? log[0]!.data.buildId}:add.1`]));
    expect(server.ledger.filter((e) => e.rule === 'planner')).toHaveLength(1);
    const repeats = [...server.repeats().values()];
    const repeatedCalls = new Set(repeats.map((es) => es[0]!.callId));
    expect(repeatedCalls).toEqual(new Set([`${log[0]!.data.buildId}:add.1`]));
    // each preset reads what its agent reported. The scripted provider reports 1 output token a
    // request, so a call's recorded output tokens are its model requests (the interrupted call's aside).
    const buildId = log[0]!.data.buildId as string;
    const usages = log.filter((e) => e.type === 'AttemptFinished' && !reinvoked.has(`${buildId}:${e.data.attemptId}`)).map((e) => ({ key: `${buildId}:${e.data.attemptId}`, usage: e.data.usage }));
    console.log(`canary ${agent} usage: ${JSON.stringify(usages)} requests ${JSON.stringify(usages.map((u) => server.ledger.filter((x) => x.callId === u.key && !x.held).length))}`);
    for (const u of usages) {
      expect(u.usage, `${agent} ${u.key}`).toMatchObject({ model: 'scripted-model', outputTokens: server.ledger.filter((x) => x.callId === u.key && !x.held).length });
      expect(u.usage.inputTokens, `${agent} ${u.key}`).toBeGreaterThan(0);
    }
    expect(cliJson(['status'], { cwd: repo }).spend.reported).toBeGreaterThanOrEqual(usages.length);
    const calls = new Set(server.ledger.filter((e) => e.callId !== '').map((e) => e.callId));
    const nodes = 2;
    // The controller's overhead per worker call: the time between its intent and its result that the
    // agent's process did not take (the clone, evidence files, the host's commit, two appends).
    const started = new Map(log.filter((e) => e.type === 'AttemptStarted').map((e) => [e.data.attemptId as string, Date.parse(e.metadata.recordedAt as string)]));
    const timed = log.filter((e) => e.type === 'AttemptFinished' && typeof e.data.durationMs === 'number' && !reinvoked.has(`${log[0]!.data.buildId}:${e.data.attemptId}`));
    const overheads = timed.map((e) => Date.parse(e.metadata.recordedAt as string) - started.get(e.data.attemptId as string)! - (e.data.durationMs as number));
    const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
    expect(overheads.length).toBeGreaterThan(0);
    for (const o of overheads) expect(o).toBeGreaterThanOrEqual(0);
    const side = server.ledger.filter((e) => e.callId === '').length;
    const steps = server.ledger.length - side;
    console.log(`canary ${agent}: ${steps} model requests for ${calls.size} calls (${repeats.reduce((n, es) => n + es.length - 1, 0)} in-doubt repeats), ${(steps / nodes).toFixed(1)} per node; ${side} side requests (session titles); controller overhead per worker call ${mean(overheads)} ms (agent process ${mean(timed.map((e) => e.data.durationMs as number))} ms)`);
  }, 600_000);
});
