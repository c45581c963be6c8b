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
    return ['run', ...(model !== undefined ? ['--model', model] : [])];
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
  finalMessage: (stdout) => stdout,
};

export const PRESETS: Readonly<Record<AgentName, AgentPreset>> = { claude, codex, opencode };

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
