/**
 * Graph revision → the log position of the event that made it (R-6: time travel by revision), as
 * the build state keeps it (state version 11, decision 0055). Every event that changes the graph
 * makes exactly the next revision (`bumpGraph`), so the positions of revisions `first`, `first + 1`,
 * … are a dense list, kept in chunks of REVISION_CHUNK: a new revision appends to the last chunk,
 * and an immutable update (immer) copies that chunk and the list of chunks, never the whole history.
 *
 * Until version 10 these were a sharded record keyed `r<revision>`: ~90 bytes of the controller's
 * heap a revision (the key's string, the leaf's entry, a hidden class per key), two revisions a
 * node in a long build — ~8 MB at 50,000 nodes. A number in a chunk is 8.
 */
import { ValidationError } from '../events/errors.js';

export interface RevisionPositions {
  /** The first revision held (0 in a fold from the log; the view holds its last one only). */
  readonly first: number;
  /** The positions of revisions first, first + 1, …: every chunk but the last holds REVISION_CHUNK. */
  readonly chunks: readonly (readonly number[])[];
}

/** Revisions a chunk holds: a new revision copies at most this many numbers and the chunk list. */
export const REVISION_CHUNK = 1024;

/** The positions of revisions `first`, `first + 1`, … in order. */
export function revisionPositionsFrom(first: number, positions: readonly number[]): RevisionPositions {
  const chunks: number[][] = [];
  for (let i = 0; i < positions.length; i += REVISION_CHUNK) chunks.push(positions.slice(i, i + REVISION_CHUNK));
  return { first, chunks };
}

/** The position of graph revision `revision`, or undefined when it is not held. */
export function revisionPosition(r: RevisionPositions, revision: number): number | undefined {
  const i = revision - r.first;
  if (!Number.isSafeInteger(i) || i < 0) return undefined;
  return r.chunks[Math.floor(i / REVISION_CHUNK)]?.[i % REVISION_CHUNK];
}

/** Every held revision and its position, in order. */
export function* revisionEntries(r: RevisionPositions): Generator<[revision: number, position: number]> {
  let revision = r.first;
  for (const chunk of r.chunks) for (const position of chunk) yield [revision++, position];
}

/** The revision after the last held (`first` when none is). */
export function nextRevision(r: RevisionPositions): number {
  const last = r.chunks[r.chunks.length - 1];
  return r.first + (r.chunks.length === 0 ? 0 : (r.chunks.length - 1) * REVISION_CHUNK + last!.length);
}

/**
 * Record that revision `revision` was made at `position`, in a mutable (or immer draft) copy: it
 * must be the next revision (`nextRevision`), as every graph change makes. A gap would make every
 * later revision answer with another's position, so it is refused. A fold of the log never makes
 * one; a state restored from an edited snapshot (its hash recomputed) can, and is named in one line.
 */
export function appendRevision(r: { first: number; chunks: number[][] }, revision: number, position: number): void {
  const next = nextRevision(r);
  if (revision !== next) {
    throw new ValidationError(`graph revision ${revision} recorded after ${next - 1} at position ${position}: revisions must follow one another, so the build state folded here was restored from a snapshot that does not follow the log (edited, or another build's); run \`longbuild rebuild\``, 'R-6');
  }
  const last = r.chunks[r.chunks.length - 1];
  if (last === undefined || last.length === REVISION_CHUNK) r.chunks.push([position]);
  else last.push(position);
}
