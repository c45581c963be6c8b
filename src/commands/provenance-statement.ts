/**
 * Provenance of integrated commits (R-62), pure: an in-toto Statement v1 with a SLSA
 * provenance v1 predicate for each commit a promotion put on the integration ref — who produced it
 * (the node, its attempt, the packet's digest, the driver and model), on what (the base head and
 * the dependencies' commits), and what verified it (the commands, exit codes, evidence digests,
 * tests). Everything in it is read from the log (and the commit's tree from git), so anyone holding
 * the log derives the same statement, byte for byte (canonical JSON), and can check a note's
 * envelope against it.
 */
import { canonicalJson } from '../events/canonical.js';
import type { StoredEvent } from '../events/envelope.js';

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1';
export const SLSA_PROVENANCE_V1 = 'https://slsa.dev/provenance/v1';
/** longbuild's build type (docs/provenance.md): one promotion of one node's attempt. */
export const BUILD_TYPE = 'https://github.com/longbuild/longbuild/blob/main/docs/provenance.md#promotion-v1';
/** The git notes ref the attestations live under (one note per commit). */
export const PROVENANCE_NOTES_REF = 'refs/notes/longbuild/provenance';

/** What the log says of the build (BuildInitialized). */
export interface BuildFacts {
  readonly buildId: string;
  readonly requestSha256: string;
  readonly integrationRef: string;
  readonly driver: { readonly kind: string; readonly sourceSha256: string };
  /** The verifier key the build signs with. */
  readonly vkey: string;
}

export interface CommandRun {
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly stdoutSha256: string;
  readonly stderrSha256: string;
  readonly cacheHit: boolean;
}

/** What the log says of one integrated commit: its node, attempt, job and promotion. */
export interface CommitFacts {
  readonly commit: string;
  readonly tree: string;
  readonly nodeId: string;
  readonly milestoneId: string | null;
  readonly horizonRevision: number;
  readonly attempt: {
    readonly attemptId: string;
    readonly attempt: number;
    /** The integration head the attempt started from. */
    readonly baseHead: string;
    /** The candidate commit the worker made (before it was applied onto the head). */
    readonly candidate: string;
    readonly inputSha256?: string;
    readonly model?: string;
    readonly startedPosition: number;
    readonly finishedPosition: number;
    readonly startedOn: string;
    readonly finishedOn: string;
  };
  /** The node's dependencies and the commits they were accepted with (null: read-only, no commit). */
  readonly dependencies: readonly { readonly nodeId: string; readonly commit: string | null }[];
  readonly job: {
    readonly jobId: string;
    /** The integration head the job applied its candidates onto. */
    readonly baseHead: string;
    readonly verifiedPosition: number;
    readonly commands: readonly CommandRun[];
    readonly tests?: { readonly passed: number; readonly failed: number; readonly skipped?: number };
  };
  readonly promotion: { readonly position: number; readonly recordedAt: string; readonly graphRevision: number };
}

/** The statement of one integrated commit (a plain JSON value; `statementBytes` is what is signed). */
export function provenanceStatement(build: BuildFacts, c: CommitFacts): Record<string, unknown> {
  const keyId = build.vkey.split('+')[1] ?? '';
  return {
    _type: STATEMENT_TYPE,
    subject: [{ name: c.nodeId, digest: { gitCommit: c.commit, gitTree: c.tree } }],
    predicateType: SLSA_PROVENANCE_V1,
    predicate: {
      buildDefinition: {
        buildType: BUILD_TYPE,
        externalParameters: {
          requestSha256: build.requestSha256,
          nodeId: c.nodeId,
          ...(c.milestoneId !== null ? { milestoneId: c.milestoneId } : {}),
          horizonRevision: c.horizonRevision,
        },
        internalParameters: {
          attemptId: c.attempt.attemptId,
          attempt: c.attempt.attempt,
          ...(c.attempt.inputSha256 !== undefined ? { packetSha256: c.attempt.inputSha256 } : {}),
          driver: { kind: build.driver.kind, sourceSha256: build.driver.sourceSha256, ...(c.attempt.model !== undefined ? { model: c.attempt.model } : {}) },
          jobId: c.job.jobId,
          log: { attemptStarted: c.attempt.startedPosition, attemptFinished: c.attempt.finishedPosition, verified: c.job.verifiedPosition, promoted: c.promotion.position },
        },
        resolvedDependencies: [
          { name: 'base', uri: `git+${build.integrationRef}`, digest: { gitCommit: c.job.baseHead } },
          { name: 'attempt-base', digest: { gitCommit: c.attempt.baseHead } },
          { name: 'candidate', digest: { gitCommit: c.attempt.candidate } },
          ...c.dependencies.filter((d) => d.commit !== null).map((d) => ({ name: `node:${d.nodeId}`, digest: { gitCommit: d.commit! } })),
        ],
      },
      runDetails: {
        builder: { id: `urn:longbuild:build:${build.buildId}`, version: { verifierKeyId: keyId } },
        metadata: { invocationId: `${build.buildId}:${c.attempt.attemptId}`, startedOn: c.attempt.startedOn, finishedOn: c.promotion.recordedAt },
        byproducts: [
          ...c.job.commands.map((r, i) => ({
            name: `verify[${i}]`, digest: { sha256: r.stdoutSha256 },
            annotations: { argv: [...r.argv], exitCode: r.exitCode, stderrSha256: r.stderrSha256, cacheHit: r.cacheHit },
          })),
          ...(c.job.tests !== undefined ? [{ name: 'tests', annotations: { ...c.job.tests } }] : []),
        ],
      },
    },
  };
}

/** The statement's bytes as signed: canonical JSON, so every holder of the log derives the same. */
export function statementBytes(statement: Record<string, unknown>): Buffer {
  return Buffer.from(canonicalJson(statement), 'utf8');
}

/** What a ProvenanceRecorded says of one commit, with that event's position. */
export interface AttestationRecord {
  readonly commit: string;
  readonly nodeId: string;
  readonly promotion: number;
  readonly envelopeSha256: string;
  readonly position: number;
}

/** A commit's history as `git log --format='%H %T %P'` gives it: its tree and first parent. */
export type History = ReadonlyMap<string, { readonly tree: string; readonly parent: string | null }>;

/** One promotion as the log records it, with what the statement of each of its commits needs. */
export interface Promotion {
  readonly jobId: string;
  readonly baseHead: string;
  readonly resultCommit: string;
  /** The IntegrationPromoted's log position. */
  readonly position: number;
  readonly candidates: readonly Omit<CommitFacts, 'commit' | 'tree'>[];
}

interface AttemptSeen { attemptId: string; attempt: number; baseHead: string; startedPosition: number; startedOn: string; finishedPosition?: number; finishedOn?: string; inputSha256?: string; model?: string }
interface JobSeen { baseHead: string; verifiedPosition?: number; commands: CommandRun[]; tests?: { passed: number; failed: number; skipped?: number } }

/**
 * The build's facts and every promotion, from the whole log in order: a scan of the events that
 * say what a statement names (no fold of the build's state: `run` does this as it ends).
 */
export function promotionsOf(events: Iterable<StoredEvent>): { build: BuildFacts | null; promotions: Promotion[]; recorded: Map<string, AttestationRecord> } {
  let build: BuildFacts | null = null;
  let horizonRevision = 0;
  const planned = new Map<string, { milestone: string; deps: readonly string[] }>();
  const lastAttempt = new Map<string, string>();
  const accepted = new Map<string, string>();
  const attempts = new Map<string, AttemptSeen>();
  const jobs = new Map<string, JobSeen>();
  const promotions: Promotion[] = [];
  const recorded = new Map<string, AttestationRecord>();
  for (const e of events) {
    const d = e.data as Record<string, any>;
    switch (e.type) {
      case 'BuildInitialized':
        build = { buildId: d.buildId, requestSha256: d.requestSha256, integrationRef: d.integrationRef, driver: { kind: d.driver.kind, sourceSha256: d.driver.sourceSha256 }, vkey: d.signing?.vkey ?? '' };
        break;
      case 'HorizonSealed':
      case 'HorizonRenewed':
        horizonRevision = Math.max(horizonRevision, d.revision as number);
        for (const n of d.nodes as { id: string; milestone: string; deps: string[] }[]) planned.set(n.id, { milestone: n.milestone, deps: n.deps });
        break;
      case 'AttemptStarted':
        attempts.set(d.attemptId, { attemptId: d.attemptId, attempt: d.attempt, baseHead: d.baseHead, startedPosition: e.position, startedOn: e.metadata.recordedAt });
        lastAttempt.set(d.nodeId, d.attemptId);
        break;
      case 'AttemptFinished': {
        const a = attempts.get(d.attemptId);
        if (a !== undefined) Object.assign(a, { finishedPosition: e.position, finishedOn: e.metadata.recordedAt, ...(d.inputSha256 !== undefined ? { inputSha256: d.inputSha256 } : {}), ...(d.usage?.model !== undefined ? { model: d.usage.model } : {}) });
        break;
      }
      case 'IntegrationStarted':
        jobs.set(d.jobId, { baseHead: d.baseHead, commands: [] });
        break;
      case 'VerificationFinished': {
        const j = jobs.get(d.jobId);
        if (j !== undefined) {
          j.verifiedPosition = e.position;
          j.commands = (d.evidence as CommandRun[]).map((r) => ({ argv: r.argv, exitCode: r.exitCode, stdoutSha256: r.stdoutSha256, stderrSha256: r.stderrSha256, cacheHit: r.cacheHit }));
        }
        break;
      }
      case 'IntegrationPromoted': {
        const r = d.receipt as { baseHead: string; resultCommit: string; candidates: { nodeId: string; commit: string }[]; tests?: { passed: number; failed: number; skipped: number } };
        const job = jobs.get(d.jobId);
        const candidates = r.candidates.flatMap((cand) => {
          const node = planned.get(cand.nodeId);
          const attemptId = lastAttempt.get(cand.nodeId);
          const a = attemptId !== undefined ? attempts.get(attemptId) : undefined;
          if (node === undefined || a === undefined || job === undefined) return [];
          return [{
            nodeId: cand.nodeId, milestoneId: node.milestone, horizonRevision,
            attempt: {
              attemptId: a.attemptId, attempt: a.attempt, baseHead: a.baseHead, candidate: cand.commit, startedPosition: a.startedPosition, startedOn: a.startedOn,
              finishedPosition: a.finishedPosition ?? a.startedPosition, finishedOn: a.finishedOn ?? a.startedOn,
              ...(a.inputSha256 !== undefined ? { inputSha256: a.inputSha256 } : {}), ...(a.model !== undefined ? { model: a.model } : {}),
            },
            dependencies: node.deps.map((dep) => ({ nodeId: dep, commit: accepted.get(dep) ?? null })),
            job: {
              jobId: d.jobId as string, baseHead: r.baseHead, verifiedPosition: job.verifiedPosition ?? e.position, commands: job.commands,
              ...(r.tests !== undefined ? { tests: { passed: r.tests.passed, failed: r.tests.failed, skipped: r.tests.skipped } } : {}),
            },
            promotion: { position: e.position, recordedAt: e.metadata.recordedAt, graphRevision: d.graphRevision as number },
          }];
        });
        for (const cand of r.candidates) accepted.set(cand.nodeId, cand.commit);
        promotions.push({ jobId: d.jobId, baseHead: r.baseHead, resultCommit: r.resultCommit, position: e.position, candidates });
        break;
      }
      case 'ProvenanceRecorded':
        for (const a of d.attestations as { commit: string; nodeId: string; promotion: number; envelopeSha256: string }[]) {
          if (!recorded.has(a.commit)) recorded.set(a.commit, { ...a, position: e.position });
        }
        break;
    }
  }
  return { build, promotions, recorded };
}

/** `base..result` of a promotion, oldest first, walked in `history`; null when it leaves it. */
export function chainOf(p: Promotion, history: ReadonlyMap<string, { tree: string; parent: string | null }> | undefined): [string, string][] | null {
  if (history === undefined) return null;
  const out: [string, string][] = [];
  for (let c: string | null = p.resultCommit; c !== p.baseHead; ) {
    const h: { tree: string; parent: string | null } | undefined = c === null ? undefined : history.get(c);
    if (h === undefined || out.length > 10_000) return null;
    out.push([c!, h.tree]);
    c = h.parent;
  }
  return out.reverse();
}


/**
 * The commits a promotion put on the integration ref, each with its facts, from its `base..result`
 * chain: one commit per candidate, in order (the integrator cherry-picks each, or fast-forwards
 * onto the one); a candidate that brought several commits (a fast-forward) attests each of them as
 * its node's. null when the chain leaves `history`.
 */
export function commitsOfPromotion(p: Promotion, history: History): CommitFacts[] | null {
  const listed = chainOf(p, history);
  return listed === null ? null : factsOfChain(p, listed);
}

/** The facts of a promotion's commits, listed oldest first with their trees. */
export function factsOfChain(p: Promotion, listed: readonly (readonly [string, string])[]): CommitFacts[] {
  const owners = listed.length === p.candidates.length ? p.candidates : listed.map(() => p.candidates.at(-1));
  const out: CommitFacts[] = [];
  listed.forEach(([commit, tree], i) => {
    if (owners[i] !== undefined) out.push({ ...owners[i]!, commit, tree });
  });
  return out;
}
