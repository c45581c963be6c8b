import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Usage } from '../../events/catalogue.js';
import { PRESETS, type AgentName } from '../agents/presets.js';
import { defaultPromptPath, loadPrompt, renderPrompt, type PromptTemplate } from '../agents/prompts.js';
import { ValidationError } from '../../events/errors.js';
import { commandEnv } from './command-env.js';

/** One call of a planner or worker process: what to run, and how its answer is read. */
export interface CallPlan {
  readonly argv: readonly string[];
  readonly env: Record<string, string>;
  /** Bytes on stdin (a plain command gets its input as JSON there). */
  readonly input?: string;
  /** Extra read-write directories (an agent's private home). */
  readonly rw: readonly string[];
  /** The call's answer: stdout for a plain command, the final message for an agent. */
  answer(stdout: string): string;
  /** What the call used, as an agent's own output reports it; a command reports in its usage file. */
  usage(stdout: string): Usage | undefined;
  /** Removes what the call needed (an agent's home); runs whatever the outcome. */
  dispose(): void;
}

/** How planner or worker calls are made: a configured command, or an agent preset. */
export interface CallStyle {
  /** Names the called thing in failures ("planner command", "worker agent claude"). */
  readonly label: string;
  /** An agent preset (its final message is its answer) rather than a plain command. */
  readonly agent: boolean;
  plan(o: { readonly role: 'planner' | 'worker'; readonly callId: string; readonly payload: unknown; readonly cwd: string; readonly env: Record<string, string>; readonly usageFile?: string }): CallPlan;
}

/** A configured command: the input as JSON on stdin, the answer on stdout. */
export function commandStyle(label: string, argv: readonly string[], env: NodeJS.ProcessEnv, allow: readonly string[]): CallStyle {
  return {
    label,
    agent: false,
    plan: (o) => ({
      argv,
      env: commandEnv(env, allow, { ...o.env, ...(o.usageFile !== undefined ? { LONGBUILD_USAGE_FILE: o.usageFile } : {}) }),
      input: JSON.stringify(o.payload),
      // The usage file's directory is the call's own (usage-files.ts): the only place of the build directory it can write.
      rw: o.usageFile !== undefined ? [dirname(o.usageFile)] : [],
      answer: (stdout) => stdout,
      usage: () => undefined,
      dispose: () => {},
    }),
  };
}

export interface AgentStyleOptions {
  readonly agent: AgentName;
  readonly executable?: string;
  readonly model?: string;
  readonly baseUrl?: string;
  /** Read at the first call. */
  readonly template: () => PromptTemplate;
  readonly env: NodeJS.ProcessEnv;
  readonly allow: readonly string[];
}

/**
 * A real coding agent through its preset: the prompt assembled from the template and the input,
 * a fresh private home per call, the final message read the way the preset says.
 */
export function agentStyle(role: 'planner' | 'worker', o: AgentStyleOptions): CallStyle {
  const preset = PRESETS[o.agent];
  let template: PromptTemplate | undefined;
  return {
    label: `${role} agent ${o.agent}`,
    agent: true,
    plan: (call) => {
      const home = mkdtempSync(join(tmpdir(), `longbuild-${o.agent}-home-`));
      const agentCall = {
        role, cwd: call.cwd, home,
        prompt: renderPrompt(template ??= o.template(), { callId: call.callId, cwd: call.cwd, input: JSON.stringify(call.payload, null, 2) }),
        ...(o.model !== undefined ? { model: o.model } : {}),
        ...(o.baseUrl !== undefined ? { baseUrl: o.baseUrl } : {}),
      };
      const presetEnv = preset.env(agentCall);
      // The directories the preset points the agent's state at exist before it starts.
      for (const v of Object.values(presetEnv)) if (v.startsWith(`${home}/`)) mkdirSync(v, { recursive: true, mode: 0o700 });
      return {
        argv: [o.executable ?? preset.executable, ...preset.args(agentCall)],
        env: commandEnv(o.env, [...o.allow, ...preset.credentialEnv], { ...presetEnv, ...call.env }),
        input: preset.promptOnStdin === true ? agentCall.prompt : '',
        rw: [home],
        answer: (stdout) => preset.finalMessage(stdout, agentCall),
        usage: (stdout) => preset.usage(stdout, agentCall),
        dispose: () => rmSync(home, { recursive: true, force: true }),
      };
    },
  };
}

/** The credential variables an agent needs, when none of them is set (a clear refusal before any call). */
export function missingCredentials(agent: AgentName, env: NodeJS.ProcessEnv): string | null {
  const keys = PRESETS[agent].credentialEnv.filter((n) => !n.endsWith('_BASE_URL'));
  if (keys.some((n) => (env[n] ?? '') !== '')) return null;
  return `agent ${agent} needs one of ${keys.join(', ')} in the environment (each call gets a private home, so a login stored in your home directory is not used)`;
}

/** The credential values of the agents a build uses, redacted from evidence like `env.secret`. */
export function agentSecretNames(agents: readonly (AgentName | undefined)[]): string[] {
  return [...new Set(agents.flatMap((a) => (a === undefined ? [] : PRESETS[a].credentialEnv.filter((n) => !n.endsWith('_BASE_URL')))))];
}

/** The planner or worker section of a config, as far as the call style goes. */
export interface CallConfig {
  readonly command?: readonly string[];
  readonly agent?: AgentName;
  readonly model?: string;
  readonly executable?: string;
  readonly baseUrl?: string;
  readonly prompt?: string;
}

/**
 * The call style a config section names. Nothing is read until the first call (`status` needs no
 * credentials and no prompt file); `assertCallable` checks both before a controller's first step.
 */
export function styleFor(role: 'planner' | 'worker', c: CallConfig, env: NodeJS.ProcessEnv, allow: readonly string[]): CallStyle {
  if (c.agent === undefined) return commandStyle(`${role} command`, c.command ?? [], env, allow);
  return agentStyle(role, {
    agent: c.agent, template: () => loadPrompt(c.prompt ?? defaultPromptPath(role)), env, allow,
    ...(c.executable !== undefined ? { executable: c.executable } : {}),
    ...(c.model !== undefined ? { model: c.model } : {}),
    ...(c.baseUrl !== undefined ? { baseUrl: c.baseUrl } : {}),
  });
}

/** Refuses, in one line, an agent whose credentials are not in the environment or whose prompt file cannot be used. */
export function assertCallable(role: 'planner' | 'worker', c: CallConfig, env: NodeJS.ProcessEnv): void {
  if (c.agent === undefined) return;
  const missing = missingCredentials(c.agent, env);
  if (missing !== null) throw new ValidationError(`${role}: ${missing}`);
  loadPrompt(c.prompt ?? defaultPromptPath(role));
}

/** The planner route pinned in every sealed horizon when the config names none. */
export function defaultRoute(c: CallConfig): string {
  return c.agent !== undefined ? `agent:${c.agent}/${c.model ?? 'default'}` : `command:${c.command?.[0] ?? ''}`;
}
