import { shardValues } from '../../projections/sharded.js';
/**
 * What the fuzzer reads from a build on disk, in-process (much faster than a child per query):
 * the folded log, the integration head's tree, `verify`, and — right after a crash — which calls
 * the log records results for and which attempt commits already sit on their branches.
 */
import { readFileSync, existsSync } from 'node:fs';
import { buildPaths } from '../build-dir.js';
import { SqliteEventLog } from '../log/sqlite-log.js';
import { findAttemptCommit, treeOf } from '../git/git.js';
import type { BuildState } from '../../projections/build-state.js';
import { fingerprintOf, foldLog, recordedCallKeys, type CrashState, type LedgerCall, type ObservedBuild } from '../../commands/fuzz-compare.js';
import type { CommandContext } from '../cli/types.js';

/** Fold the build's log (the build must not be running). */
export function foldBuild(repo: string): ReturnType<typeof foldLog> {
  const log = new SqliteEventLog({ path: buildPaths({ repo }).events });
  try {
    return foldLog(log.iterateAll());
  } finally {
    log.db.close();
  }
}

/** The comparable facts of a finished build. */
export async function observeBuild(repo: string): Promise<ObservedBuild> {
  const folded = foldBuild(repo);
  const { state } = folded;
  const fingerprint = fingerprintOf(folded);
  const integrationTree = state.integrationHead ? await treeOf(repo, state.integrationHead) : null;
  const verify = await import('../cli/commands/verify.js');
  const paths = buildPaths({ repo });
  const ctx: CommandContext = { dir: paths.dir, repo, cwd: repo, json: true, verbose: false, flags: {}, positionals: [], env: {}, stderr: () => {}, stdout: () => {} };
  const v = await verify.run(ctx);
  const first = v.problems[0];
  return { fingerprint, integrationTree, verifyOk: v.ok, ...(first ? { verifyProblem: `position ${first.position}: ${first.problem}` } : {}) };
}

/** Right after a SIGKILL: the calls with recorded results, and attempt commits observable on their branches. */
export async function observeCrash(repo: string): Promise<CrashState & { state: BuildState }> {
  const { state } = foldBuild(repo);
  const observable = new Set<string>();
  for (const a of shardValues(state.attempts)) {
    if (a.status !== 'started' || state.nodes[a.nodeId]?.kind !== 'writable') continue;
    // Attempt branches live in the integrator's repository.
    if (await findAttemptCommit(buildPaths({ repo }).integrator, a.branch, a.baseHead)) observable.add(`${state.build!.buildId}:${a.attemptId}`);
  }
  return { state, recorded: recordedCallKeys(state), observable };
}

/** The calls an effects ledger file records (missing file: none). */
export function readLedgerCalls(path: string): LedgerCall[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => {
    const e = JSON.parse(l) as { kind: 'planner' | 'worker'; key: string };
    return { kind: e.kind, key: e.key };
  });
}
