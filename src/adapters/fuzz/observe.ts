import { shardValues } from '../../projections/sharded.js';
/**
 * What the fuzzer reads from a build on disk, in-process (much faster than a child per query):
 * the folded log, the integration head's tree, `verify`, and — right after a crash — which calls
 * the log records results for and which attempt commits already sit on their branches.
 */
import { readFileSync, existsSync } from 'node:fs';
import { buildPaths, openBuildLog } from '../build-dir.js';
import { readEventsFrom } from '../log/paging.js';
import { findAttemptCommit, treeOf } from '../git/git.js';
import type { BuildState } from '../../projections/build-state.js';
import { fingerprintOf, foldLog, recordedCallKeys, type CrashState, type Delivery, type LedgerCall, type ObservedBuild } from '../../commands/fuzz-compare.js';
import { verifyBuild } from '../app/verify-build.js';

/** Fold the build's log, whichever backend it records (the build must not be running). */
export async function foldBuild(repo: string): Promise<ReturnType<typeof foldLog>> {
  const log = await openBuildLog(buildPaths({ repo }));
  try {
    return foldLog(await readEventsFrom(log));
  } finally {
    await log.close();
  }
}

/** The comparable facts of a finished build. */
export async function observeBuild(repo: string): Promise<ObservedBuild> {
  const folded = await foldBuild(repo);
  const { state } = folded;
  const fingerprint = fingerprintOf(folded);
  const integrationTree = state.integrationHead ? await treeOf(repo, state.integrationHead) : null;
  const v = await verifyBuild({ repo, cwd: repo, env: {}, verbose: false, stderr: () => {} });
  const first = v.problems[0];
  return { fingerprint, concurrency: state.build?.settings.concurrency ?? 1, integrationTree, verifyOk: v.ok, ...(first ? { verifyProblem: `position ${first.position}: ${first.problem}` } : {}) };
}

/** Right after a SIGKILL: the calls with recorded results, and attempt commits observable on their branches. */
export async function observeCrash(repo: string): Promise<CrashState & { state: BuildState }> {
  const { state, finishedAttempts } = await foldBuild(repo);
  const observable = new Set<string>();
  for (const a of shardValues(state.attempts)) {
    if (a.status !== 'started' || state.nodes[a.nodeId]?.kind !== 'writable') continue;
    // Attempt branches live in the integrator's repository.
    if (await findAttemptCommit(buildPaths({ repo }).integrator, a.branch, a.baseHead)) observable.add(`${state.build!.buildId}:${a.attemptId}`);
  }
  return { state, recorded: recordedCallKeys(state, finishedAttempts), observable };
}

const ledgerLines = (path: string): { kind: string; key?: string; notification?: { notifier?: unknown; kind?: unknown; events?: { position?: unknown }[] } }[] =>
  (existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l)) : []);

/** The calls an effects ledger file records (missing file: none). */
export function readLedgerCalls(path: string): LedgerCall[] {
  return ledgerLines(path).filter((e) => e.kind === 'planner' || e.kind === 'worker').map((e) => ({ kind: e.kind as 'planner' | 'worker', key: e.key! }));
}

/**
 * The notifications a ledger file records: a notifier of a fuzzed build may append each
 * notification it receives, as `{"kind":"notification","notification":<what it read on stdin>}`,
 * to the file `LONGBUILD_EFFECTS_LEDGER` names; the fuzzer then audits deliveries against the log.
 */
export function readLedgerDeliveries(path: string): Delivery[] {
  return ledgerLines(path).filter((e) => e.kind === 'notification' && e.notification !== undefined).map((e) => ({
    notifier: Number(e.notification!.notifier), kind: String(e.notification!.kind),
    positions: (e.notification!.events ?? []).map((x) => Number(x.position)),
  }));
}
