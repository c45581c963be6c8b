import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ValidationError } from '../../events/errors.js';
import { APPROVAL_GATES, BudgetSchema, formatZodError, NotifierSchema } from '../../events/catalogue.js';
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, SandboxSettingSchema } from '../sandbox/settings.js';
import { AGENT_NAMES } from '../agents/presets.js';
import { readJsonFile } from '../json-file.js';
import { testPolicyFields, verifyEntrySchema, type VerifyEntry } from '../verify-commands.js';

const Argv = z.array(z.string().min(1).refine((s) => !s.includes('\u0000'), 'NUL byte in argument')).min(1, 'a command needs at least an executable');

/** How a planner or worker is called: a command, or a coding agent through its preset (agents/presets.ts). */
const agentFields = {
  agent: z.enum(AGENT_NAMES).optional().describe('a coding-agent CLI preset instead of `command`: claude (Claude Code), codex (Codex CLI) or opencode'),
  model: z.string().min(1).optional().describe('the model the agent uses (its own default when absent)'),
  executable: z.string().min(1).optional().describe("the agent's executable (default: its name on PATH)"),
  baseUrl: z.string().url().optional().describe("the model provider's endpoint, when not the vendor's default (a gateway, a proxy)"),
  prompt: z.string().min(1).optional().describe("a prompt template file replacing the shipped one (prompts/ROLE.md in the package)"),
};
const oneWay = <T extends { command?: unknown; agent?: unknown }>(v: T) => (v.command === undefined) !== (v.agent === undefined);
const ONE_WAY = { message: 'give exactly one of `command` (argv) and `agent` (claude, codex or opencode)' };

/**
 * `longbuild.config.json`: how a build driven by real commands runs. Trusted configuration
 * only this file — never a planner's or worker's output — names verification commands.
 */
export const ConfigSchema = z.strictObject({
  $schema: z.string().optional(),
  planner: z.strictObject({
    command: Argv.optional().describe('argv of the planner; gets the planner input as JSON on stdin, prints a proposal JSON on stdout'),
    ...agentFields,
    timeoutSeconds: z.number().int().positive().max(86_400).default(600),
    route: z.string().min(1).optional().describe('pinned in every sealed horizon (R-14), e.g. "claude-opus/high"'),
    asks: z.number().int().min(1).max(10).default(3).describe('times a planning round asks: a refused proposal goes back to the planner with the reasons (input `feedback`) until this many were refused, then the build blocks'),
  }).refine(oneWay, ONE_WAY),
  worker: z.strictObject({
    command: Argv.optional().describe('argv of the worker; runs in the attempt worktree with the work packet as JSON on stdin'),
    ...agentFields,
    rework: z.boolean().optional().describe("a retry of a candidate that failed verification starts from that candidate's changes, with the failure's output in the packet (default: on for an agent, off for a command)"),
    timeoutSeconds: z.number().int().positive().max(86_400).default(3600),
  }).refine(oneWay, ONE_WAY),
  setup: z.array(Argv).max(20).default([]).describe('trusted commands run in the verification workspace before `verify` (e.g. ["npm", "ci"]), in the setup phase (R-57): with the network (sandbox.network.setup), the build\'s package cache, and no lifecycle scripts; their output is evidence, a failure fails verification'),
  verify: z.array(verifyEntrySchema(Argv)).default([]).describe('trusted verification commands, each an argv array (no shell), or {"run": argv, "report": FORMAT} naming how its test report is read (R-51)'),
  ...testPolicyFields,
  acceptance: z.array(Argv).default([]).describe('trusted system-level acceptance commands (argv arrays), run on the integration head of every milestone checkpoint; the build completes only when they pass on its result'),
  acceptanceRepairs: z.number().int().min(0).max(10).default(2).describe('repair windows the planner may plan for a failing acceptance once no coarse milestone is left; then the build blocks'),
  ignoredFiles: z.enum(['allowed', 'dirty']).default('allowed').describe("git-ignored files left by setup or verification (node_modules/, __pycache__/, coverage): allowed, or counted as a dirty workspace"),
  verifyTimeoutSeconds: z.number().int().positive().max(86_400).default(600).describe('timeout of each verification command (its whole process tree is killed and the job fails), seconds'),
  env: z.strictObject({
    allow: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an environment variable name')).default([]),
    secret: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an environment variable name')).default([])
      .describe('passed through like `allow` to the roles `secretTo` names, their values redacted (***) in evidence and cache entries, as written and base64-, hex- or percent-encoded'),
    secretTo: z.strictObject({ planner: z.boolean().default(false), worker: z.boolean().default(false), verify: z.boolean().default(true) })
      .default({ planner: false, worker: false, verify: true })
      .describe('which roles get the `secret` variables: verification (setup, verification and acceptance commands) by default; planner and worker (coding agents) only when set here'),
  }).default({ allow: [], secret: [], secretTo: { planner: false, worker: false, verify: true } }).describe('environment variables passed through to planner, worker and verification (PATH always is)'),
  sandbox: SandboxSettingSchema.default('bwrap'),
  maxFileBytes: z.number().int().positive().default(DEFAULT_MAX_FILE_BYTES).describe('largest file a worker may add or change (R-31), bytes'),
  maxFiles: z.number().int().positive().max(10_000_000).default(DEFAULT_MAX_FILES).describe('files a candidate may hold beyond the base\'s (R-31): a worker that leaves more is refused before anything is hashed'),
  protectedPaths: z.array(z.string().min(1)).default([]).describe('repository paths a worker commit must not touch (R-29); the build directory always is'),
  detailedWindow: z.union([z.literal(1), z.literal(2)]).default(2),
  coarseWindow: z.number().int().min(0).max(12).default(12),
  maxBatch: z.number().int().min(1).max(64).default(1),
  concurrency: z.number().int().min(1).max(64).default(1).describe('worker calls kept in flight at once (1: one at a time)'),
  speculation: z.number().int().min(1).max(64).optional().describe('integration jobs verified at once, each on the tree the jobs ahead of it promote (speculative integration; default: concurrency; 1: one job at a time)'),
  maxProcesses: z.number().int().min(1).max(256).optional().describe('planner, worker and verification processes run at once, whatever concurrency and speculation allow (they wait their turn); default: no cap'),
  maxAttempts: z.number().int().min(1).max(100).default(3),
  compaction: z.boolean().default(true),
  cache: z.strictObject({
    enabled: z.boolean().default(true).describe('replay verification passes from the cache (R-27); false: every command runs'),
    policyVersion: z.string().min(1).max(64).default('1').describe('an epoch of your own: another value makes every entry of the old one a miss'),
    path: z.string().min(1).optional().describe('a cache directory several builds share (relative: to this file); default: the build directory\'s own'),
  }).default({ enabled: true, policyVersion: '1' }).describe('the verification cache (R-27, R-32)'),
  prices: z.record(z.string().min(1).max(200), z.strictObject({
    input: z.number().nonnegative().max(1e6).describe('USD per million input tokens (cached input aside)'),
    output: z.number().nonnegative().max(1e6).describe('USD per million output tokens'),
    cached: z.number().nonnegative().max(1e6).optional().describe('USD per million cached input tokens (default: as input)'),
  })).optional().describe('prices per model, for calls whose agent or command reports tokens but no cost (R-58)'),
  budget: BudgetSchema.optional().describe('limits of what the build spends (R-59): usd, tokens (input + output), perNode, perMilestone; the build pauses (outcome paused) before a call would start past one, and `longbuild budget` raises it'),
  approve: z.array(z.enum(APPROVAL_GATES)).min(1).optional().describe('where the build waits for an operator (R-60): "plan" — every valid proposal (the first plan, each renewal and repair window) before it is sealed; "checkpoint" — each milestone\'s checkpoint before the build goes past it (a rejection opens a repair window); "land" — the final head before the build completes and `land` publishes it; `longbuild approve` or `reject`'),
  notify: z.array(NotifierSchema).min(1).max(16).optional().describe('who is told what (R-61): a list of { on: [blocked, paused, awaiting_approval, completed, budget, failure], command: argv, minIntervalSeconds? (default 60) }; each notification is JSON on the command\'s stdin, delivered by `run` in the background at least once (its `key`, the trigger event\'s hash, tells a repeat), a burst of one kind coalesced into one per interval'),
  snapshotEvery: z.number().int().min(0).default(1000),
  log: z.string().regex(/^(sqlite|sqlite:.+|postgres:.+|eventstore:.+)$/, 'expected sqlite, sqlite:PATH, postgres:URL or eventstore:URL').default('sqlite'),
});
export type LongbuildConfig = z.infer<typeof ConfigSchema>;

/** Parse config JSON; one clear error naming the file and field. */
export function parseConfig(raw: unknown, source: string): LongbuildConfig {
  const r = ConfigSchema.safeParse(raw);
  if (!r.success) throw new ValidationError(`invalid config ${source}: ${formatZodError(r.error)}`);
  return r.data;
}

/**
 * Load a config file. Command arguments that start with `./` or `../` are resolved against the
 * config file's directory, so a config can name scripts that sit beside it.
 */
export function loadConfig(path: string): LongbuildConfig {
  const config = parseConfig(readJsonFile(path, 'config file'), path);
  const base = dirname(resolve(path));
  const fixOne = (a: string) => (a.startsWith('./') || a.startsWith('../') ? resolve(base, a) : a);
  const fix = (argv: string[]) => argv.map(fixOne);
  const fixCall = <T extends { command?: string[]; executable?: string; prompt?: string }>(c: T): T => ({
    ...c,
    ...(c.command !== undefined ? { command: fix(c.command) } : {}),
    ...(c.executable !== undefined ? { executable: fixOne(c.executable) } : {}),
    ...(c.prompt !== undefined ? { prompt: resolve(base, c.prompt) } : {}),
  });
  return {
    ...config,
    planner: fixCall(config.planner),
    worker: fixCall(config.worker),
    verify: config.verify.map((e: VerifyEntry) => (Array.isArray(e) ? fix(e) : { ...e, run: fix(e.run) })),
    setup: config.setup.map(fix),
    acceptance: config.acceptance.map(fix),
    ...(config.notify !== undefined ? { notify: config.notify.map((n) => ({ ...n, command: fix(n.command) })) } : {}),
    cache: { ...config.cache, ...(config.cache.path !== undefined ? { path: resolve(base, config.cache.path) } : {}) },
  };
}

/** JSON Schema for editors, generated from the same zod schema. */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(ConfigSchema, { io: 'input' });
}
