import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { DomainEventSchema, domainCatalogue, type CommandEvidence, type JobTests } from '../../events/catalogue.js';
import type { StoredEvent } from '../../events/envelope.js';
import { EventMetadataSchema } from '../../events/metadata-schema.js';
import { GENESIS_HASH } from '../../events/hash.js';
import { consistencyProof, eventLeafHash, memoryTree, treeRoot, verifyConsistency } from '../../events/merkle.js';
import { COSIGNATURE_V1, NoteError, parseCheckpointText, parseNote, parseVerifierKey, verifyNote, type VerifierKey } from '../../events/signed-note.js';
import { startGraphAudit } from './graph-audit.js';
import { commitTree, missingInTree, readGitBundle, GitBundleError } from './git-pack.js';
import { auditTests, testEvidenceNamed } from './tests-audit.js';
import { AuditFailure } from './audit-failure.js';
import { attestationFile, auditProvenance } from './provenance-audit.js';

export { AuditFailure, attestationFile };

// The audit bundle's verifier (R-37). The same module is `longbuild audit verify DIR` and,
// bundled with its imports into one file that needs nothing but Node, the bundle's `verify.mjs`:
// an auditor runs `node DIR/verify.mjs [--key VKEY] [--expect CHECKPOINT] [--witness VKEY]...`
// on a machine with nothing installed. Checks run in order; the first failure stops them.

export const BUNDLE_FORMAT = 'longbuild-audit-bundle@1';

/**
 * The driver file's SHA-256 in force at the log's head: BuildInitialized's, or the newest
 * ForkedFrom's (a fork goes on under the driver it names, R-41); null when none is recorded.
 */
export function driverPin(events: readonly Pick<StoredEvent, 'type' | 'data' | 'position'>[]): { sha256: string; by: string; position: number } | null {
  let pin: { sha256: string; by: string; position: number } | null = null;
  for (const e of events) {
    if (e.type !== 'BuildInitialized' && e.type !== 'ForkedFrom') continue;
    const sha = (e.data as { driver?: { sourceSha256?: unknown } }).driver?.sourceSha256;
    if (typeof sha === 'string') pin = { sha256: sha, by: e.type === 'ForkedFrom' ? `ForkedFrom (position ${e.position})` : 'BuildInitialized', position: e.position };
  }
  return pin;
}

export interface AuditOptions {
  /** The log's verifier key as the auditor obtained it (a vkey, or a file holding one). */
  readonly key?: string;
  /** A checkpoint the auditor held before: the log must extend it. */
  readonly expect?: string;
  /** Witness verifier keys (type 0x04): each must have cosigned a checkpoint of the bundle. */
  readonly witnesses?: readonly string[];
  /** Accept events no signed checkpoint covers (R-54): only the signed part is then vouched for. */
  readonly allowUnsignedTail?: boolean;
}

export interface CheckLine {
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
  readonly position?: number;
}

/** The JSON Schema of each event type's data, as exported into the bundle (schemas/<Type>.json). */
export function eventSchemas(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const o of DomainEventSchema.options) {
    out[o.shape.type.value as string] = `${JSON.stringify(z.toJSONSchema(o.shape.data as z.ZodType, { unrepresentable: 'any' }), null, 1)}\n`;
  }
  return out;
}

const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

function readKey(text: string, what: string): VerifierKey {
  try {
    return parseVerifierKey(existsSync(text) ? readFileSync(text, 'utf8') : text);
  } catch (err) {
    throw new AuditFailure('keys', `${what} is not a verifier key: ${(err as Error).message}`);
  }
}

/** Run every check on the bundle in `dir`; `print` gets one line per passed check. Throws AuditFailure at the first failure. */
export async function verifyBundle(dir: string, opts: AuditOptions, print: (line: CheckLine) => void): Promise<void> {
  const need = (f: string): string => {
    const p = join(dir, f);
    if (!existsSync(p)) throw new AuditFailure('bundle', `${f} is missing from the bundle`);
    return p;
  };
  // 1. The manifest: every file it lists is present with its SHA-256 (transport integrity).
  let manifest: Manifest;
  try {
    manifest = JSON.parse(readFileSync(need('bundle.json'), 'utf8')) as typeof manifest;
  } catch (err) {
    if (err instanceof AuditFailure) throw err;
    throw new AuditFailure('bundle', 'bundle.json is not JSON');
  }
  if (manifest.format !== BUNDLE_FORMAT) throw new AuditFailure('bundle', `bundle.json is not a ${BUNDLE_FORMAT} manifest`);
  for (const [f, want] of Object.entries(manifest.files ?? {})) {
    if (sha256(readFileSync(need(f))) !== want) throw new AuditFailure('bundle', `${f} does not match the SHA-256 in bundle.json (changed in transit?)`);
  }
  print({ check: 'bundle', ok: true, detail: `${Object.keys(manifest.files ?? {}).length} files match bundle.json` });

  // 2. The chain (R-2, R-4): canonical bytes, each hash recomputed, each link, positions and revisions.
  const logText = readFileSync(need('log.ndjson'), 'utf8');
  const graphAudit = startGraphAudit(logText); // the last check, on another thread meanwhile
  try {
    await checkLog(dir, need, logText, opts, print, graphAudit.result, manifest);
  } finally {
    graphAudit.stop();
  }
}

/** bundle.json as `audit export` writes it. */
interface Manifest {
  readonly format?: string;
  readonly buildId?: string;
  readonly vkey?: string;
  readonly events?: number;
  readonly lastCheckpoint?: number | null;
  readonly files?: Record<string, string>;
}

/** Checks 2 to 8 over the log's text; `graph` yields the graph check's answer (started early). */
async function checkLog(
  dir: string, need: (f: string) => string, logText: string, opts: AuditOptions, print: (line: CheckLine) => void, graph: () => Promise<{ position: number; problem: string } | null>, manifest: Manifest,
): Promise<void> {
  const events: StoredEvent[] = [];
  const revs = new Map<string, number>();
  let prev = GENESIS_HASH;
  const lines = logText.split('\n');
  if (lines.pop() !== '') throw new AuditFailure('chain', 'log.ndjson does not end in a newline (cut?)');
  for (const [i, line] of lines.entries()) {
    const position = i + 1;
    let e: StoredEvent;
    try {
      e = JSON.parse(line) as StoredEvent;
    } catch {
      throw new AuditFailure('chain', `line ${position} is not JSON`, position);
    }
    if (canonicalJson(e as unknown as JsonValue) !== line) throw new AuditFailure('chain', `event ${position} is not stored as canonical JSON (edited)`, position);
    if (e.position !== position) throw new AuditFailure('chain', `line ${position} holds position ${e.position} (an event removed or reordered)`, position);
    const rev = (revs.get(e.streamId) ?? -1) + 1;
    if (e.revision !== rev) throw new AuditFailure('chain', `stream revision ${e.revision}, expected ${rev}`, position);
    revs.set(e.streamId, rev);
    if (e.prevHash !== prev) throw new AuditFailure('chain', 'previous-hash link broken (an earlier event was edited, removed or reordered)', position);
    if (!EventMetadataSchema.safeParse(e.metadata).success) throw new AuditFailure('chain', 'metadata invalid', position);
    // The line is canonical, so the hashed part (everything but the hash) is the line without its
    // `"hash"` member, which sorts between `"data"` and `"metadata"` (R-2).
    const hash = e.hash;
    const member = `,"hash":${JSON.stringify(hash)},"metadata":`;
    const at = line.indexOf(member);
    if (typeof hash !== 'string' || at < 0 || sha256(line.slice(0, at) + ',"metadata":' + line.slice(at + member.length)) !== hash) throw new AuditFailure('chain', 'hash mismatch (event edited)', position);
    prev = hash;
    events.push(e);
  }
  if (events.length === 0) throw new AuditFailure('chain', 'the log is empty');
  print({ check: 'chain', ok: true, detail: `${events.length} events, head ${prev}` });

  // 3. Schemas (R-28): the exported JSON Schemas are the catalogue's, and every event fits its type.
  const schemas = eventSchemas();
  for (const [type, text] of Object.entries(schemas)) {
    if (readFileSync(need(`schemas/${type}.json`), 'utf8') !== text) throw new AuditFailure('schemas', `schemas/${type}.json is not the catalogue's schema of ${type}`);
  }
  for (const e of events) {
    try {
      domainCatalogue.validate(e.type, e.schemaVersion, e.data);
    } catch (err) {
      throw new AuditFailure('schemas', `event fails the catalogue: ${(err as Error).message}`, e.position);
    }
  }
  print({ check: 'schemas', ok: true, detail: `${events.length} events fit the ${Object.keys(schemas).length} event schemas` });

  // 4. The key: the auditor's (--key) must be the one the log records; else the log's own (trust on first use).
  const init = events[0]!;
  if (init.type !== 'BuildInitialized') throw new AuditFailure('keys', 'the log does not start with BuildInitialized', 1);
  const initData = init.data as { buildId: string; signing?: { vkey: string }; driver: { sourceSha256: string } };
  if (!initData.signing) throw new AuditFailure('keys', 'the log records no signing key: nothing vouches for it', 1);
  const logKey = readKey(initData.signing.vkey, 'the key the log records');
  if (opts.key !== undefined) {
    const given = readKey(opts.key, '--key');
    if (given.keyId !== logKey.keyId || given.name !== logKey.name || !given.publicKey.equals(logKey.publicKey)) {
      throw new AuditFailure('keys', `the log records the signing key ${initData.signing.vkey}, not the one given with --key (the log was rewritten under another key)`, 1);
    }
  }
  print({ check: 'keys', ok: true, detail: `${initData.signing.vkey}${opts.key === undefined ? ' (from the log itself: pass --key to check it against the key you hold)' : ' (matches --key)'}` });

  // 5. Checkpoints (R-34, R-35): each signature, each root against the Merkle tree of the log,
  //    consecutive ones consistent; the witnesses' cosignatures.
  const leaves = events.map((e) => eventLeafHash(e.hash));
  const tree = memoryTree(leaves);
  const cpDir = need('checkpoints');
  const files = readdirSync(cpDir).filter((f) => /^[0-9]+\.checkpoint$/.test(f)).sort((a, b) => parseInt(a) - parseInt(b));
  if (files.length === 0) throw new AuditFailure('checkpoints', 'the bundle holds no signed checkpoint');
  const witnessKeys = (opts.witnesses ?? []).map((w) => readKey(w, '--witness'));
  const cosigned = new Map<string, number>();
  const roots = new Map<number, Buffer>();
  const checkpoint = (note: string, file: string): { size: number; root: Buffer } => {
    let body;
    try {
      const parsed = verifyNote(note, logKey);
      body = parseCheckpointText(parsed.text);
      for (const w of witnessKeys) {
        if (w.type !== COSIGNATURE_V1) throw new NoteError(`witness key ${w.name} is not a cosignature key (type 0x04)`);
        if (parseNote(note).signatures.some((s) => s.name === w.name && s.keyId === w.keyId)) {
          verifyNote(note, w);
          cosigned.set(w.name, Math.max(cosigned.get(w.name) ?? 0, body.size));
        }
      }
    } catch (err) {
      throw new AuditFailure('checkpoints', `${file} does not verify: ${(err as Error).message}`);
    }
    if (body.origin !== initData.buildId) throw new AuditFailure('checkpoints', `${file} is a checkpoint of '${body.origin}', not of ${initData.buildId}`);
    if (body.size > leaves.length) throw new AuditFailure('checkpoints', `log truncated: ${file} was signed at size ${body.size}, the log ends at ${leaves.length}`, leaves.length + 1);
    let root = roots.get(body.size);
    if (!root) roots.set(body.size, (root = treeRoot(tree, body.size)));
    if (!root.equals(body.root)) throw new AuditFailure('checkpoints', `the log is not the one ${file} signed at size ${body.size} (its Merkle root differs: rewritten)`, 1);
    return { size: body.size, root };
  };
  let last: { size: number; root: Buffer } | null = null;
  for (const f of files) {
    const cp = checkpoint(readFileSync(join(cpDir, f), 'utf8'), `checkpoints/${f}`);
    if (last && !verifyConsistency(last.size, cp.size, last.root, cp.root, consistencyProof(tree, last.size, cp.size))) {
      throw new AuditFailure('checkpoints', `checkpoint ${cp.size} is not an extension of checkpoint ${last.size}`);
    }
    last = cp;
  }
  print({ check: 'checkpoints', ok: true, detail: `${files.length} signed checkpoints, up to size ${last!.size} of ${leaves.length}, root ${last!.root.toString('base64')}` });
  let covered = last!.size;
  if (opts.expect !== undefined) {
    if (!existsSync(opts.expect)) throw new AuditFailure('expect', `--expect ${opts.expect} does not exist`);
    // Verified against the log's own tree (a held checkpoint larger than the log fails as a cut),
    // so a newer one (a witness's) vouches for the events after the bundle's last checkpoint.
    const held = checkpoint(readFileSync(opts.expect, 'utf8'), opts.expect);
    const [older, newer] = held.size <= last!.size ? [held, last!] : [last!, held];
    if (!verifyConsistency(older.size, newer.size, older.root, newer.root, consistencyProof(tree, older.size, newer.size))) throw new AuditFailure('expect', `the bundle's log does not extend the checkpoint held at size ${held.size}`);
    covered = Math.max(covered, held.size);
    print({ check: 'expect', ok: true, detail: `the log extends the checkpoint held at size ${held.size}${held.size > last!.size ? ' (newer than the bundle\'s last: it vouches for the events up to it)' : ''}` });
  }
  // The witnesses: a cosignature on a checkpoint of the bundle, or on the one held (--expect).
  for (const w of witnessKeys) if (!cosigned.has(w.name)) throw new AuditFailure('checkpoints', `no checkpoint in the bundle${opts.expect !== undefined ? ' nor the one held' : ''} is cosigned by witness ${w.name}`);
  if (witnessKeys.length > 0) print({ check: 'witnesses', ok: true, detail: witnessKeys.map((w) => `cosigned by ${w.name} up to size ${cosigned.get(w.name)}`).join('; ') });
  // R-54: every event is under a signature, or the auditor says out loud that some are not.
  if (covered < leaves.length) {
    const span = `events ${covered + 1}..${leaves.length} are covered by no signed checkpoint (the last covers ${covered} of ${leaves.length})`;
    if (opts.allowUnsignedTail !== true) {
      throw new AuditFailure('coverage', `${span}: anyone who could write the bundle could have written them; check against a newer checkpoint (--expect, e.g. a witness's), or pass --allow-unsigned-tail to verify the signed part only`, covered + 1);
    }
    print({ check: 'coverage', ok: true, detail: `${span}; accepted with --allow-unsigned-tail: only events 1..${covered} are vouched for` });
  } else {
    print({ check: 'coverage', ok: true, detail: `every event (1..${leaves.length}) is covered by a signed checkpoint` });
  }
  // The manifest's own counts agree with what it ships (an edited manifest says so).
  const counts: [string, unknown, unknown][] = [['events', manifest.events, events.length], ['lastCheckpoint', manifest.lastCheckpoint, last!.size], ['buildId', manifest.buildId, initData.buildId], ['vkey', manifest.vkey, initData.signing.vkey]];
  for (const [field, said, is] of counts) {
    if (said !== is) throw new AuditFailure('bundle', `bundle.json says ${field} ${JSON.stringify(said)}, the bundle holds ${JSON.stringify(is)}`);
  }

  // 6. The driver file and every evidence file the log names.
  const pin = driverPin(events);
  if (pin !== null && sha256(readFileSync(need('driver.json'))) !== pin.sha256) throw new AuditFailure('evidence', `driver.json does not match the SHA-256 ${pin.by} pinned`, 1);
  const evidence = new Set<string>();
  for (const e of events) {
    for (const sha of evidenceNamed(e)) {
      if (evidence.has(sha)) continue;
      const f = join(dir, 'evidence', sha);
      if (!existsSync(f)) throw new AuditFailure('evidence', `evidence file ${sha} the log names is missing`, e.position);
      if (sha256(readFileSync(f)) !== sha) throw new AuditFailure('evidence', `evidence file ${sha} does not hash to its name`, e.position);
      evidence.add(sha);
    }
  }
  print({ check: 'evidence', ok: true, detail: `driver.json and ${evidence.size} evidence files match the log` });

  // 6b. Tests (R-52): every test summary read again from its evidence, every promotion held to the ratchet.
  const tests = auditTests(events, (sha) => (evidence.has(sha) ? readFileSync(join(dir, 'evidence', sha)) : null));
  if (tests.problem !== null) throw new AuditFailure('tests', tests.problem.message, tests.problem.position);
  print({ check: 'tests', ok: true, detail: tests.jobs === 0 ? 'no verification reported tests' : `${tests.jobs} verifications' test reports read again from their evidence; ${tests.promotions} promotions held to the ratchet${tests.retired > 0 ? ` (${tests.retired} tests retired by plan)` : ''}` });

  // 7. Git: every promotion's result commit and every attempt commit is in the bundle, with the recorded tree.
  let objects;
  try {
    objects = readGitBundle(readFileSync(need('git.bundle'))).objects;
  } catch (err) {
    throw new AuditFailure('git', err instanceof GitBundleError ? `git.bundle: ${err.message}` : String(err));
  }
  const commits = new Set<string>();
  const seenTrees = new Set<string>();
  for (const e of events) {
    for (const c of commitsNamed(e)) {
      const o = objects.get(c.commit);
      if (!o) throw new AuditFailure('git', `commit ${c.commit} (${c.what}) is not in git.bundle`, e.position);
      const tree = commitTree(o);
      if (c.tree !== null && tree !== c.tree) throw new AuditFailure('git', `commit ${c.commit} (${c.what}) has tree ${tree}, the log recorded ${c.tree}`, e.position);
      // R-54: the content itself, not only the commit objects: every tree and blob of it.
      let missing;
      try {
        missing = tree === null ? { sha: '(none)', path: '(root)', type: 'tree' as const } : missingInTree(objects, tree, seenTrees);
      } catch (err) {
        throw new AuditFailure('git', `git.bundle: ${(err as Error).message}`, e.position);
      }
      if (missing !== null) throw new AuditFailure('git', `the ${missing.type} ${missing.sha} ('${missing.path}') of commit ${c.commit} (${c.what}) is not in git.bundle: the bundle does not hold what was promoted`, e.position);
      commits.add(c.commit);
    }
  }
  print({ check: 'git', ok: true, detail: `${commits.size} commits the log names are in git.bundle with their recorded trees, and ${seenTrees.size} trees with every blob` });

  // 7b. Provenance (R-62): every integrated commit's attestation, as the log recorded it, signed by the build's key.
  const attested = auditProvenance(dir, events, objects, logKey, covered);
  print({ check: 'provenance', ok: true, detail: attested });

  // 8. The graph (R-37): reconstructed at every revision and checked against the SHA-256 recorded for it.
  const problem = await graph();
  if (problem) throw new AuditFailure('graph', problem.problem, problem.position);
  const revisions = events.filter((e) => (e.metadata as { graph?: unknown }).graph !== undefined).length;
  print({ check: 'graph', ok: true, detail: `${revisions} graph revisions reconstructed and matching their recorded SHA-256` });
}

/** The event types that name evidence files or commits (the others need not be parsed for them). */
export const NAMING_TYPES: ReadonlySet<string> = new Set(['VerificationFinished', 'IntegrationPromoted', 'AttemptFinished']);

/** Evidence files (by SHA-256) an event names: verification output, and a worker's output. */
export function evidenceNamed(e: StoredEvent): string[] {
  if (e.type === 'AttemptFinished') {
    const d = e.data as { stdoutSha256?: string; stderrSha256?: string };
    return [d.stdoutSha256, d.stderrSha256].filter((x): x is string => x !== undefined);
  }
  if (e.type !== 'VerificationFinished') return [];
  const d = e.data as { evidence: CommandEvidence[]; tests?: JobTests };
  return [...d.evidence.flatMap((ev) => [ev.stdoutSha256, ev.stderrSha256]), ...testEvidenceNamed(d)];
}

/** Commits an event names, with the tree it recorded for each (null: none recorded). */
export function commitsNamed(e: StoredEvent): { commit: string; tree: string | null; what: string }[] {
  if (e.type === 'IntegrationPromoted') {
    const r = (e.data as { receipt: { resultCommit: string; tree: string; candidates: { nodeId: string; commit: string }[] } }).receipt;
    return [{ commit: r.resultCommit, tree: r.tree, what: 'promoted' }, ...r.candidates.map((c) => ({ commit: c.commit, tree: null, what: `candidate of ${c.nodeId}` }))];
  }
  if (e.type === 'AttemptFinished') {
    const d = e.data as { commit?: string; tree?: string; attemptId: string };
    return d.commit ? [{ commit: d.commit, tree: d.tree ?? null, what: `attempt ${d.attemptId}` }] : [];
  }
  return [];
}

/**
 * `node verify.mjs DIR? [--key VKEY] [--expect FILE] [--witness VKEY]... [--allow-unsigned-tail]`;
 * returns the exit code. `self` is the running verifier's own file: its SHA-256 is printed first,
 * to be compared with the one the auditor's own longbuild publishes (`longbuild audit verifier`).
 */
export async function main(argv: readonly string[], dirDefault: string, write: (s: string) => void, self?: Uint8Array): Promise<number> {
  if (self !== undefined) write(`verifier sha256 ${sha256(self)} (compare with \`longbuild audit verifier\` from your own install, never with this line alone)\n`);
  const opts: { key?: string; expect?: string; witnesses: string[]; allowUnsignedTail?: boolean } = { witnesses: [] };
  let dir = dirDefault;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new AuditFailure('usage', `${a} needs a value`);
      return v;
    };
    if (a === '--key') opts.key = value();
    else if (a === '--expect') opts.expect = value();
    else if (a === '--witness') opts.witnesses.push(value());
    else if (a === '--allow-unsigned-tail') opts.allowUnsignedTail = true;
    else if (a === '--help' || a === '-h') {
      write('usage: node verify.mjs [DIR] [--key VKEY|FILE] [--expect CHECKPOINT_FILE] [--witness VKEY]... [--allow-unsigned-tail]\n');
      return 0;
    } else if (!a.startsWith('--')) dir = a;
    else {
      write(`FAILED usage: unknown option ${a}\n`);
      return 2;
    }
  }
  try {
    await verifyBundle(dir, opts, (l) => write(`ok ${l.check}: ${l.detail}\n`));
    write('verified: every check passed\n');
    return 0;
  } catch (err) {
    if (err instanceof AuditFailure) {
      write(`FAILED ${err.check}${err.position !== undefined ? ` at position ${err.position}` : ''}: ${err.message}\n`);
      return 1;
    }
    write(`FAILED: ${(err as Error).message}\n`);
    return 1;
  }
}
