/**
 * The sandbox setting of a config or blueprint: `"sandbox": "bwrap" | "off"`, or an object
 * with the mode and the network of each role. Network is on for planner and worker by default
 * (agents call model APIs) and off for verification.
 */
import { z } from 'zod';

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;

const Network = z.strictObject({
  planner: z.boolean().default(true),
  worker: z.boolean().default(true),
  verify: z.boolean().default(false),
});

export const SandboxSettingSchema = z.union([
  z.enum(['bwrap', 'off']),
  z.strictObject({
    mode: z.enum(['bwrap', 'off']).default('bwrap'),
    network: Network.default({ planner: true, worker: true, verify: false }),
  }),
]).describe('how planner, worker and verification processes are isolated (R-30): "bwrap" (bubblewrap, the default) or "off"; or { mode, network: { planner, worker, verify } }');
export type SandboxSetting = z.infer<typeof SandboxSettingSchema>;

export interface NormalizedSandbox {
  readonly mode: 'bwrap' | 'off';
  readonly network: { readonly planner: boolean; readonly worker: boolean; readonly verify: boolean };
}

/** The setting as mode + per-role network. */
export function normalizeSandbox(s: SandboxSetting | undefined): NormalizedSandbox {
  if (s === undefined || typeof s === 'string') return { mode: s ?? 'bwrap', network: { planner: true, worker: true, verify: false } };
  return { mode: s.mode, network: { ...s.network } };
}
