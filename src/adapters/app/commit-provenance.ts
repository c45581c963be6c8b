import { NotFoundError, UsageError, ValidationError } from '../../events/errors.js';
import { EnvelopeError, parseEnvelope, verifyEnvelope, type Envelope } from '../../events/dsse.js';
import { parseVerifierKey } from '../../events/signed-note.js';
import { canonicalJson } from '../../events/canonical.js';
import { hashedPart } from '../../events/envelope.js';
import { sha256Hex } from '../../events/hash.js';
import { inclusionProof } from '../../events/merkle.js';
import { checkProofFile, formatInclusionProof } from '../../events/proof-file.js';
import { NoteError } from '../../events/signed-note.js';
import { Notary, checkpointFiles, readCheckpoint } from '../transparency/notary.js';
import { checkedProof } from './proofs.js';
import { PROVENANCE_NOTES_REF, promotionsOf, provenanceStatement, statementBytes, type AttestationRecord, type BuildFacts, type CommitFacts, type Promotion } from '../../commands/provenance-statement.js';
import { readEventsFrom } from '../log/paging.js';
import { git } from '../git/exec.js';
import { buildKeyFrom, loadSigningKey, signingKeyPath, verifierKeyArg } from '../transparency/keys.js';
import { attestedCommits, historyOf, publishNotes, readNote, type NewRecord, type Published } from '../provenance/attestations.js';
import type { BuildSession } from '../session.js';
import { withBuild } from './with-build.js';
import { leaseOptions, withControl } from './control.js';
import { pathsOf } from './context.js';
import { openBuildLog } from './build-log.js';
import type { AppContext } from './context.js';
import type { EventLog } from '../../events/event-log.js';

export type ProvenanceOutput =
  | { readonly action: 'show'; readonly commit: string; readonly statement: Record<string, unknown>; readonly envelope: Envelope | null; readonly record: Recorded | null; readonly inclusion: Inclusion | null; readonly summary: Summary }
  | { readonly action: 'verify'; readonly commit: string; readonly ok: true; readonly keyId: string; readonly record: Recorded; readonly inclusion: { readonly position: number; readonly checkpointSize: number }; readonly summary: Summary }
  | { readonly action: 'publish'; readonly commits: number; readonly written: number; readonly recorded: number; readonly mismatched: readonly string[]; readonly ref: string };

/** Where the log records the note's digest (a ProvenanceRecorded). */
export interface Recorded {
  readonly position: number;
  readonly envelopeSha256: string;
  readonly promotion: number;
}

/** The record's inclusion in the log's Merkle tree: a c2sp.org/tlog-proof against the first signed checkpoint that covers it. */
export interface Inclusion {
  readonly position: number;
  readonly checkpointSize: number;
  readonly proof: string;
}

/** What a statement says, readably. */
export interface Summary {
  readonly nodeId: string;
  readonly milestoneId: string | null;
  readonly attemptId: string;
  readonly model: string | null;
  readonly driver: string;
  readonly jobId: string;
  readonly verification: readonly { readonly argv: readonly string[]; readonly exitCode: number | null }[];
  readonly tests: { readonly passed: number; readonly failed: number } | null;
  readonly positions: { readonly attemptStarted: number; readonly promoted: number };
}

/**
 * The provenance of an integrated commit: its statement, derived from the log, the
 * envelope its note carries, where the log records the note's digest and that record's inclusion proof.
 */
export async function showProvenance(ctx: AppContext, rev: string): Promise<ProvenanceOutput> {
  return withLog(ctx, (log) => showWith(ctx, rev, log));
}

/** Run `fn` with the build's log, opened once (no build here: said first) and closed after. */
async function withLog<T>(ctx: AppContext, fn: (log: EventLog) => Promise<T>): Promise<T> {
  const log = await openBuildLog(pathsOf(ctx));
  try {
    return await fn(log);
  } finally {
    await log.close();
  }
}

async function showWith(ctx: AppContext, rev: string, log: EventLog): Promise<ProvenanceOutput> {
  const { build, facts, record } = await factsOf(ctx, rev, log);
  const note = await readNote(ctx.repo, facts.commit);
  let envelope: Envelope | null = null;
  if (note !== null) {
    try {
      envelope = parseEnvelope(note);
    } catch {
      envelope = null;
    }
  }
  const inclusion = record !== null ? await inclusionOf(ctx, build, record, log) : null;
  return { action: 'show', commit: facts.commit, statement: provenanceStatement(build, facts), envelope, record: record !== null ? recordedOf(record) : null, inclusion, summary: summaryOf(build, facts) };
}

/** The build's facts and the facts of `rev`'s commit, which a promotion must have put on the integration ref. */
async function factsOf(ctx: AppContext, rev: string, log: EventLog): Promise<{ build: BuildFacts; facts: CommitFacts; record: AttestationRecord | null }> {
  const { build, all, recorded } = await everyAttested(ctx, log);
  const resolved = await git(ctx.repo, ['rev-parse', '-q', '--verify', `${rev}^{commit}`], { allowFail: true });
  if (resolved.code !== 0) throw new NotFoundError(`provenance: '${rev}' is not a commit of ${ctx.repo}`);
  const commit = resolved.stdout.trim();
  const facts = all.find((f) => f.commit === commit);
  if (facts === undefined) throw new NotFoundError(`provenance: ${commit.slice(0, 12)} was not put on the integration ref by a promotion of this build (see \`git log ${build.integrationRef}\`)`);
  return { build, facts, record: recorded.get(commit) ?? null };
}

/** The build's facts and its promotions, from the log. */
export async function readPromotions(ctx: AppContext, open?: EventLog): Promise<{ build: BuildFacts; promotions: Promotion[]; recorded: Map<string, AttestationRecord> }> {
  const log = open ?? await openBuildLog(pathsOf(ctx));
  let read;
  try {
    read = promotionsOf(await readEventsFrom(log));
  } finally {
    if (open === undefined) await log.close();
  }
  if (read.build === null || read.build.vkey === '') throw new ValidationError('provenance: the log names no signing key (a build from before signed checkpoints): its commits cannot be attested');
  return { build: read.build, promotions: read.promotions, recorded: read.recorded };
}

async function everyAttested(ctx: AppContext, log: EventLog): Promise<{ build: BuildFacts; all: CommitFacts[]; recorded: Map<string, AttestationRecord> }> {
  const { build, promotions, recorded } = await readPromotions(ctx, log);
  const all: CommitFacts[] = [];
  const history = await historyOf(ctx.repo, promotions);
  for (const p of promotions) all.push(...await attestedCommits(ctx.repo, p, history));
  return { build, all, recorded };
}

/**
 * Check an integrated commit's note: the signature (the build's key, or `keyArg`), its statement
 * against the log, the note against the digest the log recorded, and that record's inclusion proof.
 */
export async function verifyProvenance(ctx: AppContext, rev: string, keyArg?: string): Promise<ProvenanceOutput> {
  return withLog(ctx, (log) => verifyWith(ctx, rev, keyArg, log));
}

async function verifyWith(ctx: AppContext, rev: string, keyArg: string | undefined, log: EventLog): Promise<ProvenanceOutput> {
  const { build, facts, record } = await factsOf(ctx, rev, log);
  let key;
  try {
    key = keyArg !== undefined ? verifierKeyArg(keyArg, ctx.cwd) : parseVerifierKey(build.vkey);
  } catch (err) {
    throw new UsageError(`provenance verify: --key is not a verifier key: ${(err as Error).message}`);
  }
  const short = facts.commit.slice(0, 12);
  const note = await readNote(ctx.repo, facts.commit);
  if (note === null) throw new ValidationError(`provenance verify: ${short} has no provenance note (${PROVENANCE_NOTES_REF}); \`longbuild provenance publish\` writes them`, 'R-62');
  let payload: Buffer;
  try {
    payload = verifyEnvelope(parseEnvelope(note), key);
  } catch (err) {
    if (err instanceof EnvelopeError) throw new ValidationError(`provenance verify: ${short}'s note: ${err.message}`, 'R-62');
    throw err;
  }
  const expected = statementBytes(provenanceStatement(build, facts));
  if (!payload.equals(expected)) {
    throw new ValidationError(`provenance verify: ${short}'s note is signed but its statement is not what the log says of this commit (${firstDifference(payload, expected)})`, 'R-62');
  }
  if (record === null) throw new ValidationError(`provenance verify: the log records no attestation of ${short} (a run ended before recording it); \`longbuild provenance publish\` records and writes them`, 'R-62');
  if (sha256Hex(note) !== record.envelopeSha256) {
    throw new ValidationError(`provenance verify: ${short}'s note is not the attestation the log recorded at position ${record.position} (its SHA-256 differs: the note was rewritten); \`longbuild provenance publish\` writes the recorded one again`, 'R-62');
  }
  // The record is in the log the key signed: its inclusion proof, checked as an auditor would.
  const inclusion = await inclusionOf(ctx, build, record, log);
  if (inclusion === null) throw new ValidationError(`provenance verify: the record of ${short} (position ${record.position}) is covered by no signed checkpoint yet; \`longbuild run\` signs it`, 'R-62');
  let checked;
  try {
    checked = checkProofFile(inclusion.proof, key);
  } catch (err) {
    if (err instanceof NoteError) throw new ValidationError(`provenance verify: the record of ${short} is not proved in the signed log: ${err.message}`, 'R-62');
    throw err;
  }
  if (checked.kind !== 'inclusion' || checked.position !== record.position || checked.event.type !== 'ProvenanceRecorded') {
    throw new ValidationError(`provenance verify: the inclusion proof of ${short}'s record names another event`, 'R-62');
  }
  return { action: 'verify', commit: facts.commit, ok: true, keyId: key.keyId, record: recordedOf(record), inclusion: { position: checked.position, checkpointSize: checked.size }, summary: summaryOf(build, facts) };
}

const recordedOf = (r: AttestationRecord): Recorded => ({ position: r.position, envelopeSha256: r.envelopeSha256, promotion: r.promotion });

/** The inclusion proof of a ProvenanceRecorded against the first signed checkpoint that covers it; null when none does yet. */
async function inclusionOf(ctx: AppContext, build: BuildFacts, record: AttestationRecord, log: EventLog): Promise<Inclusion | null> {
  const paths = pathsOf(ctx);
  const cp = checkpointFiles(paths).find((c) => c.size >= record.position);
  if (cp === undefined) return null;
  const key = parseVerifierKey(build.vkey);
  const signed = readCheckpoint(cp.note(), key, build.buildId, cp.file);
  const [e] = await log.readAll({ from: record.position, limit: 1 });
  const leaf = canonicalJson(hashedPart(e!));
  const notary = Notary.open(paths, log, build.buildId, key, null);
  try {
    const proof = await checkedProof(notary, signed.size, (tree) => formatInclusionProof(record.position - 1, leaf, inclusionProof(tree, record.position - 1, signed.size), signed.note), key, ctx.stderr, paths.tree);
    return { position: record.position, checkpointSize: signed.size, proof };
  } finally {
    notary.close();
  }
}

/** Where a signed statement and the log's differ: the first top-level path whose value differs. */
function firstDifference(got: Buffer, want: Buffer): string {
  let a: unknown;
  try {
    a = JSON.parse(got.toString('utf8'));
  } catch {
    return 'its payload is not JSON';
  }
  const b = JSON.parse(want.toString('utf8')) as Record<string, unknown>;
  const walk = (x: unknown, y: unknown, path: string): string | null => {
    if (canonicalJson(x) === canonicalJson(y)) return null;
    if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null || Array.isArray(x) !== Array.isArray(y)) return path;
    for (const k of new Set([...Object.keys(x), ...Object.keys(y)])) {
      const d = walk((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], `${path}.${k}`);
      if (d !== null) return d;
    }
    return path;
  };
  return `at ${walk(a, b, '$') ?? '$'}`;
}

/** Record and write every missing or differing note, under the controller lease (`provenance publish`). */
export async function publishAll(ctx: AppContext): Promise<ProvenanceOutput> {
  // Recording appends to the log: under the controller lease, as an operator's command would.
  const done = await withControl(ctx, (lease) => withBuild(ctx, (s) => publishProvenance(ctx, s, true), leaseOptions(lease)));
  return { action: 'publish', ...done, ref: PROVENANCE_NOTES_REF };
}

/**
 * Sign the attestations the log does not record yet and record them (one ProvenanceRecorded),
 * then write the notes the repository lacks (`all`: also those that differ from the log), with
 * the build's key (`--signing-key`, else the default key file). `run` calls it as it ends.
 */
export async function publishProvenance(ctx: AppContext, s: BuildSession, all: boolean): Promise<Published> {
  const read = await readPromotions(ctx, s.log);
  if (read.promotions.length === 0) return { commits: 0, written: 0, recorded: 0, mismatched: [] };
  const file = loadSigningKey(signingKeyPath(ctx.signingKey, ctx.env, ctx.cwd));
  const key = buildKeyFrom(file.privateKey, read.build.buildId, read.build.vkey);
  if (key === null) throw new ValidationError(`provenance publish: the signing key ${file.path} is not this build's key (the log records ${read.build.vkey}); pass it with --signing-key FILE`, 'R-62');
  const record = async (attestations: NewRecord[]): Promise<void> => {
    await s.operate(() => ({ ok: true, event: { type: 'ProvenanceRecorded', data: { attestations } } }), 'provenance');
  };
  const done = await publishNotes(ctx.repo, read.build, read, key, record, all);
  if (done.mismatched.length > 0) {
    ctx.stderr(`longbuild: ${done.mismatched.length} integrated commit${done.mismatched.length === 1 ? '' : 's'} (${done.mismatched.slice(0, 3).map((c) => c.slice(0, 12)).join(', ')}${done.mismatched.length > 3 ? ', …' : ''}) derive${done.mismatched.length === 1 ? 's' : ''} another attestation than the log recorded: no note written for ${done.mismatched.length === 1 ? 'it' : 'them'}; \`longbuild verify\` checks the log\n`);
  }
  return done;
}

function summaryOf(build: BuildFacts, f: CommitFacts): Summary {
  return {
    nodeId: f.nodeId, milestoneId: f.milestoneId, attemptId: f.attempt.attemptId, model: f.attempt.model ?? null,
    driver: `${build.driver.kind} ${build.driver.sourceSha256.slice(0, 12)}`, jobId: f.job.jobId,
    verification: f.job.commands.map((c) => ({ argv: c.argv, exitCode: c.exitCode })),
    tests: f.job.tests !== undefined ? { passed: f.job.tests.passed, failed: f.job.tests.failed } : null,
    positions: { attemptStarted: f.attempt.startedPosition, promoted: f.promotion.position },
  };
}
