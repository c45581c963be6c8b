/**
 * Given/when/then for the build fold: domain events are validated
 * against the real catalogue, wrapped as hash-chained StoredEvents at positions 1..n with a
 * logical clock, and folded with `evolveBuild` — the same path the controller and the SQLite
 * tables take, so a test state is one a real log could produce.
 */
import { expect } from 'vitest';
import { logicalClock } from '../../src/adapters/clock.js';
import type { JsonValue } from '../../src/events/canonical.js';
import { domainCatalogue, SCHEMA_VERSIONS, type DataOf, type DomainEvent, type MilestoneRef, type PlannedNode } from '../../src/events/catalogue.js';
import { sealEvent, type StoredEvent } from '../../src/events/envelope.js';
import { canonicalSha256, GENESIS_HASH, sha256Hex } from '../../src/events/hash.js';
import { evolveBuild, initialBuildState, type BuildState } from '../../src/projections/build-state.js';
import { validateProposal, type Proposal, type ValidPlan } from '../../src/commands/horizon.js';
import { attemptIdOf } from '../../src/commands/call-ids.js';
import { deriveCheckpoint } from '../../src/commands/checkpoint.js';
import { dagToProposal, type ProgressCase } from './arbitraries.js';

export const STREAM = 'build-test';
const clock = logicalClock();

/** A deterministic 64-hex SHA-256 named by a label. */
export const sha256Of = (label: string): string => sha256Hex(`sha256:${label}`);
/** A deterministic 40-hex git object id named by a label. */
export const gitShaOf = (label: string): string => sha256Hex(`git:${label}`).slice(0, 40);

export const BASE_HEAD = gitShaOf('base');

/** Wrap domain events as a hash-chained stored log starting after `after` (catalogue-validated). */
export function storeEvents(events: readonly DomainEvent[], after: StoredEvent | null = null): StoredEvent[] {
  const out: StoredEvent[] = [];
  let prev = after;
  for (const e of events) {
    domainCatalogue.validate(e.type, SCHEMA_VERSIONS[e.type], e.data);
    const position = (prev?.position ?? 0) + 1;
    const stored = sealEvent({
      position,
      streamId: STREAM,
      revision: (prev?.revision ?? -1) + 1,
      type: e.type,
      schemaVersion: SCHEMA_VERSIONS[e.type],
      data: e.data as JsonValue,
      metadata: { recordedAt: clock.now(position) },
      prevHash: prev?.hash ?? GENESIS_HASH,
    });
    out.push(stored);
    prev = stored;
  }
  return out;
}

/** Fold stored events from the initial state. */
export function foldBuild(events: readonly StoredEvent[], from: BuildState = initialBuildState): BuildState {
  return events.reduce(evolveBuild, from);
}

/** A build history under test: `given(...).when(...).then(state => ...)`. */
export class BuildSpec {
  private constructor(readonly log: readonly StoredEvent[], readonly state: BuildState) {}

  static given(events: readonly DomainEvent[]): BuildSpec {
    const log = storeEvents(events);
    return new BuildSpec(log, foldBuild(log));
  }

  /** Append more events and fold them onto the current state (incremental, like catch-up). */
  when(...events: DomainEvent[]): BuildSpec {
    const more = storeEvents(events, this.log.at(-1) ?? null);
    return new BuildSpec([...this.log, ...more], foldBuild(more, this.state));
  }

  then(assert: (state: BuildState) => void): BuildSpec {
    assert(this.state);
    // Incremental and full folds must agree (R-5 at the level of the pure fold).
    expect(foldBuild(this.log)).toEqual(this.state);
    return this;
  }
}

export const given = (...events: DomainEvent[]): BuildSpec => BuildSpec.given(events);

// ---- event builders ----------------------------------------------------------

export function buildInitialized(settings: Partial<DataOf<'BuildInitialized'>['settings']> = {}): DomainEvent {
  const request = { goal: 'test build' };
  return {
    type: 'BuildInitialized',
    data: {
      buildId: 'b-test', request, requestSha256: canonicalSha256(request), integrationRef: 'refs/heads/main', baseHead: BASE_HEAD,
      verify: [['true']],
      settings: { detailedWindow: 2, coarseWindow: 12, maxBatch: 1, maxAttempts: 3, compaction: false, plannerRoute: 'scripted', ...settings },
      driver: { kind: 'blueprint', sourceSha256: sha256Of('blueprint') },
    },
  };
}

/** Validate a proposal against `state` and fail the test if it is refused. */
export function mustValidate(proposal: unknown, state: Pick<BuildState, 'nodes' | 'checkpoints'> = initialBuildState): ValidPlan {
  const verdict = validateProposal(proposal, state);
  if (!verdict.ok) throw new Error(`expected a valid proposal, got ${verdict.rule}: ${verdict.reason}`);
  return verdict.plan;
}

const pinsFor = (revision: number) => ({
  requestSha256: canonicalSha256({ goal: 'test build' }), graphRevision: revision, integrationHead: BASE_HEAD,
  contracts: [], foundations: [], createdAt: clock.now(0), plannerRoute: 'scripted',
});

/** HorizonSealed (revision 1) for a proposal that must validate against the empty graph. */
export function horizonSealed(proposal: Proposal, state: Pick<BuildState, 'nodes' | 'checkpoints'> = initialBuildState): DomainEvent {
  const plan = mustValidate(proposal, state);
  return {
    type: 'HorizonSealed',
    data: {
      horizonId: `h-${plan.planSha256.slice(0, 12)}`, revision: 1, planSha256: plan.planSha256, detailed: plan.detailed, coarse: plan.coarse,
      nodes: plan.nodes, pins: pinsFor(0), callId: 'plan.seal.0', graphRevision: 0,
    },
  };
}

/** HorizonRenewed from `fromRevision` for an already validated plan. */
export function horizonRenewed(plan: ValidPlan, fromRevision: number, graphRevision: number): DomainEvent {
  return {
    type: 'HorizonRenewed',
    data: {
      horizonId: `h-${plan.planSha256.slice(0, 12)}`, revision: fromRevision + 1, fromRevision, planSha256: plan.planSha256,
      detailed: plan.detailed, coarse: plan.coarse, nodes: plan.nodes, pins: pinsFor(graphRevision), callId: `plan.renew.${fromRevision}`, graphRevision,
    },
  };
}

export function attemptStarted(nodeId: string, attempt = 1, baseHead = BASE_HEAD): DomainEvent {
  const attemptId = attemptIdOf(nodeId, attempt);
  return { type: 'AttemptStarted', data: { attemptId, nodeId, attempt, baseHead, branch: `refs/heads/longbuild/attempts/${attemptId}`, graphRevision: 0 } };
}

export function attemptFinished(nodeId: string, outcome: 'committed' | 'recorded' | 'failed', attempt = 1, decision?: string): DomainEvent {
  return {
    type: 'AttemptFinished',
    data: {
      attemptId: attemptIdOf(nodeId, attempt), nodeId, outcome, evidenceSha256: sha256Of(`evidence:${nodeId}.${attempt}`), adopted: false, graphRevision: 0,
      ...(outcome === 'committed' ? { commit: gitShaOf(`commit:${nodeId}.${attempt}`), tree: gitShaOf(`tree:${nodeId}.${attempt}`) } : {}),
      ...(decision !== undefined ? { decision } : {}),
    },
  };
}

export function integrationStarted(jobId: string, nodeIds: readonly string[], attempt = 1, baseHead = BASE_HEAD): DomainEvent {
  return {
    type: 'IntegrationStarted',
    data: {
      jobId, nodeIds: [...nodeIds], baseHead, graphRevision: 0,
      candidates: nodeIds.map((nodeId) => ({ nodeId, attemptId: attemptIdOf(nodeId, attempt), commit: gitShaOf(`commit:${nodeId}.${attempt}`) })),
    },
  };
}

export function integrationPromoted(jobId: string, nodeIds: readonly string[], attempt = 1, baseHead = BASE_HEAD): DomainEvent {
  return {
    type: 'IntegrationPromoted',
    data: {
      jobId, adopted: false, graphRevision: 0,
      receipt: {
        jobId, nodeIds: [...nodeIds], baseHead, cacheHit: false, evidenceSha256s: [sha256Of(`verify:${jobId}`)],
        candidates: nodeIds.map((nodeId) => ({ nodeId, commit: gitShaOf(`commit:${nodeId}.${attempt}`) })),
        resultCommit: gitShaOf(`result:${jobId}`), tree: gitShaOf(`tree:${jobId}`),
      },
    },
  };
}

export function integrationFailed(jobId: string, nodeIds: readonly string[]): DomainEvent {
  return { type: 'IntegrationFailed', data: { jobId, nodeIds: [...nodeIds], reason: 'verification failed', graphRevision: 0 } };
}

/** The events that take a node from queued to accepted the way the controller does. */
export function acceptNode(nodeId: string, kind: 'read-only' | 'writable', jobId = `job-for-${nodeId}`): DomainEvent[] {
  if (kind === 'read-only') return [attemptStarted(nodeId), attemptFinished(nodeId, 'recorded')];
  return [attemptStarted(nodeId), attemptFinished(nodeId, 'committed'), integrationStarted(jobId, [nodeId]), integrationPromoted(jobId, [nodeId])];
}

// ---- proposal builders ---------------------------------------------------------

export type NodeSpec = Omit<PlannedNode, 'milestone'>;

/** A node as a proposal lists it: writable by default, no deps. */
export const node = (id: string, deps: string[] = [], extra: Partial<NodeSpec> = {}): NodeSpec => ({ id, kind: 'writable', deps, ...extra });
export const milestone = (id: string, nodes: NodeSpec[] = []): MilestoneRef & { nodes: NodeSpec[] } => ({ id, title: `Milestone ${id}`, nodes });
export const coarse = (id: string, title = `Later ${id}`): MilestoneRef => ({ id, title, intent: `intent of ${id}` });

/**
 * A build whose first window is done: milestone `d0` with the read-only, already accepted nodes
 * `base-a` and `base-b`, checkpointed; `coarseLater` coarse milestones remain.
 */
export function earlierWindow(coarseLater: MilestoneRef[] = [coarse('c1')]): BuildSpec {
  const sealed = given(
    buildInitialized(),
    horizonSealed({
      detailed: [milestone('d0', [node('base-a', [], { kind: 'read-only', accepted: true }), node('base-b', ['base-a'], { kind: 'read-only', accepted: true })])],
      coarse: coarseLater,
    }),
  );
  const cp = deriveCheckpoint(sealed.state, 'd0', clock.now(3));
  if (!cp.ok) throw new Error(`earlierWindow: ${cp.reason}`);
  return sealed.when({ type: 'CheckpointWritten', data: { checkpoint: cp.checkpoint, checkpointSha256: cp.sha256, graphRevision: sealed.state.graphRevision } });
}

/**
 * Fold a build over a random DAG: sealed with the nodes in `listing` order, then each node of the
 * first milestone whose dependencies are accepted meets its fate (accepted the controller's way,
 * left queued, left running, committed and validating, or failed and revising). When the whole
 * first milestone is accepted and `checkpointFirst` is set, it is checkpointed and the second
 * milestone progresses the same way.
 */
export function progressedBuild(c: ProgressCase, listing: readonly number[] = c.dag.listing): BuildSpec {
  let spec = given(buildInitialized(), horizonSealed(dagToProposal({ ...c.dag, listing })));
  let jobs = 0;
  const accepted = new Set<string>();
  for (let m = 0; m < c.dag.milestones.length; m++) {
    c.dag.nodes.forEach((n, i) => {
      if (n.milestone !== m || !n.deps.every((d) => accepted.has(d))) return;
      const fate = c.fates[i]!;
      if (fate === 'accept') {
        spec = spec.when(...acceptNode(n.id, n.kind, `job-${++jobs}`));
        accepted.add(n.id);
      } else if (fate === 'run') spec = spec.when(attemptStarted(n.id));
      else if (fate === 'commit') spec = spec.when(attemptStarted(n.id), attemptFinished(n.id, n.kind === 'writable' ? 'committed' : 'recorded'));
      else if (fate === 'fail') spec = spec.when(attemptStarted(n.id), attemptFinished(n.id, 'failed'));
      if (fate === 'commit' && n.kind === 'read-only') accepted.add(n.id);
    });
    const id = c.dag.milestones[m]!;
    const all = c.dag.nodes.filter((n) => n.milestone === m).every((n) => accepted.has(n.id));
    if (!all || !c.checkpointFirst || m + 1 >= c.dag.milestones.length) break;
    const cp = deriveCheckpoint(spec.state, id, clock.now(spec.state.position + 1));
    if (!cp.ok) throw new Error(`progressedBuild: ${cp.reason}`);
    spec = spec.when({ type: 'CheckpointWritten', data: { checkpoint: cp.checkpoint, checkpointSha256: cp.sha256, graphRevision: spec.state.graphRevision } });
  }
  return spec;
}
