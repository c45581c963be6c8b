import { z } from 'zod';

/** Node and milestone ids: they reach file paths and git refs only after this check. */
export const SAFE_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * True when `id` is safe to use in a path or a ref. `..` is excluded explicitly, and so is a
 * trailing `.`: attempt ids are `<id>.<n>`, and git refuses a ref containing `..`.
 */
export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && SAFE_ID.test(id) && !id.includes('..') && !id.endsWith('.');
}

/**
 * Safe ids every plain JavaScript object already answers to: Object.prototype's own names that
 * match SAFE_ID — `constructor`, nothing else. The build state keeps nodes, checkpoints and
 * summaries in records keyed by id, where `record['constructor']` is a function, not "absent": a
 * milestone of that name looked checkpointed and a dependency on it looked satisfied. A proposal
 * naming one is refused, like an id with the reserved prefix `summary-`.
 */
export const RESERVED_IDS: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype).filter((name) => isSafeId(name)));

/** Summary node ids (made by compaction only, R-21) start with this; a planned node's may not. */
export const SUMMARY_ID_PREFIX = 'summary-';

/** Why a planned node id with the summary prefix is refused, after what it names ("node id 'summary-x' uses …"). */
export const summaryPrefixReason = (id: string): string => `id '${id}' uses the reserved prefix '${SUMMARY_ID_PREFIX}' (summary nodes are made by compaction only)`;

/** Why a reserved id is refused, after what it names ("node id 'constructor' is reserved …"). */
export const reservedIdReason = (id: string): string => `id '${id}' is reserved (every JavaScript object has a property of that name): choose another id`;

// The schema must refuse exactly what isSafeId refuses, or a parsed plan could carry an id
// that later fails at a checkpoint or a git ref.
export const SafeIdSchema = z
  .string()
  .regex(SAFE_ID, { message: 'unsafe id: must match ^[a-z0-9][a-z0-9._-]{0,63}$ (lower case, digits, . _ -, at most 64 characters)' })
  .refine((id) => !id.includes('..') && !id.endsWith('.'), { message: "unsafe id: must not contain '..' or end with '.'" });

export const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, { message: 'expected a lower-case hex SHA-256' });
export const GitShaSchema = z.string().regex(/^[0-9a-f]{40}$/, { message: 'expected a 40-character git object id' });
