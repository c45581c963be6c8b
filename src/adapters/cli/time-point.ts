import { UsageError } from '../../events/errors.js';
import type { TimePoint } from '../app/state-at.js';

/** Parse --at / --revision / --checkpoint (at most one). */
export function timePointFromFlags(flags: Readonly<Record<string, unknown>>): TimePoint {
  const given = ['at', 'revision', 'checkpoint'].filter((f) => flags[f] !== undefined);
  if (given.length > 1) throw new UsageError(`give at most one of --at, --revision, --checkpoint (got ${given.map((g) => `--${g}`).join(', ')})`);
  if (typeof flags.at === 'number') return { at: flags.at };
  if (typeof flags.revision === 'number') return { revision: flags.revision };
  if (typeof flags.checkpoint === 'string') return { checkpoint: flags.checkpoint };
  return { now: true };
}
