import { CorruptLogError, ValidationError } from '../../events/errors.js';
import type { EventLog } from '../../events/log.js';
import type { TransferableEventLog } from './verbatim.js';

export interface TransferReport {
  readonly events: number;
  readonly headHash: string;
}

/**
 * Copy every event of `source` into the empty `target` exactly as stored — positions, revisions,
 * metadata, hashes — so the target's hash chain is the source's, byte for byte. The source is
 * verified first (a corrupt log is not copied), the target is verified after, and the two head
 * hashes must agree. Events the source gains during the copy are not copied.
 */
export async function transferLog(source: EventLog, target: TransferableEventLog, options: { pageSize?: number } = {}): Promise<TransferReport> {
  const pageSize = options.pageSize ?? 1000;
  const sourceReport = await source.verifyChain();
  if (!sourceReport.ok) {
    const first = sourceReport.problems[0]!;
    throw new CorruptLogError(first.position, `source log does not verify, nothing copied: ${first.problem}`);
  }
  if ((await target.head()) !== null) throw new ValidationError('transfer target must be an empty log', 'R-4');
  let copied = 0;
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
  return { events: copied, headHash: targetReport.headHash };
}
