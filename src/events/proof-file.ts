import { createHash } from 'node:crypto';
import { leafHash, verifyConsistency, verifyInclusion } from './merkle.js';
import { NoteError, parseCheckpointText, parseNote, verifyNote, type VerifierKey } from './signed-note.js';

// Proof files an auditor checks offline. Inclusion: c2sp.org/tlog-proof@v1, whose `extra`
// line carries the event's hashed bytes (canonical JSON of everything but its hash), so the leaf
// is recomputed from the event itself: leaf = SHA-256(0x00 || SHA-256(extra)). Consistency: the
// same shape with a `size1`/`root1` header, the proof from the tree the auditor held to the tree
// of the checkpoint that follows.

export const INCLUSION_HEADER = 'c2sp.org/tlog-proof@v1';
export const CONSISTENCY_HEADER = 'longbuild/tlog-consistency@v1';

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

export function formatInclusionProof(index: number, eventBytes: string, proof: readonly Uint8Array[], checkpointNote: string): string {
  return [INCLUSION_HEADER, `extra ${b64(Buffer.from(eventBytes, 'utf8'))}`, `index ${index}`, ...proof.map(b64), '', checkpointNote].join('\n');
}

export function formatConsistencyProof(size1: number, root1: Uint8Array, proof: readonly Uint8Array[], checkpointNote: string): string {
  return [CONSISTENCY_HEADER, `size1 ${size1}`, `root1 ${b64(root1)}`, ...proof.map(b64), '', checkpointNote].join('\n');
}

export type CheckedProof =
  | { readonly kind: 'inclusion'; readonly position: number; readonly size: number; readonly event: { readonly type: string; readonly position: number }; readonly eventHash: string }
  | { readonly kind: 'consistency'; readonly size1: number; readonly size: number; readonly root1: string };

/** Parse and check a proof file against the log's key; throws NoteError naming what fails. */
export function checkProofFile(text: string, key: VerifierKey, held?: { size: number; root: Buffer }): CheckedProof {
  const split = text.indexOf('\n\n');
  if (split < 0) throw new NoteError('not a proof file: no blank line before the checkpoint');
  const lines = text.slice(0, split).split('\n');
  const note = text.slice(split + 2);
  const checkpoint = parseCheckpointText(verifyNote(parseNote(note), key).text);
  const hashes = (from: number): Buffer[] => lines.slice(from).map((l) => {
    const h = Buffer.from(l, 'base64');
    if (h.length !== 32 || h.toString('base64') !== l) throw new NoteError(`proof line '${l.slice(0, 20)}' is not a base64 SHA-256`);
    return h;
  });
  if (lines[0] === INCLUSION_HEADER) {
    const extra = /^extra ([A-Za-z0-9+/=]+)$/.exec(lines[1] ?? '');
    const idx = /^index (0|[1-9][0-9]*)$/.exec(lines[2] ?? '');
    if (!extra || !idx) throw new NoteError('an inclusion proof needs its `extra` (the event) and `index` lines');
    const bytes = Buffer.from(extra[1]!, 'base64');
    const index = Number(idx[1]);
    let event: { type?: unknown; position?: unknown };
    try {
      event = JSON.parse(bytes.toString('utf8')) as { type?: unknown; position?: unknown };
    } catch {
      throw new NoteError('the `extra` line is not an event (JSON)');
    }
    if (event.position !== index + 1) throw new NoteError(`the event in the proof is at position ${String(event.position)}, not ${index + 1}`);
    const eventHash = createHash('sha256').update(bytes).digest();
    if (!verifyInclusion(index, checkpoint.size, leafHash(eventHash), hashes(3), checkpoint.root)) {
      throw new NoteError(`the inclusion proof of position ${index + 1} does not verify against the checkpoint's root at size ${checkpoint.size}`);
    }
    return { kind: 'inclusion', position: index + 1, size: checkpoint.size, event: { type: String(event.type), position: index + 1 }, eventHash: eventHash.toString('hex') };
  }
  if (lines[0] === CONSISTENCY_HEADER) {
    const s1 = /^size1 ([1-9][0-9]*)$/.exec(lines[1] ?? '');
    const r1 = /^root1 ([A-Za-z0-9+/=]+)$/.exec(lines[2] ?? '');
    if (!s1 || !r1) throw new NoteError('a consistency proof needs its `size1` and `root1` lines');
    const size1 = Number(s1[1]);
    const root1 = Buffer.from(r1[1]!, 'base64');
    if (held && (held.size !== size1 || !held.root.equals(root1))) throw new NoteError(`the proof starts from size ${size1}, not from the checkpoint held (size ${held.size})`);
    if (!verifyConsistency(size1, checkpoint.size, root1, checkpoint.root, hashes(3))) {
      throw new NoteError(`the tree at size ${checkpoint.size} is not an extension of the tree at size ${size1} (consistency proof fails)`);
    }
    return { kind: 'consistency', size1, size: checkpoint.size, root1: root1.toString('base64') };
  }
  throw new NoteError(`not a proof file (first line '${(lines[0] ?? '').slice(0, 40)}')`);
}
