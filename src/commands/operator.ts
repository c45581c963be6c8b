import type { DomainEvent } from '../events/catalogue.js';
import type { BuildState } from '../projections/build-state.js';

/** What an operator asked for, and what the host made of it (pure; the CLI records the event). */
export type OperatorVerdict = { ok: true; event: DomainEvent } | { ok: false; reason: string };

/**
 * `longbuild retry NODE [--attempts N]`: only a node that used up its attempts (state blocked) can
 * be retried; it gets N more (default: the build's maxAttempts), so its limit becomes the attempts
 * made plus N.
 */
export function decideRetry(state: BuildState, nodeId: string, attempts: number | undefined, user: string | undefined): OperatorVerdict {
  if (!state.build) return { ok: false, reason: 'the build is not initialised' };
  if (state.completed) return { ok: false, reason: 'the build is complete' };
  const node = state.nodes[nodeId];
  if (!node) {
    const blocked = Object.keys(state.nodes).filter((id) => state.nodes[id]!.state === 'blocked');
    return { ok: false, reason: `no node '${nodeId}' in the graph${blocked.length > 0 ? ` (blocked: ${blocked.join(', ')})` : ''}` };
  }
  if (node.state !== 'blocked') return { ok: false, reason: `node '${nodeId}' is ${node.state}, not blocked: only a node that used up its attempts can be retried` };
  const more = attempts ?? state.build.settings.maxAttempts;
  if (!Number.isInteger(more) || more < 1 || more > 100) return { ok: false, reason: `--attempts must be a whole number from 1 to 100, got ${String(more)}` };
  return {
    ok: true,
    event: {
      type: 'NodeRetried',
      data: { nodeId, attempts: more, attemptLimit: node.attempts + more, operator: { action: 'retry', ...(user ? { user } : {}) }, graphRevision: state.graphRevision },
    },
  };
}
