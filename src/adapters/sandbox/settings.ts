/**
 * The sandbox setting of a config or blueprint: `"sandbox": "bwrap" | "off"`, or an object
 * with the mode and the network of each role. Network is on for planner and worker by default
 * (agents call model APIs) and off for verification.
 */
import { z } from 'zod';

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;

/** Files a candidate may add beyond the base's. */
export const DEFAULT_MAX_FILES = 10_000;

const Network = z.strictObject({
  planner: z.boolean().default(true),
  worker: z.boolean().default(true),
  verify: z.boolean().default(false),
  setup: z.boolean().default(true).describe('the network of the setup commands (an install from the registry); on by default: they run without lifecycle scripts, with the build\'s package cache (R-57)'),
});

/** Resource limits of every process of one call: its address space, and its CPU time. */
export const CallLimitsSchema = z.strictObject({
  memoryMb: z.number().int().min(16).max(1_048_576).optional().describe('address space of each process of the call, MiB (RLIMIT_AS): an allocation beyond it fails'),
  cpuSeconds: z.number().int().min(1).max(604_800).optional().describe('CPU time of each process of the call, seconds (RLIMIT_CPU): a process over it is killed'),
  processes: z.number().int().min(8).max(1_000_000).optional().describe('processes and threads of the call at once (a pids cgroup); a fork beyond fails; default 2048'),
  tmpfsMb: z.number().int().min(1).max(1_048_576).optional().describe(`size of each of the call's private tmpfs mounts (/tmp, /var/tmp, /run, /dev/shm, its home), MiB; default ${1024}`),
});

/** Size of each private tmpfs mount of a call when its limits name none, MiB. */
export const DEFAULT_TMPFS_MB = 1024;
export type CallLimits = z.infer<typeof CallLimitsSchema>;

const Limits = z.strictObject({ planner: CallLimitsSchema.optional(), worker: CallLimitsSchema.optional(), verify: CallLimitsSchema.optional() })
  .describe('per-call resource limits of each role (prlimit, util-linux; applied inside the sandbox)');

export const SandboxSettingSchema = z.union([
  z.enum(['bwrap', 'off']),
  z.strictObject({
    mode: z.enum(['bwrap', 'off']).default('bwrap'),
    network: Network.default({ planner: true, worker: true, verify: false, setup: true }),
    limits: Limits.optional(),
    expose: z.array(z.string().min(1).refine((p) => p.startsWith('/') || p === '~' || p.startsWith('~/'), 'an absolute path, or one starting with ~/'))
      .max(64).optional()
      .describe('paths every role sees read-only on purpose (e.g. "~/.cargo/registry"); each role otherwise gets a private home, and no key or longbuild config is ever visible (R-53)'),
  }),
]).describe('how planner, worker and verification processes are isolated (R-30): "bwrap" (bubblewrap, the default) or "off"; or { mode, network: { planner, worker, verify, setup }, limits: { planner, worker, verify: { memoryMb, cpuSeconds } }, expose: [paths] }');
export type SandboxSetting = z.infer<typeof SandboxSettingSchema>;

export type RoleLimits = z.infer<typeof Limits>;

export interface NormalizedSandbox {
  readonly mode: 'bwrap' | 'off';
  readonly network: { readonly planner: boolean; readonly worker: boolean; readonly verify: boolean; readonly setup: boolean };
  readonly limits?: RoleLimits;
  readonly expose?: readonly string[];
}

/** The setting as mode + per-role network (+ per-role limits, when any). */
export function normalizeSandbox(s: SandboxSetting | undefined): NormalizedSandbox {
  if (s === undefined || typeof s === 'string') return { mode: s ?? 'bwrap', network: { planner: true, worker: true, verify: false, setup: true } };
  const limits = s.limits !== undefined && Object.values(s.limits).some((l) => l !== undefined && Object.keys(l).length > 0) ? { limits: s.limits } : {};
  return { mode: s.mode, network: { ...s.network }, ...limits, ...(s.expose !== undefined && s.expose.length > 0 ? { expose: s.expose } : {}) };
}
