import { formatCount } from '../../commands/spend.js';

/**
 * A list of ids on one human line: whole when short; else its first and last few and how many
 * there are (a 50,000-node build has 2,500 checkpoints, a wide window thousands of ready nodes).
 * `--json` always lists every one.
 */
export function shortList(ids: readonly string[], empty = '-', keep = 5): string {
  if (ids.length === 0) return empty;
  if (ids.length <= 2 * keep + 2) return ids.join(', ');
  return `${ids.slice(0, keep).join(', ')}, … ${ids.slice(-keep).join(', ')} (${formatCount(ids.length)} in all; --json lists every one)`;
}
