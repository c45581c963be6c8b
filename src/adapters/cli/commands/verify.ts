import type { BuildPaths } from '../../build-dir.js';
import { existsSync } from 'node:fs';
import type { VerifyProblem } from '../../../events/log.js';
import { LongbuildError } from '../../../events/errors.js';
import { ProjectionStore } from '../../../projections/engine.js';
import { allProjections } from '../../../projections/registry.js';
import type { EventLog } from '../../../events/log.js';
import { catchUpFromLog, readEventsFrom } from '../../log/paging.js';
import { openBuildLog, openBuildProjections, pathsOf } from '../open-build.js';
import type { CommandContext } from '../types.js';
import { join } from 'node:path';
import { decideRefRepairs } from '../../../commands/refs.js';
import type { BuildState } from '../../../projections/build-state.js';
import { buildProjection } from '../../../projections/build-projection.js';
import { observeRefs } from '../../controller/git-binding.js';

export interface VerifyOutput {
  readonly ok: boolean;
  readonly events: number;
  readonly headHash: string;
  /** SHA-256 of the canonical dump of the rebuilt projections (null when the chain is broken). */
  readonly projectionsSha256: string | null;
  readonly problems: VerifyProblem[];
}

/**
 * walk the chain; catch the stored projections up (they are a cache, as every
 * reading command does) and compare their dump with a rebuild from scratch. A projection that
 * has seen a later position than the log holds means the log's tail was cut.
 */
export async function run(ctx: CommandContext): Promise<VerifyOutput> {
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    const chain = await log.verifyChain();
    const problems: VerifyProblem[] = [...chain.problems];
    const headPosition = (await log.head())?.position ?? 0;
    let projectionsSha256: string | null = null;
    if (chain.ok) {
      const rebuilt = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery: 0 });
      try {
        rebuilt.rebuild(await readEventsFrom(log));
        projectionsSha256 = rebuilt.dumpSha256();
        if (existsSync(paths.projections)) problems.push(...(await compareStored(paths, log, headPosition, rebuilt)));
        problems.push(...(await refsProblems(paths, rebuilt.state<BuildState>(buildProjection.name), headPosition)));
      } finally {
        rebuilt.close();
      }
    }
    return { ok: problems.length === 0, events: chain.events, headHash: chain.headHash, projectionsSha256, problems };
  } finally {
    await log.close();
  }
}

/** the integration ref (integrator's and published) and the attempt branches agree with the log. */
async function refsProblems(paths: BuildPaths, state: BuildState, headPosition: number): Promise<VerifyProblem[]> {
  if (!state.build || !existsSync(join(paths.integrator, 'HEAD'))) return [];
  const observed = await observeRefs(paths.repo, paths.integrator, state.build.integrationRef, true);
  return decideRefRepairs(state, observed).map((r) => ({
    position: headPosition,
    problem: `the ${r.where === 'published' ? 'published' : "integrator's"} ref ${r.ref} is at ${r.found ?? '(missing)'} but the log says ${r.expected ?? '(no such ref)'} (R-33; the next \`longbuild step\` or \`run\` resets it from the log and records the repair)`,
  }));
}

async function compareStored(paths: BuildPaths, log: EventLog, headPosition: number, rebuilt: ProjectionStore): Promise<VerifyProblem[]> {
  const stored = openBuildProjections(paths);
  try {
    const seen = stored.highestPosition();
    if (seen > headPosition) {
      return [{ position: headPosition + 1, problem: `log truncated: the projections have seen position ${seen}, but the log ends at ${headPosition}` }];
    }
    try {
      await catchUpFromLog(stored, log);
    } catch (err) {
      if (err instanceof LongbuildError && 'position' in err) return [{ position: Number(err.position), problem: err.message }];
      throw err;
    }
    const a = stored.dump();
    const b = rebuilt.dump();
    if (a === b) return [];
    return [{ position: stored.position(), problem: `stored projections differ from a rebuild: ${firstDifference(a, b)}; run \`longbuild rebuild\`` }];
  } finally {
    stored.close();
  }
}

function firstDifference(stored: string, rebuilt: string): string {
  const a = stored.split('\n');
  const b = rebuilt.split('\n');
  let table = '';
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const line = b[i] ?? a[i] ?? '';
    if (line.startsWith('{"columns"')) table = (JSON.parse(line) as { table: string }).table;
    if (a[i] !== b[i]) return `table ${table || '?'}: stored ${a[i] ?? '(no row)'} vs rebuilt ${b[i] ?? '(no row)'}`;
  }
  return 'dumps differ';
}

export function render(data: VerifyOutput): string {
  const lines = [
    `${data.ok ? 'ok' : 'FAILED'}: ${data.events} events, head ${data.headHash}`,
    `projections sha256 ${data.projectionsSha256 ?? '(not computed: the chain is broken)'}`,
    ...data.problems.map((p) => `problem at position ${p.position}: ${p.problem}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function failure(data: VerifyOutput): string | undefined {
  const first = data.problems[0];
  return first ? `verify failed at position ${first.position}: ${first.problem}` : undefined;
}
