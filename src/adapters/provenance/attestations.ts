/**
 * Attestations of integrated commits: the facts of each promotion read from the
 * log, the commits it put on the integration ref (git), their statements and DSSE envelopes, and
 * the git notes under refs/notes/longbuild/provenance that carry them in the user's repository.
 */
import type * as crypto from 'node:crypto';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope, type Envelope } from '../../events/dsse.js';
import { sha256Hex } from '../../events/hash.js';
import {
  PROVENANCE_NOTES_REF, chainOf, factsOfChain, provenanceStatement, statementBytes, type AttestationRecord, type BuildFacts, type CommitFacts, type History, type Promotion,
} from '../../commands/provenance-statement.js';
import { git, LONGBUILD_EMAIL, LONGBUILD_NAME } from '../git/exec.js';

/** The commits a promotion put on the integration ref, each with its facts (`history` first, else one `git log`). */
export async function attestedCommits(repo: string, p: Promotion, history?: History): Promise<CommitFacts[]> {
  const listed = (history !== undefined ? chainOf(p, history) : null)
    ?? (await git(repo, ['log', '--reverse', '--format=%H %T', `${p.baseHead}..${p.resultCommit}`], { allowFail: true })).stdout.split('\n').filter((l) => l !== '').map((l) => l.split(' ') as [string, string]);
  return factsOfChain(p, listed);
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

/** One commit's attestation as a ProvenanceRecorded names it. */
export type NewRecord = Omit<AttestationRecord, 'position'>;

export interface Published {
  /** Integrated commits looked at. */
  readonly commits: number;
  /** Notes written. */
  readonly written: number;
  /** Attestations recorded in the log now. */
  readonly recorded: number;
  /** Commits whose derived attestation is not the one the log recorded: no note written (a different version derived it, or the log was edited). */
  readonly mismatched: readonly string[];
}

/**
 * Sign the attestation of every integrated commit that has no note or no record (`all`: every
 * commit, rewriting notes that differ), record the digests of those the log does not name yet
 * (`record`: one ProvenanceRecorded, appended before any note is written, so a note always has
 * its record), then write the missing notes in one notes commit. A promotion whose result commit
 * has both is taken as done whole: its notes were written in one commit with its record's.
 */
export async function publishNotes(
  repo: string, build: BuildFacts, read: { readonly promotions: readonly Promotion[]; readonly recorded: ReadonlyMap<string, AttestationRecord> },
  key: crypto.KeyObject, record: (attestations: NewRecord[]) => Promise<void>, all = false,
): Promise<Published> {
  const noted = await notedCommits(repo);
  let commits = 0;
  const todo = read.promotions.filter((p) => {
    if (!all && noted.has(p.resultCommit) && read.recorded.has(p.resultCommit)) {
      commits += p.candidates.length;
      return false;
    }
    return true;
  });
  const history = await historyOf(repo, todo);
  const wanted: { commit: string; text: string }[] = [];
  const fresh: NewRecord[] = [];
  const mismatched: string[] = [];
  for (const p of todo) {
    for (const f of await attestedCommits(repo, p, history)) {
      commits += 1;
      const text = noteText(attest(build, f, key));
      const digest = sha256Hex(text);
      const logged = read.recorded.get(f.commit);
      if (logged === undefined) fresh.push({ commit: f.commit, nodeId: f.nodeId, promotion: p.position, envelopeSha256: digest });
      else if (logged.envelopeSha256 !== digest) {
        mismatched.push(f.commit);
        continue;
      }
      wanted.push({ commit: f.commit, text });
    }
  }
  if (fresh.length > 0) await record(fresh);
  const present = all ? await readBlobs(repo, wanted.flatMap((w) => (noted.has(w.commit) ? [noted.get(w.commit)!] : []))) : new Map<string, string>();
  const toWrite = wanted.filter((w) => !noted.has(w.commit) || (all && present.get(noted.get(w.commit)!) !== w.text));
  await writeNotes(repo, toWrite);
  return { commits, written: toWrite.length, recorded: fresh.length, mismatched };
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

/** The provenance notes of these commits that `repo` has, by commit (one `git notes list`, one `git cat-file --batch`). */
export async function readNotes(repo: string, commits: readonly string[]): Promise<Map<string, string>> {
  const noted = await notedCommits(repo);
  const blobs = commits.flatMap((c) => (noted.has(c) ? [[c, noted.get(c)!] as const] : []));
  const texts = await readBlobs(repo, blobs.map(([, b]) => b));
  return new Map(blobs.map(([c, b]) => [c, texts.get(b)!]));
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
