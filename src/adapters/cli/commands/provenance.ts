import { NotFoundError, UsageError, ValidationError } from '../../../events/errors.js';
import { EnvelopeError, parseEnvelope, verifyEnvelope, type Envelope } from '../../../events/dsse.js';
import { parseVerifierKey } from '../../../events/signed-note.js';
import { canonicalJson } from '../../../events/canonical.js';
import { PROVENANCE_NOTES_REF, provenanceStatement, statementBytes, type BuildFacts, type CommitFacts } from '../../../commands/provenance.js';
import { readEventsFrom } from '../../log/paging.js';
import { git } from '../../git/exec.js';
import { buildKeyFrom, loadSigningKey, signingKeyPath, verifierKeyArg } from '../../transparency/keys.js';
import { attestedCommits, historyOf, promotionsOf, publishNotes, readNote, type Promotion } from '../../provenance/attestations.js';
import { openBuildLog, pathsOf } from '../open-build.js';
import type { CommandContext, FlagSpec } from '../types.js';
import type { EventLog } from '../../../events/log.js';

export const flags: Record<string, FlagSpec> = { key: { type: 'string' }, 'signing-key': { type: 'string' } };
export const positionals = { min: 1, max: 2 };

export type ProvenanceOutput =
  | { readonly action: 'show'; readonly commit: string; readonly statement: Record<string, unknown>; readonly envelope: Envelope | null; readonly summary: Summary }
  | { readonly action: 'verify'; readonly commit: string; readonly ok: true; readonly keyId: string; readonly summary: Summary }
  | { readonly action: 'publish'; readonly commits: number; readonly written: number; readonly ref: string };

/** What a statement says, readably. */
interface Summary {
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
 * `longbuild provenance COMMIT [--json]` (issue 47, R-62): the statement of an integrated commit,
 * derived from the log, and the envelope its note carries. `provenance verify COMMIT [--key VKEY]`:
 * the note's signature (the build's key, or the one given) and its statement against the log.
 * `provenance publish`: sign and write the notes of every integrated commit that has none.
 */
export async function run(ctx: CommandContext): Promise<ProvenanceOutput> {
  const [first, second] = ctx.positionals;
  if (first === 'publish') {
    if (second !== undefined) throw new UsageError('provenance publish: takes no commit');
    return publish(ctx);
  }
  if (first === 'verify') {
    if (second === undefined) throw new UsageError('provenance verify: give the commit (provenance verify COMMIT [--key VKEY])');
    return verify(ctx, second);
  }
  if (second !== undefined) throw new UsageError(`provenance: unknown action '${first}' (expected: COMMIT, verify COMMIT, publish)`);
  const { build, facts } = await factsOf(ctx, first!);
  const note = await readNote(ctx.repo, facts.commit);
  let envelope: Envelope | null = null;
  if (note !== null) {
    try {
      envelope = parseEnvelope(note);
    } catch {
      envelope = null;
    }
  }
  return { action: 'show', commit: facts.commit, statement: provenanceStatement(build, facts), envelope, summary: summaryOf(build, facts) };
}

/** The build's facts and the facts of `rev`'s commit, which a promotion must have put on the integration ref. */
async function factsOf(ctx: CommandContext, rev: string): Promise<{ build: BuildFacts; facts: CommitFacts; all: CommitFacts[] }> {
  const { build, all } = await everyAttested(ctx); // no build here: said first
  const resolved = await git(ctx.repo, ['rev-parse', '-q', '--verify', `${rev}^{commit}`], { allowFail: true });
  if (resolved.code !== 0) throw new NotFoundError(`provenance: '${rev}' is not a commit of ${ctx.repo}`);
  const commit = resolved.stdout.trim();
  const facts = all.find((f) => f.commit === commit);
  if (facts === undefined) throw new NotFoundError(`provenance: ${commit.slice(0, 12)} was not put on the integration ref by a promotion of this build (see \`git log ${build.integrationRef}\`)`);
  return { build, facts, all };
}

/** The build's facts and its promotions, from the log. */
export async function readPromotions(ctx: CommandContext, open?: EventLog): Promise<{ build: BuildFacts; promotions: Promotion[] }> {
  const log = open ?? await openBuildLog(pathsOf(ctx));
  let read;
  try {
    read = promotionsOf(await readEventsFrom(log));
  } finally {
    if (open === undefined) await log.close();
  }
  if (read.build === null || read.build.vkey === '') throw new ValidationError('provenance: the log names no signing key (a build from before signed checkpoints): its commits cannot be attested');
  return { build: read.build, promotions: read.promotions };
}

async function everyAttested(ctx: CommandContext): Promise<{ build: BuildFacts; all: CommitFacts[] }> {
  const { build, promotions } = await readPromotions(ctx);
  const all: CommitFacts[] = [];
  const history = await historyOf(ctx.repo, promotions);
  for (const p of promotions) all.push(...await attestedCommits(ctx.repo, p, history));
  return { build, all };
}

async function verify(ctx: CommandContext, rev: string): Promise<ProvenanceOutput> {
  const { build, facts } = await factsOf(ctx, rev);
  let key;
  try {
    key = typeof ctx.flags.key === 'string' ? verifierKeyArg(ctx.flags.key, ctx.cwd) : parseVerifierKey(build.vkey);
  } catch (err) {
    throw new UsageError(`provenance verify: --key is not a verifier key: ${(err as Error).message}`);
  }
  const note = await readNote(ctx.repo, facts.commit);
  if (note === null) throw new ValidationError(`provenance verify: ${facts.commit.slice(0, 12)} has no provenance note (${PROVENANCE_NOTES_REF}); \`longbuild provenance publish\` writes them`);
  let payload: Buffer;
  try {
    payload = verifyEnvelope(parseEnvelope(note), key);
  } catch (err) {
    if (err instanceof EnvelopeError) throw new ValidationError(`provenance verify: ${facts.commit.slice(0, 12)}'s note: ${err.message}`);
    throw err;
  }
  const expected = statementBytes(provenanceStatement(build, facts));
  if (!payload.equals(expected)) {
    throw new ValidationError(`provenance verify: ${facts.commit.slice(0, 12)}'s note is signed but its statement is not what the log says of this commit (${firstDifference(payload, expected)})`);
  }
  return { action: 'verify', commit: facts.commit, ok: true, keyId: key.keyId, summary: summaryOf(build, facts) };
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

async function publish(ctx: CommandContext): Promise<ProvenanceOutput> {
  const { commits, written } = await publishProvenance(ctx, true);
  return { action: 'publish', commits, written, ref: PROVENANCE_NOTES_REF };
}

/**
 * Sign and write the provenance notes the repository lacks (`all`: also those that differ from the
 * log), with the build's key (`--signing-key`, else the default key file). `run` calls it as it ends.
 */
export async function publishProvenance(ctx: CommandContext, all: boolean, log?: EventLog): Promise<{ commits: number; written: number }> {
  const { build, promotions } = await readPromotions(ctx, log);
  if (promotions.length === 0) return { commits: 0, written: 0 };
  const file = loadSigningKey(signingKeyPath(typeof ctx.flags['signing-key'] === 'string' ? ctx.flags['signing-key'] : undefined, ctx.env, ctx.cwd));
  const key = buildKeyFrom(file.privateKey, build.buildId, build.vkey);
  if (key === null) throw new ValidationError(`provenance publish: the signing key ${file.path} is not this build's key (the log records ${build.vkey}); pass it with --signing-key FILE`);
  return publishNotes(ctx.repo, build, promotions, key, all);
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

export function render(d: ProvenanceOutput): string {
  if (d.action === 'publish') return `${d.written} provenance note${d.written === 1 ? '' : 's'} written (${d.commits} integrated commit${d.commits === 1 ? '' : 's'}; ${d.ref})\nsee: git log --notes=longbuild/provenance\n`;
  const s = d.summary;
  const lines = [
    `${d.commit}: node ${s.nodeId}${s.milestoneId !== null ? ` (milestone ${s.milestoneId})` : ''}, attempt ${s.attemptId}, ${s.model !== null ? `model ${s.model}, ` : ''}driver ${s.driver}`,
    `  verified by ${s.jobId}: ${s.verification.map((v) => `${v.argv.join(' ')} → ${v.exitCode}`).join('; ') || '(no command)'}${s.tests !== null ? `; tests ${s.tests.passed} passed, ${s.tests.failed} failed` : ''}`,
    `  log: attempt started at ${s.positions.attemptStarted}, promoted at ${s.positions.promoted}`,
  ];
  if (d.action === 'verify') return `${lines.join('\n')}\nprovenance verified: signed by key ${d.keyId}, statement matches the log\n`;
  return `${lines.join('\n')}\n${d.envelope !== null ? `envelope (${PROVENANCE_NOTES_REF}):\n${JSON.stringify(d.envelope)}` : 'no provenance note yet: `longbuild provenance publish` writes it'}\n`;
}
