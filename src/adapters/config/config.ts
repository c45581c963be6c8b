import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ValidationError } from '../../events/errors.js';
import { formatZodError } from '../../events/catalogue.js';
import { DEFAULT_MAX_FILE_BYTES, SandboxSettingSchema } from '../sandbox/settings.js';

const Argv = z.array(z.string().min(1).refine((s) => !s.includes('\u0000'), 'NUL byte in argument')).min(1, 'a command needs at least an executable');

/**
 * `longbuild.config.json`: how a build driven by real commands runs. Trusted configuration
 * only this file — never a planner's or worker's output — names verification commands.
 */
export const ConfigSchema = z.strictObject({
  $schema: z.string().optional(),
  planner: z.strictObject({
    command: Argv.describe('argv of the planner; gets the planner input as JSON on stdin, prints a proposal JSON on stdout'),
    timeoutSeconds: z.number().int().positive().max(86_400).default(600),
    route: z.string().min(1).optional().describe('pinned in every sealed horizon (R-14), e.g. "claude-opus/high"'),
    asks: z.number().int().min(1).max(10).default(3).describe('times a planning round asks: a refused proposal goes back to the planner with the reasons (input `feedback`) until this many were refused, then the build blocks'),
  }),
  worker: z.strictObject({
    command: Argv.describe('argv of the worker; runs in the attempt worktree with the work packet as JSON on stdin'),
    timeoutSeconds: z.number().int().positive().max(86_400).default(3600),
  }),
  verify: z.array(Argv).default([]).describe('trusted verification commands, each an argv array (no shell)'),
  verifyTimeoutSeconds: z.number().int().positive().max(86_400).default(600).describe('timeout of each verification command (its whole process tree is killed and the job fails), seconds'),
  env: z.strictObject({
    allow: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an environment variable name')).default([]),
    secret: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an environment variable name')).default([])
      .describe('passed through like `allow`, but their values are redacted (***) in evidence and cache entries'),
  }).default({ allow: [], secret: [] }).describe('environment variables passed through to planner, worker and verification (PATH always is)'),
  sandbox: SandboxSettingSchema.default('bwrap'),
  maxFileBytes: z.number().int().positive().default(DEFAULT_MAX_FILE_BYTES).describe('largest file a worker may add or change (R-31), bytes'),
  protectedPaths: z.array(z.string().min(1)).default([]).describe('repository paths a worker commit must not touch (R-29); the build directory always is'),
  detailedWindow: z.union([z.literal(1), z.literal(2)]).default(2),
  coarseWindow: z.number().int().min(0).max(12).default(12),
  maxBatch: z.number().int().min(1).max(64).default(1),
  maxAttempts: z.number().int().min(1).max(100).default(3),
  compaction: z.boolean().default(true),
  cache: z.strictObject({ enabled: z.boolean().default(true), policyVersion: z.string().default('1') }).default({ enabled: true, policyVersion: '1' }),
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
  if (!existsSync(path)) throw new ValidationError(`config file ${path} does not exist`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ValidationError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  const config = parseConfig(raw, path);
  const base = dirname(resolve(path));
  const fix = (argv: string[]) => argv.map((a) => (a.startsWith('./') || a.startsWith('../') ? resolve(base, a) : a));
  return {
    ...config,
    planner: { ...config.planner, command: fix(config.planner.command) },
    worker: { ...config.worker, command: fix(config.worker.command) },
    verify: config.verify.map(fix),
  };
}

/** JSON Schema for editors, generated from the same zod schema. */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(ConfigSchema, { io: 'input' });
}
