import { CorruptLogError, ValidationError } from '../../events/errors.js';
import type { EventLog } from '../../events/event-log.js';
import type { TransferableEventLog } from './verbatim.js';

export interface TransferReport {
  readonly events: number;
  readonly headHash: string;
  /** The target already held this many events of the source (an interrupted copy): copying went on from there. */
  readonly resumedAt: number;
}

/**
 * Copy every event of `source` into `target` exactly as stored — positions, revisions, metadata,
 * hashes — so the target's hash chain is the source's, byte for byte. The copy commits page by
 * page, so an interrupted one leaves a prefix of the source: a target that holds one (its head is
 * the source's event at that position, same hash, hence the same chain) is resumed from there;
 * any other non-empty target is refused. With `upTo`, only the first `upTo` events are copied. The source is verified first (a corrupt log is not
 * copied), the target is verified after, and the two head hashes must agree. Events the source
 * gains during the copy are not copied.
 */
export async function transferLog(source: EventLog, target: TransferableEventLog, options: { pageSize?: number; upTo?: number } = {}): Promise<TransferReport> {
  const pageSize = options.pageSize ?? 1000;
  const verified = await source.verifyChain();
  // `upTo`: the source's first events only (a fork's prefix, R-41), its head the event there.
  const cut = options.upTo !== undefined && options.upTo < verified.events ? (await source.readAll({ from: options.upTo, limit: 1 }))[0] : undefined;
  const sourceReport = cut === undefined ? verified : { ...verified, events: cut.position, headHash: cut.hash };
  if (!sourceReport.ok) {
    const first = sourceReport.problems[0]!;
    throw new CorruptLogError(first.position, `source log does not verify, nothing copied: ${first.problem}`);
  }
  const head = await target.head();
  let copied = 0;
  if (head !== null) {
    const [same] = head.position <= sourceReport.events ? await source.readAll({ from: head.position, limit: 1 }) : [];
    if (same?.hash !== head.hash) {
      throw new ValidationError(`transfer target is not empty and is not a copy of this log (its head, position ${head.position}, is ${head.hash.slice(0, 12)}${same ? `; this log's is ${same.hash.slice(0, 12)}` : `; this log has ${sourceReport.events} events`}): give an empty log`, 'R-4');
    }
    copied = head.position; // an interrupted copy of this very log: go on from its head
  }
  const resumedAt = copied;
  while (copied < sourceReport.events) {
    const page = await source.readAll({ from: copied + 1, limit: Math.min(pageSize, sourceReport.events - copied) });
    if (page.length === 0) throw new CorruptLogError(copied + 1, 'source log ended while copying');
    await target.importVerbatim(page);
    copied += page.length;
  }
  const targetReport = await target.verifyChain();
  if (!targetReport.ok) {
    const first = targetReport.problems[0]!;
    throw new CorruptLogError(first.position, `target log does not verify after the copy: ${first.problem}`);
  }
  if (targetReport.events !== sourceReport.events || targetReport.headHash !== sourceReport.headHash) {
    throw new CorruptLogError(targetReport.events, `target head ${targetReport.headHash} differs from source head ${sourceReport.headHash}`);
  }
  return { events: copied, headHash: targetReport.headHash, resumedAt };
}
