import { UsageError, ValidationError } from '../../../events/errors.js';
import { recordLogSpec, recordedLogSpec } from '../../build-dir.js';
import { openEventLog, redact } from '../../log/open-log.js';
import { transferLog } from '../../log/transfer.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withControl } from '../../app/control.js';

export const flags: Record<string, FlagSpec> = { to: { type: 'string' }, switch: { type: 'boolean' } };

export interface ExportOutput {
  readonly events: number;
  readonly headHash: string;
  /** The target log spec, password redacted. */
  readonly to: string;
  /** Whether the build now uses the target log (`--switch`). */
  readonly switched: boolean;
  /** Events an interrupted earlier copy had already put there (the copy went on after them). */
  readonly resumedAt?: number;
}

/**
 * Copy the build's log, event for event, into an empty log of any backend — or one an
 * interrupted copy of this log left, which is resumed: same
 * positions, metadata and hashes, so the target's chain and head hash are the source's. Runs under
 * the controller lease, so no controller appends during the copy. With `--switch` the build
 * directory then records the target, and every later command (and the local projections, which
 * continue the same chain) uses it; the old log is left untouched as a frozen copy.
 */
export async function run(ctx: CommandContext): Promise<ExportOutput> {
  const to = ctx.flags.to;
  if (typeof to !== 'string' || to === '') throw new UsageError('export: --to SPEC is required (postgres:URL, eventstore:URL or sqlite:PATH)');
  const paths = pathsOf(ctx);
  if (recordedLogSpec(paths) === to) throw new ValidationError(`export: the build's log already is ${redact(to)}; give another, empty log`);
  return withControl(ctx, async () => {
    const source = await openBuildLog(paths);
    try {
      const target = await openEventLog(to, {});
      try {
        const report = await transferLog(source, target);
        const switched = ctx.flags.switch === true;
        if (switched && recordedLogSpec(paths) !== to) recordLogSpec(paths, to);
        return { events: report.events, headHash: report.headHash, to: redact(to), switched, ...(report.resumedAt > 0 ? { resumedAt: report.resumedAt } : {}) };
      } finally {
        await target.close();
      }
    } finally {
      await source.close();
    }
  });
}

export function render(d: ExportOutput): string {
  return `exported ${d.events} events to ${d.to}, head ${d.headHash}${d.resumedAt !== undefined ? ` (an interrupted copy held the first ${d.resumedAt}; copying went on from there)` : ''}\n${d.switched ? 'the build now uses this log\n' : 'the build still uses its old log (pass --switch to move it)\n'}`;
}
