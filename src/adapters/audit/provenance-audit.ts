import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoredEvent } from '../../events/envelope.js';
import type { VerifierKey } from '../../events/signed-note.js';
import { IN_TOTO_PAYLOAD_TYPE, EnvelopeError, parseEnvelope, verifyEnvelope } from '../../events/dsse.js';
import { commitsOfPromotion, promotionsOf, provenanceStatement, statementBytes, type History, type Promotion } from '../../commands/provenance-statement.js';
import { commitFirstParent, commitTree, type GitObject } from './git-pack.js';
import { AuditFailure } from './audit-failure.js';

const sha256 = (b: Uint8Array | string): string => createHash('sha256').update(b).digest('hex');

/** The bundle file of a commit's attestation (its note's text, byte for byte). */
export const attestationFile = (commit: string): string => `attestations/${commit}.json`;

/**
 * R-62 in a bundle: each attestation a ProvenanceRecorded names has its note in `attestations/`,
 * hashing to the recorded SHA-256, signed by the log's key, stating what the bundle's log and git
 * objects say of that commit. A run records every promotion before it at once, so a promotion
 * that a later record does not name lost its record; the promotions after the last record are
 * said to be not attested yet (a run ended before recording them). Only what signed checkpoints
 * cover (`covered`) is checked. Returns the check's line.
 */
export function auditProvenance(dir: string, events: readonly StoredEvent[], objects: ReadonlyMap<string, GitObject>, key: VerifierKey, covered: number): string {
  const read = promotionsOf(events.slice(0, covered));
  const { build, recorded } = read;
  if (build === null) return 'no build facts';
  const lastRecord = Math.max(0, ...[...recorded.values()].map((r) => r.position));
  const promoted = new Set<string>();
  let checked = 0;
  let pending = 0;
  for (const p of read.promotions) {
    const facts = commitsOfPromotion(p, bundleHistory(objects, p));
    if (facts === null) throw new AuditFailure('provenance', `the commits promoted at position ${p.position} (${p.baseHead.slice(0, 12)}..${p.resultCommit.slice(0, 12)}) are not in git.bundle`, p.position);
    for (const f of facts) {
      promoted.add(f.commit);
      const rec = recorded.get(f.commit);
      if (rec === undefined) {
        if (p.position < lastRecord) throw new AuditFailure('provenance', `commit ${f.commit} (node ${f.nodeId}, promoted at position ${p.position}) has no attestation, though the log records attestations after it (position ${lastRecord}): a record was removed`, p.position);
        pending += 1;
        continue;
      }
      const file = join(dir, attestationFile(f.commit));
      if (!existsSync(file)) throw new AuditFailure('provenance', `the attestation of ${f.commit} the log records at position ${rec.position} is missing from the bundle (${attestationFile(f.commit)})`, rec.position);
      const text = readFileSync(file);
      if (sha256(text) !== rec.envelopeSha256) throw new AuditFailure('provenance', `${attestationFile(f.commit)} is not the attestation the log recorded at position ${rec.position} (its SHA-256 differs: rewritten)`, rec.position);
      let payload: Buffer;
      try {
        const envelope = parseEnvelope(text.toString('utf8'));
        if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) throw new EnvelopeError(`payload type ${envelope.payloadType}, not ${IN_TOTO_PAYLOAD_TYPE}`);
        payload = verifyEnvelope(envelope, key);
      } catch (err) {
        if (err instanceof EnvelopeError) throw new AuditFailure('provenance', `${attestationFile(f.commit)}: ${err.message}`, rec.position);
        throw err;
      }
      if (!payload.equals(statementBytes(provenanceStatement(build, f)))) {
        throw new AuditFailure('provenance', `${attestationFile(f.commit)} is signed but does not state what the log says of ${f.commit}`, rec.position);
      }
      checked += 1;
    }
  }
  for (const [commit, rec] of recorded) {
    if (!promoted.has(commit)) throw new AuditFailure('provenance', `the log records an attestation of ${commit}, which no promotion put on the integration ref`, rec.position);
  }
  const notYet = pending > 0 ? `${pending} integrated commit${pending === 1 ? '' : 's'} after the last record not attested yet (a run ended before recording ${pending === 1 ? 'it' : 'them'}: \`longbuild run\` or \`provenance publish\` in the build, then export again)` : '';
  if (checked === 0) return notYet !== '' ? notYet : 'no commit was promoted: nothing to attest';
  return `${checked} attestations of integrated commits: each the one the log recorded, signed by ${key.name}, stating what the log says${notYet !== '' ? `; ${notYet}` : ''}`;
}

/** A promotion's first-parent chain, from the bundle's commit objects. */
function bundleHistory(objects: ReadonlyMap<string, GitObject>, p: Promotion): History {
  const out = new Map<string, { tree: string; parent: string | null }>();
  for (let c: string | null = p.resultCommit; c !== null && c !== p.baseHead && out.size <= 10_000; ) {
    const o = objects.get(c);
    const tree = o !== undefined ? commitTree(o) : null;
    if (o === undefined || tree === null) break;
    const parent = commitFirstParent(o);
    out.set(c, { tree, parent });
    c = parent;
  }
  return out;
}
