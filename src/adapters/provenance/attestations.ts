/**
 * Attestations of integrated commits (issue 47, R-62): the facts of each promotion read from the
 * log, the commits it put on the integration ref (git), their statements and DSSE envelopes, and
 * the git notes under refs/notes/longbuild/provenance that carry them in the user's repository.
 */
import type * as crypto from 'node:crypto';
import type { StoredEvent } from '../../events/envelope.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope, type Envelope } from '../../events/dsse.js';
import { PROVENANCE_NOTES_REF, provenanceStatement, statementBytes, type BuildFacts, type CommandRun, type CommitFacts } from '../../commands/provenance.js';
import { git, LONGBUILD_EMAIL, LONGBUILD_NAME } from '../git/exec.js';

/** One promotion as the log records it, with what the statement of each of its commits needs. */
export interface Promotion {
  readonly jobId: string;
  readonly baseHead: string;
  readonly resultCommit: string;
  readonly candidates: readonly Omit<CommitFacts, 'commit' | 'tree'>[];
}

interface AttemptSeen { attemptId: string; attempt: number; baseHead: string; startedPosition: number; startedOn: string; finishedPosition?: number; finishedOn?: string; inputSha256?: string; model?: string }
interface JobSeen { baseHead: string; verifiedPosition?: number; commands: CommandRun[]; tests?: { passed: number; failed: number; skipped?: number } }

/**
 * The build's facts and every promotion, from the whole log in order: a scan of the events that
 * say what a statement names (no fold of the build's state: `run` does this as it ends).
 */
export function promotionsOf(events: Iterable<StoredEvent>): { build: BuildFacts | null; promotions: Promotion[] } {
  let build: BuildFacts | null = null;
  let horizonRevision = 0;
  const planned = new Map<string, { milestone: string; deps: readonly string[] }>();
  const lastAttempt = new Map<string, string>();
  const accepted = new Map<string, string>();
  const attempts = new Map<string, AttemptSeen>();
  const jobs = new Map<string, JobSeen>();
  const promotions: Promotion[] = [];
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
        promotions.push({ jobId: d.jobId, baseHead: r.baseHead, resultCommit: r.resultCommit, candidates });
        break;
      }
    }
  }
  return { build, promotions };
}

/**
 * The commits a promotion put on the integration ref, each with its facts: one commit per
 * candidate, in order (the integrator cherry-picks each, or fast-forwards onto the one); a
 * candidate that brought several commits (a fast-forward) attests each of them as its node's.
 */
export async function attestedCommits(repo: string, p: Promotion, history?: ReadonlyMap<string, { tree: string; parent: string | null }>): Promise<CommitFacts[]> {
  const listed = chainOf(p, history) ?? (await git(repo, ['log', '--reverse', '--format=%H %T', `${p.baseHead}..${p.resultCommit}`], { allowFail: true })).stdout.split('\n').filter((l) => l !== '').map((l) => l.split(' ') as [string, string]);
  const owners = listed.length === p.candidates.length ? p.candidates : listed.map(() => p.candidates.at(-1));
  const out: CommitFacts[] = [];
  listed.forEach(([commit, tree], i) => {
    if (owners[i] !== undefined) out.push({ ...owners[i]!, commit, tree });
  });
  return out;
}

/**
 * The commits of the promotions' range with their trees and first parents, from one `git log`
 * (the integration ref is linear: one promotion's commits follow the one before it).
 */
export async function historyOf(repo: string, promotions: readonly Promotion[]): Promise<Map<string, { tree: string; parent: string | null }>> {
  const map = new Map<string, { tree: string; parent: string | null }>();
  if (promotions.length === 0) return map;
  const r = await git(repo, ['log', '--first-parent', '--format=%H %T %P', promotions.at(-1)!.resultCommit, `^${promotions[0]!.baseHead}`], { allowFail: true });
  for (const line of r.stdout.split('\n')) {
    const [commit, tree, parent] = line.split(' ');
    if (commit !== undefined && tree !== undefined && commit !== '') map.set(commit, { tree, parent: parent ?? null });
  }
  return map;
}

/** `base..result` of a promotion, oldest first, walked in `history`; null when it leaves it. */
function chainOf(p: Promotion, history: ReadonlyMap<string, { tree: string; parent: string | null }> | undefined): [string, string][] | null {
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
 * Sign and write the notes of every integrated commit that has none (`all`: also rewrite those
 * that differ from what the log says). A promotion whose result commit has its note is taken as
 * noted whole: the notes are written in one notes commit, so either all of them are or none.
 */
export async function publishNotes(repo: string, build: BuildFacts, promotions: readonly Promotion[], key: crypto.KeyObject, all = false): Promise<{ commits: number; written: number }> {
  const noted = await notedCommits(repo);
  const wanted: { commit: string; text: string }[] = [];
  let commits = 0;
  const todo = promotions.filter((p) => {
    if (!all && noted.has(p.resultCommit)) {
      commits += p.candidates.length;
      return false;
    }
    return true;
  });
  const history = await historyOf(repo, todo);
  for (const p of todo) {
    for (const f of await attestedCommits(repo, p, history)) {
      commits += 1;
      wanted.push({ commit: f.commit, text: noteText(attest(build, f, key)) });
    }
  }
  const present = all ? await readBlobs(repo, wanted.flatMap((w) => (noted.has(w.commit) ? [noted.get(w.commit)!] : []))) : new Map<string, string>();
  const toWrite = wanted.filter((w) => !noted.has(w.commit) || (all && present.get(noted.get(w.commit)!) !== w.text));
  await writeNotes(repo, toWrite);
  return { commits, written: toWrite.length };
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

/** The commits that have a provenance note in `repo`, each with its note's blob. */
export async function notedCommits(repo: string): Promise<Map<string, string>> {
  const r = await git(repo, ['notes', `--ref=${PROVENANCE_NOTES_REF}`, 'list'], { allowFail: true });
  return new Map(r.stdout.split('\n').filter((l) => l !== '').map((l) => { const [blob, commit] = l.split(' ') as [string, string]; return [commit, blob]; }));
}

/** The contents of text blobs, read by one `git cat-file --batch`. */
async function readBlobs(repo: string, blobs: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (blobs.length === 0) return out;
  const r = await git(repo, ['cat-file', '--batch'], { input: `${blobs.join('\n')}\n` });
  const bytes = Buffer.from(r.stdout, 'utf8');
  let at = 0;
  for (const blob of blobs) {
    const eol = bytes.indexOf(10, at);
    const [sha, , size] = bytes.subarray(at, eol).toString('utf8').split(' ');
    const n = Number(size);
    out.set(sha ?? blob, bytes.subarray(eol + 1, eol + 1 + n).toString('utf8'));
    at = eol + 1 + n + 1;
  }
  return out;
}

/**
 * Write (or rewrite) the notes of these commits as one commit on the notes ref, through one
 * `git fast-import` (its notemodify commands; git keeps the notes tree's fan-out): one process
 * however many commits, and the ref moves once.
 */
export async function writeNotes(repo: string, notes: readonly { commit: string; text: string }[]): Promise<void> {
  if (notes.length === 0) return;
  const parent = (await git(repo, ['rev-parse', '-q', '--verify', `${PROVENANCE_NOTES_REF}^{commit}`], { allowFail: true })).stdout.trim();
  const message = `longbuild: provenance of ${notes.length} commit${notes.length === 1 ? '' : 's'}\n`;
  const data = (text: string): string => `data ${Buffer.byteLength(text, 'utf8')}\n${text}\n`;
  const stream = [
    `commit ${PROVENANCE_NOTES_REF}\n`,
    `committer ${LONGBUILD_NAME} <${LONGBUILD_EMAIL}> ${Math.floor(Date.now() / 1000)} +0000\n`,
    data(message),
    ...(parent !== '' ? [`from ${parent}\n`] : []),
    ...notes.flatMap((n) => [`N inline ${n.commit}\n`, data(n.text)]),
    'done\n',
  ].join('');
  await git(repo, ['fast-import', '--quiet', '--done'], { input: stream });
}
