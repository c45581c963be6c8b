import { CorruptLogError, StorageError } from '../../../events/errors.js';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { readEventsFrom } from '../../log/paging.js';
import { eventLeafHash } from '../../../events/merkle.js';
import { logLeavesOf } from '../../transparency/notary.js';
import { TreeStore } from '../../transparency/tree-store.js';
import { checkCheckpoints, readCheckpointNotes, readKeptHead, schemaProblems, storedPosition } from '../../app/verify-build.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog, openBuildProjections } from '../../app/build-log.js';
import type { CommandContext } from '../types.js';
import { withLease } from '../../app/control.js';

export interface RebuildOutput {
  readonly events: number;
  readonly projectionsSha256: string;
  /** Leaves of the Merkle tree cache (tree.db) built again from the log. */
  readonly treeLeaves: number;
}

/** Verify the chain, then drop and refold every projection (one transaction: all or nothing). */
export async function run(ctx: CommandContext): Promise<RebuildOutput> {
  // Under the controller lease: dropping the tables while a run folds into them would leave them
  // half of each; with a run live, rebuild exits 3 and changes nothing.
  return withLease(ctx, () => rebuild(ctx));
}

async function rebuild(ctx: CommandContext): Promise<RebuildOutput> {
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    // A cache that is not a database any more is moved aside and made again from the log.
    const seen = existsSync(paths.projections) ? asideIfDamaged(paths.projections, () => storedPosition(paths), 0, warnOf(ctx)) : 0;
    const kept = readKeptHead(paths, ctx.env as NodeJS.ProcessEnv);
    const notes = readCheckpointNotes(paths);
    const chain = await log.verifyChain();
    // Only the prefix the chain walk verified (a live run may have appended since).
    const all = (await readEventsFrom(log)).slice(0, chain.events);
    // the projections are never refolded from a log that is shorter than what they or a
    // signed checkpoint saw, that fails a schema, or that a signed checkpoint does not vouch for.
    const problems = [...chain.problems];
    if (problems.length === 0) {
      if (seen > all.length) problems.push({ position: all.length + 1, problem: `log truncated: the projections have seen position ${seen}, but the log ends at ${all.length}` });
      problems.push(...schemaProblems(all), ...checkCheckpoints(paths, all, all.map((e) => eventLeafHash(e.hash)), { notes, ...(kept ? { kept } : {}) }).problems);
    }
    const first = problems.sort((a, b) => a.position - b.position)[0];
    if (first) throw new CorruptLogError(first.position, `${first.problem}; refusing to rebuild projections from this log`);
    const store = openBuildProjections(paths);
    try {
      // One transaction, all or nothing: the whole log is read before the projections are dropped.
      const events = store.rebuild(all);
      // The Merkle tree cache too: proofs are made from it.
      const openTree = (): TreeStore => TreeStore.open(paths.tree, logLeavesOf(log));
      const tree = asideIfDamaged(paths.tree, openTree, null, warnOf(ctx)) ?? openTree();
      let treeLeaves: number;
      try {
        tree.truncate(0);
        treeLeaves = await tree.catchUp(log, all.length);
      } finally {
        tree.close();
      }
      return { events, projectionsSha256: store.dumpSha256(), treeLeaves };
    } finally {
      store.close();
    }
  } finally {
    await log.close();
  }
}

export function render(data: RebuildOutput): string {
  return `rebuilt projections from ${data.events} events\nprojections sha256 ${data.projectionsSha256}\nrebuilt the Merkle tree cache (tree.db): ${data.treeLeaves} leaves\n`;
}

/**
 * `open()`, or — when the cache file at `path` is damaged (not a database, corrupt) — the file
 * (and its -wal and -shm) moved aside to `PATH.damaged`, said in one line, and `fresh` returned:
 * the caller makes it again from the log. Any other failure is thrown as it is.
 */
function asideIfDamaged<T, F>(path: string, open: () => T, fresh: F, warn: (line: string) => void): T | F {
  try {
    return open();
  } catch (err) {
    if (!(err instanceof StorageError) || err.problem !== 'damaged' || err.path !== path) throw err;
    renameSync(path, `${path}.damaged`);
    for (const side of ['-wal', '-shm']) rmSync(`${path}${side}`, { force: true });
    warn(`${path} was damaged (${err.detail}): moved aside to ${path}.damaged, made again from the log`);
    return fresh;
  }
}

const warnOf = (ctx: CommandContext) => (line: string): void => ctx.stderr(`longbuild: ${line}\n`);
