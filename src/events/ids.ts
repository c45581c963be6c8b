import { z } from 'zod';

/** Node and milestone ids: they reach file paths and git refs only after this check. */
export const SAFE_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export const SafeIdSchema = z.string().regex(SAFE_ID, {
  message: 'unsafe id: must match ^[a-z0-9][a-z0-9._-]{0,63}$ (lower case, digits, . _ -, at most 64 characters)',
});

/** True when `id` is safe to use in a path or a ref. `..` is excluded explicitly. */
export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && SAFE_ID.test(id) && !id.includes('..');
}

export const Sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, { message: 'expected a lower-case hex SHA-256' });
export const GitShaSchema = z.string().regex(/^[0-9a-f]{40}$/, { message: 'expected a 40-character git object id' });
