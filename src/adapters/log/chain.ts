import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { formatZodError } from '../../events/catalogue.js';
import { computeEventHash } from '../../events/envelope.js';
import { EventMetadataSchema } from '../../events/metadata-schema.js';
import { ConcurrencyError, ValidationError } from '../../events/errors.js';
import { GENESIS_HASH } from '../../events/hash.js';
import type { ChainReport, ExpectedRevision, LogHead, RawStoredEvent, VerifyProblem } from '../../events/event-log.js';

// The checks every log backend shares: the expected revision of an append and the walk
// over stored rows that verifies the chain end to end.

export function checkExpected(streamId: string, expected: ExpectedRevision, current: number): void {
  if (expected === 'any') return;
  if (expected === 'no-stream') {
    if (current !== -1) throw new ConcurrencyError(streamId, 'no-stream', current);
    return;
  }
  if (!Number.isInteger(expected) || expected < -1) throw new ValidationError(`expected revision must be an integer ≥ -1, 'no-stream' or 'any', got ${String(expected)}`, 'R-3');
  if (expected !== current) throw new ConcurrencyError(streamId, String(expected), current);
}

/** A stored row in the shape every backend can hand to the chain verifier (the port's RawStoredEvent); `undecodable` names why a compact row's body could not be read. */
export type RawEventRow = RawStoredEvent & { readonly undecodable?: string };

/**
 * Walk rows in position order and check every link: contiguous positions,
 * per-stream contiguous revisions, canonical bytes, prev-hash links, own hash,
 * and the tail against the anchor. Stops at the first bad position.
 */
export function verifyRawRows(rows: Iterable<RawEventRow>, anchor: LogHead | undefined): ChainReport {
  const problems: VerifyProblem[] = [];
  let expectedPosition = 1;
  let prevHash = GENESIS_HASH;
  const streamRevs = new Map<string, number>();
  let count = 0;
  for (const row of rows) {
    const problem = checkRow(row, expectedPosition, prevHash, streamRevs);
    if (problem) {
      problems.push({ position: row.position === expectedPosition ? row.position : expectedPosition, problem });
      break;
    }
    count += 1;
    prevHash = row.hash;
    expectedPosition += 1;
  }
  if (problems.length === 0) {
    const last = count === 0 ? undefined : { position: expectedPosition - 1, hash: prevHash };
    if (anchor && (!last || anchor.position > last.position)) {
      problems.push({ position: (last?.position ?? 0) + 1, problem: `log truncated: the chain head anchor names position ${anchor.position}, but the log ends at ${last?.position ?? 0}` });
    } else if (anchor && last && (anchor.position !== last.position || anchor.hash !== last.hash)) {
      problems.push({ position: last.position, problem: `chain head anchor (${anchor.position}, ${anchor.hash.slice(0, 12)}) does not match the last event` });
    } else if (!anchor && last) {
      problems.push({ position: last.position, problem: 'chain head anchor is missing' });
    }
  }
  return { ok: problems.length === 0, events: count, headHash: prevHash, problems };
}

function checkRow(row: RawEventRow, expectedPosition: number, prevHash: string, streamRevs: Map<string, number>): string | null {
  if (row.position !== expectedPosition) {
    return row.position > expectedPosition ? `event missing: expected position ${expectedPosition}, found ${row.position}` : `position ${row.position} out of order`;
  }
  if (row.undecodable !== undefined) return row.undecodable;
  const expectedRev = (streamRevs.get(row.streamId) ?? -1) + 1;
  if (row.revision !== expectedRev) return `stream '${row.streamId}' revision ${row.revision}, expected ${expectedRev} (reordered or removed event)`;
  streamRevs.set(row.streamId, row.revision);
  if (row.prevHash !== prevHash) return 'previous-hash link broken (an earlier event was edited, removed or reordered)';
  let data: unknown;
  let metadata: unknown;
  try {
    data = JSON.parse(row.dataJson);
    metadata = JSON.parse(row.metadataJson);
  } catch {
    return 'stored JSON is not parseable';
  }
  let canonicalData: string;
  let canonicalMeta: string;
  try {
    canonicalData = canonicalJson(data);
    canonicalMeta = canonicalJson(metadata);
  } catch (err) {
    return `stored JSON is not canonical: ${(err as Error).message}`;
  }
  if (canonicalData !== row.dataJson || canonicalMeta !== row.metadataJson) return 'stored bytes are not canonical JSON (edited)';
  const meta = EventMetadataSchema.safeParse(metadata);
  if (!meta.success) return `metadata invalid: ${formatZodError(meta.error)}`;
  const hash = computeEventHash({
    position: row.position,
    streamId: row.streamId,
    revision: row.revision,
    type: row.type,
    schemaVersion: row.schemaVersion,
    data: data as JsonValue,
    metadata: meta.data,
    prevHash: row.prevHash,
  });
  if (hash !== row.hash) return 'hash mismatch (event edited)';
  return null;
}
