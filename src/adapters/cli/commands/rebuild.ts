import { CorruptLogError } from '../../../events/errors.js';
import { readEventsFrom } from '../../log/paging.js';
import { openBuildLog, openBuildProjections, pathsOf } from '../open-build.js';
import type { CommandContext } from '../types.js';

export interface RebuildOutput {
  readonly events: number;
  readonly projectionsSha256: string;
}

/** Verify the chain, then drop and refold every projection (one transaction: all or nothing). */
export async function run(ctx: CommandContext): Promise<RebuildOutput> {
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    const chain = await log.verifyChain();
    const first = chain.problems[0];
    if (first) throw new CorruptLogError(first.position, `${first.problem}; refusing to rebuild projections from a corrupt log`);
    const store = openBuildProjections(paths);
    try {
      // One transaction, all or nothing: the whole log is read before the projections are dropped.
      const events = store.rebuild(await readEventsFrom(log));
      return { events, projectionsSha256: store.dumpSha256() };
    } finally {
      store.close();
    }
  } finally {
    await log.close();
  }
}

export function render(data: RebuildOutput): string {
  return `rebuilt projections from ${data.events} events\nprojections sha256 ${data.projectionsSha256}\n`;
}
