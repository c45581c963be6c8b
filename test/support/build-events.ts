import fc from 'fast-check';
import type { JsonValue } from '../../src/events/canonical.js';
import type { StoredEvent } from '../../src/events/envelope.js';

// Random build logs for properties of the build fold: every event type the fold reads, on small
// pools of node, attempt, job, call and summary ids so that events collide the way a long build
// (and a hostile or replayed log) makes them collide: attempts finished twice, jobs started again
// after they closed, renewals that name compacted nodes, summaries absorbing summaries.

const NODES = ['a', 'b', 'c', 'd', 'e'];
const MILESTONES = ['m1', 'm2'];
const SUMMARIES = ['summary-0000000000000001', 'summary-0000000000000002', 'summary-0000000000000003'];
const SHA = 'f'.repeat(64);
const GIT = 'e'.repeat(40);

const node = fc.constantFrom(...NODES);
const nodes = fc.uniqueArray(node, { minLength: 1, maxLength: 3 });
const attemptId = fc.tuple(node, fc.integer({ min: 1, max: 3 })).map(([n, k]) => ({ nodeId: n, attempt: k, attemptId: `${n}.${k}` }));
const jobId = fc.constantFrom('j1', 'j2', 'j3');
const callId = fc.constantFrom('c1', 'c2', 'c3');

type Data = Record<string, JsonValue>;
const ev = (type: string, data: fc.Arbitrary<Data>): fc.Arbitrary<[string, Data]> => data.map((d) => [type, d]);

const planned = fc.record({
  id: fc.oneof(node, fc.constantFrom(...SUMMARIES)),
  kind: fc.constantFrom('writable', 'read-only'),
  deps: fc.uniqueArray(fc.oneof(node, fc.constantFrom(...SUMMARIES)), { maxLength: 3 }),
  milestone: fc.constantFrom(...MILESTONES),
  accepted: fc.boolean(),
  title: fc.constantFrom('t1', 't2'),
});

const horizon = fc.record({
  horizonId: fc.constant('h'), revision: fc.constant(1), planSha256: fc.constant(SHA),
  // Windows that change, so that renewals close a window and open another (decision 0032).
  detailed: fc.constantFrom([{ id: 'm1', title: 'M1' }, { id: 'm2', title: 'M2' }], [{ id: 'm1', title: 'M1' }], [{ id: 'm2', title: 'M2' }]), coarse: fc.constant([]),
  nodes: fc.array(planned, { maxLength: 4 }), pins: fc.constant({}), callId,
}) as fc.Arbitrary<Data>;

const domainEvent: fc.Arbitrary<[string, Data]> = fc.oneof(
  ev('PlannerInvoked', fc.record({ callId, purpose: fc.constantFrom('plan', 'renewal') })),
  ev('EffectReinvoked', fc.record({ effect: fc.constantFrom('planner', 'worker'), key: callId })),
  ev('PlannerReturned', fc.record({ callId })),
  ev('ProposalRejected', fc.record({ callId, rule: fc.constant('R-8'), reason: fc.constant('no') })),
  ev('HorizonSealed', horizon),
  ev('HorizonRenewed', horizon),
  ev('AttemptStarted', attemptId.map((a) => ({ ...a, baseHead: GIT, branch: `refs/heads/a/${a.attemptId}` }))),
  ev('AttemptFinished', fc.tuple(attemptId, fc.constantFrom('committed', 'recorded', 'failed'), fc.boolean(), fc.option(fc.constant('use x'), { nil: undefined })).map(([a, outcome, adopted, decision]) => ({
    attemptId: a.attemptId, nodeId: a.nodeId, outcome, adopted, evidenceSha256: SHA, ...(outcome === 'committed' ? { commit: GIT } : {}), ...(decision === undefined ? {} : { decision }),
    ...(adopted ? {} : { durationMs: 11 }),
  }))),
  ev('IntegrationStarted', fc.record({ jobId, nodeIds: nodes, baseHead: fc.constant(GIT) }).map((d) => ({ ...d, candidates: d.nodeIds.map((n) => ({ nodeId: n, commit: GIT })) }))),
  ev('VerificationFinished', fc.record({ jobId, passed: fc.boolean(), cacheHit: fc.boolean() }).map((d) => ({
    jobId: d.jobId, passed: d.passed, resultCommit: GIT, tree: GIT, evidenceSha256: SHA, evidence: [{ cacheHit: d.cacheHit, stdoutSha256: SHA, stderrSha256: SHA, durationMs: 7 }],
  }))),
  ev('AcceptanceStarted', fc.record({ runId: fc.constantFrom('accept-1', 'accept-2'), milestoneId: fc.option(fc.constantFrom(...MILESTONES), { nil: null }) }).map((d) => ({ ...d, head: GIT }))),
  ev('AcceptanceFinished', fc.record({ runId: fc.constantFrom('accept-1', 'accept-2'), passed: fc.boolean() }).map((d) => ({
    ...d, head: GIT, tree: GIT, evidenceSha256: SHA, evidence: [{ argv: ['e2e'], exitCode: d.passed ? 0 : 1, cacheHit: false, stdoutSha256: SHA, stderrSha256: SHA, durationMs: 3 }],
  }))),
  ev('AcceptanceRequested', fc.constant({ operator: { action: 'accept' } })),
  ev('IntegrationPromoted', fc.record({ jobId, nodeIds: nodes, adopted: fc.boolean() }).map((d) => ({
    jobId: d.jobId, adopted: d.adopted, receipt: { resultCommit: GIT, tree: GIT, cacheHit: false, candidates: d.nodeIds.map((n) => ({ nodeId: n, commit: GIT })) },
  }))),
  ev('IntegrationFailed', fc.record({ jobId, nodeIds: nodes })),
  ev('BatchSplit', fc.record({ jobId, halves: fc.tuple(nodes, nodes) })),
  ev('CheckpointWritten', fc.constantFrom(...MILESTONES).map((m) => ({ checkpoint: { milestoneId: m }, checkpointSha256: SHA }))),
  ev('MilestoneCompacted', fc.record({
    summaryId: fc.constantFrom(...SUMMARIES), milestoneId: fc.constantFrom(...MILESTONES),
    compactedNodeIds: fc.uniqueArray(node, { maxLength: 3 }), absorbedSummaryIds: fc.uniqueArray(fc.constantFrom(...SUMMARIES), { maxLength: 2 }),
  }).map((d) => ({ summaryId: d.summaryId, summarySha256: SHA, summary: { milestoneId: d.milestoneId, compactedNodeIds: d.compactedNodeIds, absorbedSummaryIds: d.absorbedSummaryIds.filter((s) => s !== d.summaryId) } }))),
  ev('BuildBlocked', fc.record({ reason: fc.constant('stuck'), nodeIds: nodes })),
  ev('BuildCompleted', fc.constant({})),
);

/** A build log: BuildInitialized (attempt limit 2 or 3, compaction on or off), then random events. */
export const buildLogArb: fc.Arbitrary<StoredEvent[]> = fc.tuple(fc.integer({ min: 2, max: 3 }), fc.boolean(), fc.array(domainEvent, { maxLength: 60 })).map(([maxAttempts, compaction, body]) => {
  const init: [string, Data] = ['BuildInitialized', {
    buildId: 'b-prop', request: {}, requestSha256: SHA, integrationRef: 'refs/heads/longbuild/integration', baseHead: GIT, verify: [['true']],
    settings: { detailedWindow: 2, coarseWindow: 0, maxBatch: 2, maxAttempts, compaction, plannerRoute: 'prop' }, driver: { kind: 'blueprint', sourceSha256: SHA },
  }];
  // Horizons follow R-15 (a log breaking it is corrupt and refused by the fold, see horizon.test.ts):
  // the first horizon event seals revision 1, every later one renews to the next revision.
  let revision = 0;
  const horizons = body.map(([type, data]): [string, Data] => (type === 'HorizonSealed' || type === 'HorizonRenewed'
    ? [++revision === 1 ? 'HorizonSealed' : 'HorizonRenewed', { ...data, revision }] : [type, data]));
  return [init, ...horizons].map(([type, data], i) => ({
    position: i + 1, streamId: 'build-b-prop', revision: i, type, schemaVersion: 1, data, metadata: { recordedAt: '2026-01-01T00:00:00.000Z' }, prevHash: '', hash: '',
  }));
});
