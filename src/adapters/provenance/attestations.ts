/**
 * Attestations of integrated commits (issue 47, R-62): the facts of each promotion read from the
 * log, the commits it put on the integration ref (git), their statements and DSSE envelopes, and
 * the git notes under refs/notes/longbuild/provenance that carry them in the user's repository.
 */
import type * as crypto from 'node:crypto';
import type { StoredEvent } from '../../events/envelope.js';
import { evolveBuild, initialBuildState, type BuildState } from '../../projections/build-state.js';
import { attemptIdOf } from '../../projections/build-records.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope, type Envelope } from '../../events/dsse.js';
import { PROVENANCE_NOTES_REF, provenanceStatement, statementBytes, type BuildFacts, type CommandRun, type CommitFacts } from '../../commands/provenance.js';
import { git } from '../git/exec.js';

/** One promotion as the log records it, with what the statement of each of its commits needs. */
export interface Promotion {
  readonly jobId: string;
  readonly baseHead: string;
  readonly resultCommit: string;
  readonly candidates: readonly Omit<CommitFacts, 'commit' | 'tree'>[];
}

interface AttemptSeen { attemptId: string; attempt: number; baseHead: string; startedPosition: number; startedOn: string; finishedPosition?: number; finishedOn?: string; inputSha256?: string; model?: string }
interface JobSeen { baseHead: string; verifiedPosition?: number; commands: CommandRun[]; tests?: { passed: number; failed: number; skipped?: number } }

/** The build's facts and every promotion, from the whole log in order. */
export function promotionsOf(events: Iterable<StoredEvent>): { build: BuildFacts | null; promotions: Promotion[] } {
  let state: BuildState = initialBuildState;
  let build: BuildFacts | null = null;
  const attempts = new Map<string, AttemptSeen>();
  const jobs = new Map<string, JobSeen>();
  const promotions: Promotion[] = [];
  for (const e of events) {
    const d = e.data as Record<string, any>;
    switch (e.type) {
      case 'BuildInitialized':
        build = { buildId: d.buildId, requestSha256: d.requestSha256, integrationRef: d.integrationRef, driver: { kind: d.driver.kind, sourceSha256: d.driver.sourceSha256 }, vkey: d.signing?.vkey ?? '' };
        break;
      case 'AttemptStarted':
        attempts.set(d.attemptId, { attemptId: d.attemptId, attempt: d.attempt, baseHead: d.baseHead, startedPosition: e.position, startedOn: e.metadata.recordedAt });
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
        const r = d.receipt as { jobId: string; baseHead: string; resultCommit: string; candidates: { nodeId: string; commit: string }[]; tests?: { passed: number; failed: number; skipped: number } };
        const job = jobs.get(d.jobId);
        const candidates = r.candidates.flatMap((cand) => {
          const node = state.nodes[cand.nodeId];
          const attemptId = node !== undefined ? attemptIdOf(cand.nodeId, node.attempts) : undefined;
          const a = attemptId !== undefined ? attempts.get(attemptId) : undefined;
          if (node === undefined || a === undefined || job === undefined) return [];
          return [{
            nodeId: cand.nodeId, milestoneId: node.milestone ?? null, horizonRevision: state.horizon?.revision ?? 0,
            attempt: {
              attemptId: a.attemptId, attempt: a.attempt, baseHead: a.baseHead, candidate: cand.commit, startedPosition: a.startedPosition, startedOn: a.startedOn,
              finishedPosition: a.finishedPosition ?? a.startedPosition, finishedOn: a.finishedOn ?? a.startedOn,
              ...(a.inputSha256 !== undefined ? { inputSha256: a.inputSha256 } : {}), ...(a.model !== undefined ? { model: a.model } : {}),
            },
            dependencies: node.deps.map((dep) => ({ nodeId: dep, commit: state.nodes[dep]?.commit ?? null })),
            job: {
              jobId: d.jobId, baseHead: r.baseHead, verifiedPosition: job.verifiedPosition ?? e.position, commands: job.commands,
              ...(r.tests !== undefined ? { tests: { passed: r.tests.passed, failed: r.tests.failed, skipped: r.tests.skipped } } : {}),
            },
            promotion: { position: e.position, recordedAt: e.metadata.recordedAt, graphRevision: d.graphRevision },
          }];
        });
        promotions.push({ jobId: d.jobId, baseHead: r.baseHead, resultCommit: r.resultCommit, candidates });
        break;
      }
    }
    state = evolveBuild(state, e);
  }
  return { build, promotions };
}

/**
 * The commits a promotion put on the integration ref, each with its facts: one commit per
 * candidate, in order (the integrator cherry-picks each, or fast-forwards onto the one); a
 * candidate that brought several commits (a fast-forward) attests each of them as its node's.
 */
export async function attestedCommits(repo: string, p: Promotion): Promise<CommitFacts[]> {
  const listed = (await git(repo, ['log', '--reverse', '--format=%H %T', `${p.baseHead}..${p.resultCommit}`], { allowFail: true })).stdout.split('\n').filter((l) => l !== '').map((l) => l.split(' ') as [string, string]);
  const owners = listed.length === p.candidates.length ? p.candidates : listed.map(() => p.candidates.at(-1));
  const out: CommitFacts[] = [];
  listed.forEach(([commit, tree], i) => {
    if (owners[i] !== undefined) out.push({ ...owners[i]!, commit, tree });
  });
  return out;
}

/**
 * Sign and write the notes of every integrated commit that has none (`all`: also rewrite those
 * that differ from what the log says). A promotion whose result commit has its note is taken as
 * noted whole: its notes are written oldest first, the result commit's last.
 */
export async function publishNotes(repo: string, build: BuildFacts, promotions: readonly Promotion[], key: crypto.KeyObject, all = false): Promise<{ commits: number; written: number }> {
  const noted = await notedCommits(repo);
  let commits = 0;
  let written = 0;
  for (const p of promotions) {
    if (!all && noted.has(p.resultCommit)) {
      commits += p.candidates.length;
      continue;
    }
    for (const f of await attestedCommits(repo, p)) {
      commits += 1;
      const text = noteText(attest(build, f, key));
      if (noted.has(f.commit) && (!all || (await readNote(repo, f.commit)) === text)) continue;
      await writeNote(repo, f.commit, text);
      written += 1;
    }
  }
  return { commits, written };
}

/** The envelope of one commit's statement, signed with the build's key (deterministic: Ed25519). */
export function attest(build: BuildFacts, c: CommitFacts, key: crypto.KeyObject): Envelope {
  return signEnvelope(IN_TOTO_PAYLOAD_TYPE, statementBytes(provenanceStatement(build, c)), build.buildId, key);
}

/** The note text of an envelope: its JSON on one line. */
export const noteText = (e: Envelope): string => `${JSON.stringify(e)}\n`;

/** The provenance note on `commit` in `repo`, or null. */
export async function readNote(repo: string, commit: string): Promise<string | null> {
  const r = await git(repo, ['notes', `--ref=${PROVENANCE_NOTES_REF}`, 'show', commit], { allowFail: true });
  return r.code === 0 ? r.stdout : null;
}

/** The commits that have a provenance note in `repo`. */
export async function notedCommits(repo: string): Promise<Set<string>> {
  const r = await git(repo, ['notes', `--ref=${PROVENANCE_NOTES_REF}`, 'list'], { allowFail: true });
  return new Set(r.stdout.split('\n').filter((l) => l !== '').map((l) => l.split(' ')[1]!));
}

/** Write (or rewrite) the note of `commit`. */
export async function writeNote(repo: string, commit: string, text: string): Promise<void> {
  await git(repo, ['notes', `--ref=${PROVENANCE_NOTES_REF}`, 'add', '-f', '-F', '-', commit], { input: text });
}
