import { compareCodePoints } from '../events/canonical.js';
import { canonicalSha256 } from '../events/hash.js';
import { isSafeId } from '../events/ids.js';
import type { Checkpoint } from '../events/catalogue.js';
import { jobOf, type BuildState } from '../projections/build-state.js';
import { graphSha256 } from '../projections/graph.js';
import type { Refusal } from './refusal.js';
import { wholeSummary } from '../projections/summaries.js';

export type CheckpointVerdict = { ok: true; checkpoint: Checkpoint; sha256: string } | Refusal;

/** Accepted contract and foundation versions, sorted (pinned by horizons, recorded by checkpoints). */
export function acceptedVersions(state: Pick<BuildState, 'nodes'> & Partial<Pick<BuildState, 'summaries'>>): { contracts: string[]; foundations: string[] } {
  const contracts: string[] = [];
  const foundations: string[] = [];
  for (const id in state.nodes) {
    const n = state.nodes[id]!;
    if (n.state !== 'accepted') continue;
    const rec = n.summary ? state.summaries?.[id] : undefined;
    const summary = rec ? wholeSummary(rec) : undefined;
    if (summary) contracts.push(...summary.contracts), foundations.push(...summary.foundations); // compacted work
    if (n.contract) contracts.push(n.contract);
    if (n.foundation) foundations.push(n.foundation);
  }
  return { contracts: contracts.sort(compareCodePoints), foundations: foundations.sort(compareCodePoints) };
}

/**
 * Derive a milestone checkpoint from accepted graph truth and integration receipts only.
 * Refused when any node of the milestone is not accepted or a writable one has no receipt.
 */
export function deriveCheckpoint(state: BuildState, milestoneId: string, createdAt: string): CheckpointVerdict {
  const horizon = state.horizon;
  if (!horizon) return { ok: false, rule: 'R-20', reason: 'no sealed horizon' };
  if (!isSafeId(milestoneId)) return { ok: false, rule: 'R-20', reason: `unsafe milestone id '${milestoneId}'` };
  if (state.checkpoints[milestoneId]) return { ok: false, rule: 'R-20', reason: `milestone '${milestoneId}' is already checkpointed (checkpoints are immutable)` };
  // A coarse or unknown milestone has no nodes, so without this it would "checkpoint" vacuously.
  if (!horizon.detailed.some((m) => m.id === milestoneId)) {
    return { ok: false, rule: 'R-20', reason: `milestone '${milestoneId}' is not a detailed milestone of horizon ${horizon.horizonId}` };
  }
  const ids = Object.keys(state.nodes).filter((id) => state.nodes[id]!.milestone === milestoneId).sort(compareCodePoints);
  const accepted: Checkpoint['acceptedNodes'] = [];
  const decisions: Checkpoint['decisions'] = [];
  let attempts = 0;
  const jobs = new Set<string>();
  for (const id of ids) {
    const n = state.nodes[id]!;
    if (!isSafeId(id)) return { ok: false, rule: 'R-20', reason: `unsafe node id '${id}'` };
    if (n.state === 'canceled') continue; // an operator canceled it (NodeCanceled): not part of the milestone's result
    if (n.state !== 'accepted') return { ok: false, rule: 'R-20', reason: `node '${id}' of milestone '${milestoneId}' is ${n.state}, not accepted` };
    if (n.kind === 'writable') {
      const job = n.receiptJobId ? jobOf(state, n.receiptJobId) : undefined;
      if (!job?.receipt || !job.receipt.nodeIds.includes(id)) {
        return { ok: false, rule: 'R-20', reason: `writable node '${id}' has no successful integration receipt` };
      }
      jobs.add(job.jobId);
    }
    attempts += n.attempts;
    accepted.push({ id, kind: n.kind, commit: n.kind === 'writable' ? n.commit : null });
    if (n.decision !== undefined) decisions.push({ nodeId: id, decision: n.decision });
  }
  const versions = acceptedVersions(state);
  const index = horizon.detailed.findIndex((m) => m.id === milestoneId);
  const checkpoint: Checkpoint = {
    milestoneId,
    horizonId: horizon.horizonId,
    horizonRevision: horizon.revision,
    graphRevision: state.graphRevision,
    graphSha256: graphSha256(state.nodes),
    integrationHead: state.integrationHead!,
    acceptedNodes: accepted,
    contracts: versions.contracts,
    foundations: versions.foundations,
    decisions,
    metrics: { attempts, integrations: jobs.size, nodes: ids.length },
    nextHorizon: {
      detailed: horizon.detailed.slice(index + 1).map((m) => m.id),
      coarse: horizon.coarse.map((m) => m.id),
    },
    createdAt,
  };
  return { ok: true, checkpoint, sha256: canonicalSha256(checkpoint) };
}
