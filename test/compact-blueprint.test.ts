/**
 * Decision 0055: a build's blueprint is kept with each milestone's nodes as JSON text, parsed when
 * read (`compactBlueprint`). For all blueprints, what every reader sees is what the parsed
 * blueprint gives: its JSON, the node a worker call finds, the scripted planner's proposals and
 * every planner and worker call's driver digest. The oracle is the blueprint as parsed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactBlueprint, findBlueprintNode, parseBlueprint, type Blueprint } from '../src/adapters/blueprint/blueprint.js';
import { scriptedProposal } from '../src/adapters/blueprint/scripted-planner.js';
import { callDrivers } from '../src/adapters/session-drivers.js';
import { callInputSha256 } from '../src/commands/call-input.js';
import { canonicalJson } from '../src/events/canonical.js';
import type { PlannerInput } from '../src/commands/ports.js';

const idArb = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}$/);

const nodeArb = (id: string) => fc.record({
  id: fc.constant(id),
  kind: fc.constantFrom('read-only', 'writable'),
  deps: fc.constant([] as string[]),
  title: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
  decision: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
  files: fc.option(fc.dictionary(fc.constantFrom('a.js', 'src/b.js', 'test/c.test.js'), fc.string({ maxLength: 20 })), { nil: undefined }),
  failAttempts: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
}, { requiredKeys: ['id', 'kind', 'deps'] });

const milestonesArb = (prefix: string, max: number, nodePrefix: string) => fc.uniqueArray(idArb.map((id) => `${nodePrefix}${id}`), { minLength: 1, maxLength: 40 }).chain((ids) => {
  // Cut the ids into milestones of 1–5 nodes; a node's deps are earlier nodes.
  const cuts: string[][] = [];
  for (let i = 0; i < ids.length; i += 1 + (i % 5)) cuts.push(ids.slice(i, i + 1 + (i % 5)));
  return fc.tuple(...cuts.slice(0, max).map((group, m) => fc.tuple(fc.string({ maxLength: 10 }), fc.tuple(...group.map((id) => nodeArb(id)))).map(([title, nodes]) => ({
    id: `${prefix}${m}`, title, nodes: nodes.map((n, k) => ({ ...n, deps: k > 0 ? [nodes[k - 1]!.id] : [] })),
  }))));
});

const blueprintArb: fc.Arbitrary<Blueprint> = fc.tuple(milestonesArb('m', 12, ''), fc.option(milestonesArb('repair-', 3, 'fix-'), { nil: undefined }), fc.constantFrom(1 as const, 2 as const), fc.integer({ min: 0, max: 4 }))
  // Through JSON, as a blueprint file is read: no key holds undefined.
  .map(([milestones, repairs, detailedWindow, coarseWindow]) => parseBlueprint(JSON.parse(JSON.stringify({
    request: { title: 'compact' }, verify: [], detailedWindow, coarseWindow, milestones, ...(repairs === undefined ? {} : { repairs }),
  }))));

function input(purpose: 'seal' | 'renew' | 'repair', horizon: PlannerInput['horizon']): PlannerInput {
  return { purpose, callId: 'c', request: {}, horizon, checkpoints: [], graph: { revision: 0, sha256: '0'.repeat(64), nodes: [] }, integrationHead: '0'.repeat(40) };
}

describe('a compact blueprint reads as the parsed one (decision 0055)', () => {
  it('for all blueprints: the same JSON, the same node and milestone for every id (read in any order, past the milestones kept parsed), the same proposals, the same call digests', () => {
    fc.assert(
      fc.property(blueprintArb, fc.array(fc.nat(), { maxLength: 30 }), (bp, picks) => {
        const c = compactBlueprint(bp);
        expect(JSON.stringify(c)).toBe(JSON.stringify(bp));
        expect(canonicalJson(c)).toBe(canonicalJson(bp));
        expect({ ...c.milestones[0]! }).toEqual(bp.milestones[0]);
        const ids = [...bp.milestones, ...(bp.repairs ?? [])].flatMap((m) => m.nodes.map((n) => n.id));
        // Every id, then ids in a random order (the kept parsed milestones evicted and read again), and ids that are not there.
        for (const id of [...ids, ...picks.map((p) => ids[p % ids.length]!), 'absent', `${ids[0]}x`]) {
          expect(JSON.stringify(findBlueprintNode(c, id))).toBe(JSON.stringify(findBlueprintNode(bp, id)));
        }
        // The scripted planner: seal, every renewal in turn, every repair window.
        let want = scriptedProposal(bp, input('seal', null));
        expect(scriptedProposal(c, input('seal', null))).toEqual(want);
        for (let i = 0; i < bp.milestones.length && want.coarse.length > 0; i++) {
          const horizon = { horizonId: 'h', revision: i + 1, detailed: want.detailed.map(({ nodes: _, ...m }) => m), coarse: want.coarse };
          want = scriptedProposal(bp, input('renew', horizon));
          expect(scriptedProposal(c, input('renew', horizon))).toEqual(want);
        }
        const repair = { horizonId: 'h', revision: 1, detailed: [{ id: bp.repairs?.[0]?.id ?? 'none', title: 'r' }], coarse: [] };
        expect(scriptedProposal(c, input('repair', repair))).toEqual(scriptedProposal(bp, input('repair', repair)));
        // Every call's driver digest.
        const drivers = { compact: callDrivers({ kind: 'blueprint', blueprint: c }), parsed: callDrivers({ kind: 'blueprint', blueprint: bp }) };
        expect(callInputSha256('planner', { n: 1 }, drivers.compact.planner(), new Map())).toBe(callInputSha256('planner', { n: 1 }, drivers.parsed.planner(), new Map()));
        for (const id of [ids[0]!, ids[ids.length - 1]!, 'absent']) {
          expect(callInputSha256('worker', { id }, drivers.compact.worker(id), new Map())).toBe(callInputSha256('worker', { id }, drivers.parsed.worker(id), new Map()));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('keeps no node object between reads: each milestone holds its nodes\' text, and what a reader changes is not seen by the next parse', () => {
    const bp = parseBlueprint({
      request: { title: 't' }, verify: [], detailedWindow: 1,
      milestones: Array.from({ length: 8 }, (_, m) => ({ id: `m${m}`, title: `M${m}`, nodes: [{ id: `n${m}`, kind: 'read-only', deps: [] }] })),
    });
    const c = compactBlueprint(bp);
    const d = Object.getOwnPropertyDescriptor(c.milestones[3], 'nodes')!;
    expect(typeof d.get).toBe('function');
    expect(d.enumerable).toBe(true);
    expect('value' in d).toBe(false);
    // Read past the milestones kept parsed: m3's nodes are parsed again from its text, equal to the original.
    (c.milestones[3]!.nodes[0] as { title?: string }).title = 'changed';
    for (let m = 0; m < 8; m++) void c.milestones[m]!.nodes;
    expect(c.milestones[3]!.nodes).toEqual(bp.milestones[3]!.nodes);
  });
});
