/**
 * Provenance of integrated commits (issue 47, R-62), pure: an in-toto Statement v1 with a SLSA
 * provenance v1 predicate for each commit a promotion put on the integration ref — who produced it
 * (the node, its attempt, the packet's digest, the driver and model), on what (the base head and
 * the dependencies' commits), and what verified it (the commands, exit codes, evidence digests,
 * tests). Everything in it is read from the log (and the commit's tree from git), so anyone holding
 * the log derives the same statement, byte for byte (canonical JSON), and can check a note's
 * envelope against it.
 */
import { canonicalJson } from '../events/canonical.js';

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
