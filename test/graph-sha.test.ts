import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { produce } from 'immer';
import { describe, expect, it } from 'vitest';
import type { NodeRecord } from '../src/projections/build-state.js';
import { graphSha256 } from '../src/projections/graph.js';

/** The oracle: R-9 spelled out (nodes sorted by id, deps sorted, keys sorted), JSON.stringify of sorted-key objects. */
function oracle(nodes: Record<string, NodeRecord>): string {
  const ids = Object.keys(nodes).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const body = ids.map((id) => {
    const n = nodes[id]!;
    return { deps: [...n.deps].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), id: n.id, kind: n.kind, milestone: n.milestone, state: n.state };
  });
  return createHash('sha256').update(JSON.stringify(body)).digest('hex');
}

const op = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), id: fc.stringMatching(/^[a-z]{1,3}$/), deps: fc.array(fc.stringMatching(/^[a-z]{1,3}$/), { maxLength: 3 }) }),
  fc.record({ kind: fc.constant('state' as const), pick: fc.nat(), state: fc.constantFrom('queued', 'running', 'accepted', 'blocked') }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
);

describe('R-9 the graph SHA-256 (cached per node record)', () => {
  it('R-9 for all sequences of graph changes folded with immer (unchanged records shared), the cached SHA equals the oracle at every step', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
      let nodes: Record<string, NodeRecord> = {};
      for (const o of ops) {
        nodes = produce(nodes, (d) => {
          const ids = Object.keys(d);
          if (o.kind === 'add') d[o.id] = { id: o.id, kind: 'writable', state: 'queued', milestone: 'm', deps: o.deps, attempts: 0 } as never;
          else if (ids.length > 0 && o.kind === 'state') (d[ids[o.pick % ids.length]!] as { state: string }).state = o.state;
          else if (ids.length > 0 && o.kind === 'remove') delete d[ids[o.pick % ids.length]!];
        });
        expect(graphSha256(nodes)).toBe(oracle(nodes));
      }
    }), { numRuns: 300 });
  });
});
