import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonInMessage, PRESETS } from '../src/adapters/agents/presets.js';
import { defaultPromptPath, loadPrompt, renderPrompt } from '../src/adapters/agents/prompts.js';
import { parseConfig } from '../src/adapters/config/config.js';
import { agentStyle, missingCredentials } from '../src/adapters/command/invocation.js';
import { cliJson, runCli, tempDir } from './support/cli.js';

// Agent presets (issue 14): the config names an agent instead of a command, the preset owns argv,
// prompt, working directory, final message and environment. The live canary (agent-canary.test.ts)
// drives the real binaries; these check the parts one by one.

describe('agent presets', () => {
  it('the config takes exactly one of `command` and `agent`, naming the field when not', () => {
    const base = { worker: { command: ['true'] }, verify: [] };
    expect(parseConfig({ ...base, planner: { agent: 'claude', model: 'm' } }, 'c.json').planner.agent).toBe('claude');
    expect(() => parseConfig({ ...base, planner: { agent: 'claude', command: ['x'] } }, 'c.json')).toThrow(/invalid config c\.json: .*exactly one of `command`/);
    expect(() => parseConfig({ ...base, planner: {} }, 'c.json')).toThrow(/exactly one of `command`/);
    expect(() => parseConfig({ ...base, planner: { agent: 'gpt-pilot' } }, 'c.json')).toThrow(/planner\.agent/);
  });

  it('each preset tells its agent the working directory, model and endpoint, and gives it a private home', () => {
    const call = { role: 'worker' as const, prompt: 'P', cwd: '/w', home: '/h', model: 'M', baseUrl: 'http://127.0.0.1:9/v1' };
    const claude = PRESETS.claude;
    expect(claude.args(call)).toEqual(expect.arrayContaining(['-p', 'P', '--output-format', 'json', '--model', 'M']));
    expect(claude.env(call)).toMatchObject({ HOME: '/h', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/v1' });
    const codex = PRESETS.codex.args(call);
    expect(codex.slice(0, 1)).toEqual(['exec']);
    expect(codex[codex.indexOf('-C') + 1]).toBe('/w');
    expect(codex.at(-1)).toBe('P');
    expect(codex.join(' ')).toContain('base_url="http://127.0.0.1:9/v1"');
    expect(PRESETS.codex.env(call)).toMatchObject({ HOME: '/h', CODEX_HOME: '/h/.codex' });
    // opencode re-quotes an argv message: its prompt goes on stdin.
    expect([PRESETS.opencode.args(call), PRESETS.opencode.promptOnStdin]).toEqual([['run', '--format', 'json', '--model', 'longbuild/M'], true]);
    expect(PRESETS.opencode.args({ ...call, baseUrl: undefined } as never)).toEqual(['run', '--format', 'json', '--model', 'M']);
    // Claude Code's final message is the `result` of its JSON output.
    expect(claude.finalMessage('{"type":"result","result":"the answer"}\n', call)).toBe('the answer');
  });

  it('each preset reads what its agent reported (R-58): Claude Code\'s JSON result, Codex\'s turn.completed events, opencode\'s step_finish events', () => {
    const call = { role: 'worker', prompt: 'p', cwd: '/w', home: '/h', model: 'M' } as const;
    // Claude Code: input excludes cache reads and writes; its own cost; the models it used.
    const claude = '{"type":"result","result":"ok","total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":50},"modelUsage":{"claude-x":{},"claude-haiku":{}}}\n';
    expect(PRESETS.claude.usage(claude, call)).toEqual({ model: 'claude-haiku+claude-x', inputTokens: 1110, outputTokens: 50, cachedTokens: 1000, costUsd: 0.0123 });
    // A cost of 0 for tokens used is an agent that does not know the model's price: unknown, for `prices`.
    expect(PRESETS.claude.usage('{"type":"result","result":"ok","total_cost_usd":0,"usage":{"input_tokens":3,"output_tokens":4}}', call)).toEqual({ model: 'M', inputTokens: 3, outputTokens: 4 });
    expect(PRESETS.claude.usage('plain text', call)).toBeUndefined();
    // Codex: every turn.completed usage, summed; input includes cached input.
    const codex = ['{"type":"thread.started","thread_id":"t"}', '{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":200,"output_tokens":30}}', 'not json', '{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":7}}'].join('\n');
    expect(PRESETS.codex.usage(codex, call)).toEqual({ model: 'M', inputTokens: 600, outputTokens: 37, cachedTokens: 200 });
    // opencode: step_finish tokens (reasoning as output, cache reads and writes as input) and costs, summed; the final message is the last message's text.
    const opencode = [
      '{"type":"step_start","part":{"type":"step-start"}}',
      '{"type":"text","part":{"type":"text","messageID":"m1","text":"looking"}}',
      '{"type":"step_finish","part":{"type":"step-finish","cost":0.01,"tokens":{"input":40,"output":5,"reasoning":2,"cache":{"read":8,"write":1}}}}',
      '{"type":"text","part":{"type":"text","messageID":"m2","text":"{\\"done\\": true}"}}',
      '{"type":"step_finish","part":{"type":"step-finish","cost":0.02,"tokens":{"input":10,"output":1,"reasoning":0,"cache":{"read":0,"write":0}}}}',
    ].join('\n');
    expect(PRESETS.opencode.usage(opencode, call)).toEqual({ model: 'M', inputTokens: 59, outputTokens: 8, cachedTokens: 8, costUsd: 0.03 });
    expect(PRESETS.opencode.finalMessage(opencode, call)).toBe('{"done": true}');
    expect(PRESETS.opencode.finalMessage('a plain answer', call)).toBe('a plain answer');
  });

  it("the agent's environment is explicit: PATH, its credentials and the allowlist; nothing else of the host's", () => {
    const style = agentStyle('worker', {
      agent: 'claude', template: () => ({ source: 't', text: 'call {{callId}} in {{cwd}}: {{input}}' }),
      env: { PATH: '/bin', ANTHROPIC_API_KEY: 'k', AWS_SECRET_ACCESS_KEY: 'no', HOME: '/root' }, allow: [],
    });
    const call = style.plan({ role: 'worker', callId: 'b:n.1', payload: { nodeId: 'n' }, cwd: '/w', env: { LONGBUILD_NODE_ID: 'n' } });
    try {
      expect(call.env.ANTHROPIC_API_KEY).toBe('k');
      expect(call.env.AWS_SECRET_ACCESS_KEY).toBeUndefined();
      expect(call.env.HOME).not.toBe('/root');
      expect(call.env.LONGBUILD_NODE_ID).toBe('n');
      expect(call.rw).toEqual([call.env.HOME]);
      expect(call.argv[2]).toBe('call b:n.1 in /w: {\n  "nodeId": "n"\n}');
    } finally {
      call.dispose();
    }
  });

  it('missing credentials are named in one line', () => {
    expect(missingCredentials('codex', { OPENAI_API_KEY: 'x' })).toBeNull();
    expect(missingCredentials('codex', { OPENAI_BASE_URL: 'http://x' })).toMatch(/^agent codex needs one of OPENAI_API_KEY, CODEX_API_KEY in the environment/);
  });

  it('the shipped prompts load; an unknown placeholder or a prompt without {{input}} is refused naming the file', () => {
    for (const role of ['planner', 'worker'] as const) {
      const t = loadPrompt(defaultPromptPath(role));
      const text = renderPrompt(t, { callId: 'K', cwd: '/c', input: '{"x":1}' });
      expect(text).toContain('longbuild call K');
      expect(text).toContain('{"x":1}');
      expect(text).not.toMatch(/\{\{/);
    }
    expect(renderPrompt(loadPrompt(defaultPromptPath('planner')), { callId: 'K', cwd: '/c', input: '' })).toContain('"detailed"');
    // planners are told how to declare changes to the tests, in words and in the schema; workers what they may not touch.
    const planner = renderPrompt(loadPrompt(defaultPromptPath('planner')), { callId: 'K', cwd: '/c', input: '' });
    expect(planner).toMatch(/`changes`, only when the node must change the project's verification surface/);
    expect(planner).toMatch(/"retires": \{\s*"description": "test ids/);
    expect(renderPrompt(loadPrompt(defaultPromptPath('worker')), { callId: 'K', cwd: '/c', input: '' })).toMatch(/verificationSurface.*unless the packet's `changes`/s);
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.md'), 'do {{task}} with {{input}}');
    expect(() => loadPrompt(join(dir, 'bad.md'))).toThrow(/bad\.md: unknown placeholder \{\{task\}\}/);
    writeFileSync(join(dir, 'blind.md'), 'do it');
    expect(() => loadPrompt(join(dir, 'blind.md'))).toThrow(/blind\.md has no \{\{input\}\}/);
  });

  it('for all JSON objects: the proposal is read from a final message that is the JSON, or wraps it in prose or a fence', () => {
    const obj = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 5 });
    const prose = fc.string({ maxLength: 40 }).filter((s) => !/[{}`]/.test(s));
    fc.assert(fc.property(obj, prose, prose, fc.constantFrom('bare', 'fenced', 'prose'), (o, before, after, how) => {
      const json = JSON.stringify(o);
      const message = how === 'bare' ? json : how === 'fenced' ? `${before}\n\`\`\`json\n${json}\n\`\`\`\n${after}` : `${before} ${json} ${after}`;
      // The oracle: JSON.parse of the exact text that was embedded.
      expect(jsonInMessage(message)).toEqual({ ok: true, value: JSON.parse(json) });
    }), { numRuns: 300 });
    expect(jsonInMessage('no json here')).toBeNull();
  });
});

describe('an agent build refused before anything is recorded', () => {
  it('run without the agent\'s credentials exits 1 with one line and appends nothing; status still works', () => {
    const cfg = tempDir('longbuild-cfg-');
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'x' }));
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({ planner: { agent: 'codex' }, worker: { agent: 'codex' }, verify: [] }));
    const repo = tempDir();
    const env = { OPENAI_API_KEY: undefined, CODEX_API_KEY: undefined };
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env });
    const r = runCli(['run'], { cwd: repo, env });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/planner: agent codex needs one of OPENAI_API_KEY, CODEX_API_KEY/);
    expect(cliJson(['status'], { cwd: repo, env }).position).toBe(1);
  });
});
