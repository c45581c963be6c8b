import { describe, expect, it } from 'vitest';
import { deriveCheckpoint } from '../src/commands/checkpoint.js';
import { CheckpointSchema } from '../src/events/catalogue.js';
import { canonicalJson } from '../src/events/canonical.js';
import { sha256Hex } from '../src/events/hash.js';
import { graphSha256 } from '../src/projections/graph.js';
import {
  acceptNode, attemptFinished, attemptStarted, buildInitialized, coarse, gitShaOf, given, horizonSealed, milestone, node,
} from './support/given.js';

const AT = '2026-01-02T00:00:00.000Z';

/** m1: accepted read-only interface `iface` (with a contract), writable `api` and `ui`; m2: `home`. */
function seeded() {
  return given(
    buildInitialized(),
    horizonSealed({
      detailed: [
        milestone('m1', [
          node('iface', [], { kind: 'read-only', accepted: true, contract: 'catalog@1', decision: 'REST over gRPC' }),
          node('api', ['iface'], { foundation: 'node@20' }),
          node('ui', ['api']),
        ]),
        milestone('m2', [node('home', ['ui'])]),
      ],
      coarse: [coarse('release')],
    }),
  );
}

function refusal(v: ReturnType<typeof deriveCheckpoint>): { rule: string; reason: string } {
  if (v.ok) throw new Error('expected the checkpoint to be refused');
  return v;
}

describe('R-20 milestone checkpoints', () => {
  it('R-20 a milestone with a node that is not accepted is refused, naming the node and its state', () => {
    const spec = seeded().when(...acceptNode('api', 'writable', 'job-1'), attemptStarted('ui'));
    const r = refusal(deriveCheckpoint(spec.state, 'm1', AT));
    expect(r.rule).toBe('R-20');
    expect(r.reason).toContain("node 'ui'");
    expect(r.reason).toContain('running');
    expect(refusal(deriveCheckpoint(seeded().state, 'm1', AT)).reason).toContain("'api'");
  });

  it('R-20 a writable accepted node without a successful integration receipt is refused', () => {
    // A worker that "records" a writable node would accept it in the fold; the checkpoint refuses it.
    const spec = seeded().when(...acceptNode('api', 'writable', 'job-1'), attemptStarted('ui'), attemptFinished('ui', 'recorded'));
    expect(spec.state.nodes['ui']!.state).toBe('accepted');
    const r = refusal(deriveCheckpoint(spec.state, 'm1', AT));
    expect(r.rule).toBe('R-20');
    expect(r.reason).toContain("writable node 'ui' has no successful integration receipt");
  });

  it('R-20 the accepted checkpoint holds the right nodes, commits, versions and decisions, and its SHA-256 is the canonical hash', () => {
    const spec = seeded().when(...acceptNode('api', 'writable', 'job-1'), ...acceptNode('ui', 'writable', 'job-2'));
    const v = deriveCheckpoint(spec.state, 'm1', AT);
    if (!v.ok) throw new Error(v.reason);
    const cp = v.checkpoint;
    expect(CheckpointSchema.parse(cp)).toEqual(cp);
    expect(cp.milestoneId).toBe('m1');
    expect(cp.horizonId).toBe(spec.state.horizon!.horizonId);
    expect(cp.horizonRevision).toBe(1);
    expect(cp.graphRevision).toBe(spec.state.graphRevision);
    expect(cp.graphSha256).toBe(graphSha256(spec.state.nodes));
    expect(cp.integrationHead).toBe(gitShaOf('result:job-2'));
    expect(cp.acceptedNodes).toEqual([
      { id: 'api', kind: 'writable', commit: gitShaOf('commit:api.1') },
      { id: 'iface', kind: 'read-only', commit: null },
      { id: 'ui', kind: 'writable', commit: gitShaOf('commit:ui.1') },
    ]);
    expect(cp.acceptedNodes.map((n) => n.id)).not.toContain('home');
    expect(cp.contracts).toEqual(['catalog@1']);
    expect(cp.foundations).toEqual(['node@20']);
    expect(cp.decisions).toEqual([{ nodeId: 'iface', decision: 'REST over gRPC' }]);
    expect(cp.metrics).toEqual({ attempts: 2, integrations: 2, nodes: 3 });
    expect(cp.nextHorizon).toEqual({ detailed: ['m2'], coarse: ['release'] });
    expect(cp.createdAt).toBe(AT);
    expect(v.sha256).toBe(sha256Hex(canonicalJson(cp)));
    // Derived only from state: the same state gives the same bytes.
    const again = deriveCheckpoint(spec.state, 'm1', AT);
    expect(again.ok && again.sha256).toBe(v.sha256);
  });

  it('R-20 accepted foundation versions are recorded', () => {
    const spec = given(
      buildInitialized(),
      horizonSealed({ detailed: [milestone('m1', [node('base', [], { kind: 'read-only', accepted: true, foundation: 'node@20', contract: 'api@2' })])], coarse: [] }),
    );
    const v = deriveCheckpoint(spec.state, 'm1', AT);
    expect(v.ok && [v.checkpoint.contracts, v.checkpoint.foundations, v.checkpoint.nextHorizon]).toEqual([['api@2'], ['node@20'], { detailed: [], coarse: [] }]);
  });

  it('R-20 a checkpoint is immutable: a second one for the same milestone is refused', () => {
    const spec = seeded().when(...acceptNode('api', 'writable', 'job-1'), ...acceptNode('ui', 'writable', 'job-2'));
    const v = deriveCheckpoint(spec.state, 'm1', AT);
    if (!v.ok) throw new Error(v.reason);
    const written = spec.when({ type: 'CheckpointWritten', data: { checkpoint: v.checkpoint, checkpointSha256: v.sha256, graphRevision: spec.state.graphRevision } });
    const r = refusal(deriveCheckpoint(written.state, 'm1', AT));
    expect(r.reason).toContain('already checkpointed');
  });

  it('R-20 a milestone that is not a detailed milestone of the horizon is refused', () => {
    const spec = seeded().when(...acceptNode('api', 'writable', 'job-1'), ...acceptNode('ui', 'writable', 'job-2'));
    expect(refusal(deriveCheckpoint(spec.state, 'release', AT)).reason).toContain("'release'");
    expect(refusal(deriveCheckpoint(spec.state, 'nowhere', AT)).reason).toContain("'nowhere'");
  });

  it('R-20 an unsafe milestone id is refused', () => {
    const spec = seeded();
    for (const bad of ['../m1', 'M1', '', 'a/b']) expect(refusal(deriveCheckpoint(spec.state, bad, AT)).reason).toContain('unsafe milestone id');
  });

  it('R-20 no checkpoint without a sealed horizon', () => {
    expect(refusal(deriveCheckpoint(given(buildInitialized()).state, 'm1', AT)).reason).toContain('no sealed horizon');
  });
});
