/**
 * Agent presets: how longbuild calls a real coding-agent CLI as a planner or a worker. Each preset
 * owns the agent's argv, how it is told its working directory and model, where its final message
 * is read from, and which environment it needs. The generic command adapter stays for anything
 * else (`"command": [...]` in the config).
 *
 * Every call gets a fresh private home directory (`home`) for the agent's own state (settings,
 * sessions, caches): nothing of the user's home is read, so a build's behaviour does not depend
 * on who runs it, and the agent's credentials come from the environment only.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseUntrustedJson } from '../../commands/untrusted-json.js';
import { readUsageReport } from '../../commands/usage-report.js';
import type { Usage } from '../../events/catalogue.js';

export const AGENT_NAMES = ['claude', 'codex', 'opencode'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

/** One call of an agent, as its preset needs to know it. */
export interface AgentCall {
  readonly role: 'planner' | 'worker';
  readonly prompt: string;
  /** The agent's working directory (a planner's read-only export, a worker's clone). */
  readonly cwd: string;
  /** A private, writable directory for the agent's own state; removed after the call. */
  readonly home: string;
  readonly model?: string;
  /** The model provider's endpoint, when not the vendor's default (a proxy, a gateway, a test double). */
  readonly baseUrl?: string;
}

export interface AgentPreset {
  readonly name: AgentName;
  /** The executable's name on PATH (config `executable` overrides it). */
  readonly executable: string;
  /** The npm package that provides it. */
  readonly npmPackage: string;
  /** Environment variables the agent reads for its credentials and endpoint (passed through, redacted in evidence). */
  readonly credentialEnv: readonly string[];
  /** The prompt goes on stdin, not in argv (an agent that re-quotes its argv). */
  readonly promptOnStdin?: boolean;
  /** The agent's argv after the executable. */
  args(c: AgentCall): string[];
  /** Environment the preset sets (besides PATH, the locale and the passed-through variables). */
  env(c: AgentCall): Record<string, string>;
  /** The agent's final message: read from its stdout or from a file it wrote under `home`. */
  finalMessage(stdout: string, c: AgentCall): string;
  /** What the call used, from the agent's own report on stdout; undefined when it gave none. */
  usage(stdout: string, c: AgentCall): Usage | undefined;
}

/** Claude Code (`@anthropic-ai/claude-code`): `claude -p PROMPT --output-format json`. */
const claude: AgentPreset = {
  name: 'claude',
  executable: 'claude',
  npmPackage: '@anthropic-ai/claude-code',
  credentialEnv: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_BASE_URL'],
  args: (c) => [
    '-p', c.prompt,
    '--output-format', 'json',
    // longbuild's sandbox is the boundary: the agent's own permission prompts would only stop a headless call.
    '--dangerously-skip-permissions',
    ...(c.role === 'planner' ? ['--disallowedTools', 'Write,Edit,NotebookEdit'] : []),
    ...(c.model !== undefined ? ['--model', c.model] : []),
  ],
  env: (c) => ({
    HOME: c.home,
    CLAUDE_CONFIG_DIR: join(c.home, '.claude'),
    // Runs as root inside the sandbox's user namespace; the flag says the sandbox is external.
    IS_SANDBOX: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    ...(c.baseUrl !== undefined ? { ANTHROPIC_BASE_URL: c.baseUrl } : {}),
  }),
  finalMessage: (stdout) => {
    const result = lastJsonLine(stdout);
    if (result && typeof result === 'object' && 'result' in result && typeof result.result === 'string') return result.result;
    return stdout;
  },
  // The JSON result's `usage` (Anthropic's counts: input excludes cache reads and writes), `total_cost_usd`, `modelUsage`'s models.
  usage: (stdout, c) => {
    const result = lastJsonLine(stdout);
    const u = record(result?.usage);
    if (u === null) return undefined;
    const cached = count(u.cache_read_input_tokens);
    const models = Object.keys(record(result?.modelUsage) ?? {});
    return usageOf({
      model: models.length > 0 ? models.sort().join('+') : c.model, inputTokens: count(u.input_tokens) + count(u.cache_creation_input_tokens) + cached,
      outputTokens: count(u.output_tokens), cachedTokens: cached, costUsd: result?.total_cost_usd,
    });
  },
};

/** Codex CLI (`@openai/codex`): `codex exec PROMPT --output-last-message FILE`. */
const codex: AgentPreset = {
  name: 'codex',
  executable: 'codex',
  npmPackage: '@openai/codex',
  credentialEnv: ['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENAI_BASE_URL'],
  args: (c) => [
    'exec',
    '--skip-git-repo-check',
    // The agent's own sandbox cannot nest inside longbuild's, which is the boundary.
    '--dangerously-bypass-approvals-and-sandbox',
    '-C', c.cwd,
    '--output-last-message', join(c.home, 'last-message.txt'),
    // JSONL events on stdout: each turn's usage; the final message is read from the file above.
    '--json',
    ...(c.model !== undefined ? ['-m', c.model] : []),
    ...(c.baseUrl !== undefined
      ? ['-c', 'model_provider=longbuild', '-c', `model_providers.longbuild={name="longbuild",base_url=${JSON.stringify(c.baseUrl)},wire_api="responses",env_key="OPENAI_API_KEY"}`]
      : []),
    c.prompt,
  ],
  env: (c) => ({ HOME: c.home, CODEX_HOME: join(c.home, '.codex') }),
  finalMessage: (stdout, c) => {
    const file = join(c.home, 'last-message.txt');
    return existsSync(file) ? readFileSync(file, 'utf8') : stdout;
  },
  // `turn.completed` events' usage (OpenAI's counts: input includes cached input), summed over the call's turns.
  usage: (stdout, c) => {
    const turns = jsonLines(stdout).filter((e) => e.type === 'turn.completed').map((e) => record(e.usage)).filter((u) => u !== null);
    if (turns.length === 0) return undefined;
    const sum = (k: string) => turns.reduce((n, u) => n + count(u[k]), 0);
    return usageOf({ model: c.model, inputTokens: sum('input_tokens'), outputTokens: sum('output_tokens'), cachedTokens: sum('cached_input_tokens') });
  },
};

/**
 * opencode (`opencode-ai`): `opencode run` with the prompt on stdin (an argv message is re-joined
 * with its quotes escaped), its final message on stdout. With `baseUrl` the
 * model comes from an OpenAI-compatible provider named `longbuild` (its key from OPENAI_API_KEY).
 */
const opencode: AgentPreset = {
  name: 'opencode',
  executable: 'opencode',
  npmPackage: 'opencode-ai',
  credentialEnv: ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY'],
  promptOnStdin: true,
  args: (c) => {
    const model = c.baseUrl !== undefined ? `longbuild/${c.model ?? 'default'}` : c.model;
    // JSON events on stdout: the text parts (the final message) and each step's tokens and cost.
    return ['run', '--format', 'json', ...(model !== undefined ? ['--model', model] : [])];
  },
  env: (c) => ({
    HOME: c.home,
    XDG_CONFIG_HOME: join(c.home, '.config'),
    XDG_DATA_HOME: join(c.home, '.local', 'share'),
    XDG_CACHE_HOME: join(c.home, '.cache'),
    XDG_STATE_HOME: join(c.home, '.local', 'state'),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    ...(c.baseUrl !== undefined
      ? {
        OPENCODE_CONFIG_CONTENT: JSON.stringify({
          // longbuild's sandbox is the boundary: no permission prompt can stop a headless call.
          permission: { edit: 'allow', bash: 'allow', webfetch: 'deny' },
          provider: { longbuild: { npm: '@ai-sdk/openai-compatible', options: { baseURL: c.baseUrl, apiKey: '{env:OPENAI_API_KEY}' }, models: { [c.model ?? 'default']: {} } } },
        }),
      }
      : {}),
  }),
  // The text parts of the last message that has any (events without JSON: the output as it is).
  finalMessage: (stdout) => {
    const texts = jsonLines(stdout).filter((e) => e.type === 'text').map((e) => record(e.part)).filter((p) => p !== null && typeof p.text === 'string');
    if (texts.length === 0) return jsonLines(stdout).length > 0 ? '' : stdout;
    const last = texts.at(-1)!.messageID;
    return texts.filter((p) => p!.messageID === last).map((p) => p!.text as string).join('\n');
  },
  // `step_finish` events: tokens (input without cache reads; reasoning counted as output) and cost, summed.
  usage: (stdout, c) => {
    const steps = jsonLines(stdout).filter((e) => e.type === 'step_finish').map((e) => record(e.part)).filter((p) => p !== null && record(p.tokens) !== null);
    if (steps.length === 0) return undefined;
    let input = 0, output = 0, cached = 0, cost = 0;
    for (const p of steps) {
      const t = record(p!.tokens)!;
      const cache = record(t.cache) ?? {};
      cached += count(cache.read);
      input += count(t.input) + count(cache.read) + count(cache.write);
      output += count(t.output) + count(t.reasoning);
      cost += typeof p!.cost === 'number' && Number.isFinite(p!.cost) && p!.cost > 0 ? p!.cost : 0;
    }
    return usageOf({ model: c.model, inputTokens: input, outputTokens: output, cachedTokens: cached, costUsd: cost });
  },
};

export const PRESETS: Readonly<Record<AgentName, AgentPreset>> = { claude, codex, opencode };

/** A JSON object, or null. */
function record(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

/** A token count an agent reported: a whole non-negative number, else 0. */
function count(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0;
}

/**
 * A usage as the ledger takes it: a cost of 0 for tokens used is an agent that does not
 * know the model's price (a gateway, a custom provider), so it is left unknown for `prices`.
 */
function usageOf(u: { model?: string | undefined; inputTokens: number; outputTokens: number; cachedTokens: number; costUsd?: unknown }): Usage | undefined {
  const r = readUsageReport({
    ...(u.model !== undefined ? { model: u.model.slice(0, 200) } : {}), inputTokens: u.inputTokens, outputTokens: u.outputTokens,
    ...(u.cachedTokens > 0 ? { cachedTokens: u.cachedTokens } : {}),
    ...(typeof u.costUsd === 'number' && Number.isFinite(u.costUsd) && u.costUsd > 0 ? { costUsd: u.costUsd } : {}),
  });
  return r.ok ? r.usage : undefined;
}

/** Every line of an agent's output that is a JSON object (its event stream). */
function jsonLines(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    const r = parseUntrustedJson(t, { duplicateKeys: 'allow' });
    const v = r.ok ? record(r.value) : null;
    if (v !== null) out.push(v);
  }
  return out;
}

/** The last line of an agent CLI's output that is a JSON object (nested within the bound of R-55), else the whole output as one. */
function lastJsonLine(text: string): Record<string, unknown> | null {
  const lines = text.trim().split('\n');
  const objectIn = (t: string): Record<string, unknown> | null => {
    const r = parseUntrustedJson(t, { duplicateKeys: 'allow' });
    return r.ok && r.value !== null && typeof r.value === 'object' && !Array.isArray(r.value) ? (r.value as Record<string, unknown>) : null;
  };
  for (let i = lines.length - 1; i >= 0; i--) {
    const v = objectIn(lines[i]!);
    if (v !== null) return v;
  }
  return objectIn(text);
}

/**
 * The JSON value in an agent's final message: the whole message, else its last fenced ```json
 * block, else the text from its first `{` to its last `}`. Null when none parses; the host then
 * refuses the answer (R-28) and the planner is asked again with the reason.
 */
export function jsonInMessage(message: string): { ok: true; value: unknown } | { ok: false; problem: string } | null {
  const text = message.trim();
  const attempts: string[] = [text];
  const fences = [...text.matchAll(/```(?:json)?\s*\n([\s\S]*?)```/g)].map((m) => m[1]!);
  attempts.push(...fences.reverse());
  const first = text.indexOf('{');
  const last = text.lastIndexOf('}');
  if (first >= 0 && last > first) attempts.push(text.slice(first, last + 1));
  for (const a of attempts) {
    // the reading that parses is the answer; a key named twice or a nesting past the bound refuses it.
    const r = parseUntrustedJson(a, { duplicateKeys: 'refuse' });
    if (r.ok) return { ok: true, value: r.value };
    if (!r.syntax) return { ok: false, problem: r.problem };
  }
  return null;
}
