import type { BuildPaths } from '../build-dir.js';
import { existsSync } from 'node:fs';
import type { VerifyProblem } from '../../events/event-log.js';
import { LongbuildError } from '../../events/errors.js';
import { ProjectionStore } from '../../projections/engine.js';
import { allProjections } from '../../projections/all-projections.js';
import type { EventLog } from '../../events/event-log.js';
import { catchUpFromLog, readPages } from '../log/paging.js';
import { pathsOf } from './context.js';
import { openBuildLog, openBuildProjections } from './build-log.js';
import type { AppContext } from './context.js';
import { join } from 'node:path';
import { decideRefRepairs } from '../../commands/refs.js';
import { initialBuildState, type BuildState } from '../../projections/build-state.js';
import { graphRecordProblems } from '../../projections/graph-record.js';
import { driverPin, evidenceNamed } from '../audit/verifier.js';
import { auditTests } from '../audit/tests-audit.js';
import { forkLinks, type ForkLink } from '../fork/fork-link.js';
import { snapshotProblems } from '../../projections/snapshot-audit.js';
import { SqliteSnapshotStore } from '../../projections/snapshot-store.js';
import { buildProjection } from '../../projections/build-projection.js';
import { observeRefs } from '../controller/git-binding.js';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { StoredEvent } from '../../events/envelope.js';
import { UsageError, ValidationError } from '../../events/errors.js';
import { domainCatalogue } from '../../events/catalogue.js';
import { sha256Hex } from '../../events/hash.js';
import { eventLeafHash, hashLeaves, memoryTree, treeRoot } from '../../events/merkle.js';
import { TREE_PROBLEM, treeCacheProblems } from '../transparency/tree-store.js';
import { integratorDamage, integratorRecovery } from '../git/integrator-repo.js';
import { formatVerifierKey, parseVerifierKey, type VerifierKey } from '../../events/signed-note.js';
import { checkpointFiles, readCheckpoint } from '../transparency/notary.js';
import { signedHeadPath } from '../transparency/keys.js';

/** What `verify` checks besides the log itself (the CLI's flags). */
export interface VerifyOptions {
  /** A checkpoint file an earlier verify kept: the log must extend it (a path, from `cwd`). */
  readonly since?: string;
  /** `SIZE:ROOT`: the tree head the log must have at SIZE. */
  readonly expectHead?: string;
  /** The verifier key (or its file) the signed checkpoints must verify with. */
  readonly key?: string;
  /** Refold this many time-travel snapshots, chosen by `seed` (default: all). */
  readonly sample?: number;
  readonly seed?: number;
}

export interface VerifyOutput {
  readonly ok: boolean;
  readonly events: number;
  readonly headHash: string;
  /** SHA-256 of the canonical dump of the rebuilt projections (null when the chain is broken). */
  readonly projectionsSha256: string | null;
  readonly problems: VerifyProblem[];
  /** Signed checkpoints checked against the log's Merkle tree. */
  readonly checkpoints: number;
  /** The tree head at the log's size: base64 root. */
  readonly treeRoot: string | null;
  /** Time-travel snapshots refolded, and the seed of the sample when `--sample` chose them. */
  readonly snapshots: { readonly checked: number; readonly seed: number | null };
  /** The build advanced while verify ran: the log was verified as of `events`; caches and refs not compared. */
  readonly live: boolean;
  /** A fork's links to its parents, one per ForkedFrom; absent when the build is no fork. */
  readonly forks?: readonly ForkLink[];
}

/**
 * walk the chain; catch the stored projections up (they are a cache, as every
 * reading command does) and compare their dump with a rebuild from scratch. A projection that
 * has seen a later position than the log holds means the log's tail was cut.
 */
export async function verifyBuild(ctx: AppContext, options: VerifyOptions = {}): Promise<VerifyOutput> {
  const paths = pathsOf(ctx);
  const expectHead = options.expectHead !== undefined ? parseExpectHead(options.expectHead) : null;
  if (options.sample !== undefined && (!Number.isInteger(options.sample) || options.sample < 1)) throw new UsageError('verify: --sample must be a positive number of snapshots');
  const seed = options.seed ?? Date.now() % 1_000_000;
  const sample = options.sample !== undefined ? { count: options.sample, seed } : undefined;
  let snapshots = { checked: 0, seed: sample ? seed : null };
  const log = await openBuildLog(paths);
  try {
    // The projections' position is read before the log: the log only grows, so a live run never
    // makes it look cut (one consistent view per store; the chain walk is one read snapshot).
    const seenBefore = existsSync(paths.projections) ? storedPosition(paths) : 0;
    const kept = readKeptHead(paths, ctx.env as NodeJS.ProcessEnv);
    const notes = readCheckpointNotes(paths);
    const chain = await log.verifyChain();
    const problems: VerifyProblem[] = [...chain.problems];
    const headPosition = chain.events;
    let projectionsSha256: string | null = null;
    let checkpoints = 0;
    let treeRoot: string | null = null;
    let live = false;
    let forks: ForkLink[] | undefined;
    if (chain.ok) {
      const events: StoredEvent[] = [];
      for await (const page of readPages(log, 1, headPosition)) events.push(...page);
      problems.push(...schemaProblems(events));
      const leaves = events.map((e) => eventLeafHash(e.hash));
      treeRoot = hashLeaves(leaves).toString('base64');
      const signed = checkCheckpoints(paths, events, leaves, {
        ...(options.key !== undefined ? { key: options.key } : {}),
        ...(options.since !== undefined ? { since: resolve(ctx.cwd, options.since) } : {}),
        ...(expectHead ? { expectHead } : {}),
        notes, ...(kept ? { kept } : {}),
      });
      checkpoints = signed.checked;
      problems.push(...signed.problems);
      if (seenBefore > headPosition) problems.push({ position: headPosition + 1, problem: `log truncated: the projections have seen position ${seenBefore}, but the log ends at ${headPosition}` });
      problems.push(...driverProblems(paths, events), ...evidenceProblems(paths, events), ...testsProblems(paths, events));
      const linked = await forkLinks(events);
      if (linked.links.length > 0) forks = linked.links;
      problems.push(...linked.problems);
      const graph = graphRecordProblems(events, initialBuildState);
      if (graph) problems.push(graph);
      const rebuilt = ProjectionStore.open(':memory:', allProjections(), { snapshotEvery: 0, eventIndex: true });
      try {
        rebuilt.rebuild(events);
        projectionsSha256 = rebuilt.dumpSha256();
        // The caches (projections, snapshots, the Merkle tree) and the refs are compared with the
        // log as read; a live run moves them on meanwhile (the tree takes a run's next leaf right
        // after its event). A disagreement counts only when the log stood still and it is still
        // there a moment later (a promotion moves the ref just before its event).
        const cacheChecks = async (): Promise<VerifyProblem[]> => {
          const found: VerifyProblem[] = [...treeCacheProblems(paths.tree, leaves)];
          if (existsSync(paths.projections) && seenBefore <= headPosition) {
            found.push(...(await compareStored(paths, log, headPosition, rebuilt)));
            const audit = auditSnapshots(paths, events, sample);
            snapshots = { checked: audit.checked, seed: snapshots.seed };
            found.push(...audit.problems);
          }
          found.push(...(await refsProblems(paths, rebuilt.state<BuildState>(buildProjection.name), headPosition)));
          return found;
        };
        let found = await cacheChecks();
        const advanced = async (): Promise<boolean> => ((await log.head())?.position ?? 0) !== headPosition;
        if (found.length > 0 && !(await advanced())) {
          await new Promise((r) => setTimeout(r, 300));
          if (!(await advanced())) found = await cacheChecks();
        }
        if (await advanced()) {
          live = true;
          found = [];
        }
        problems.push(...found);
      } finally {
        rebuilt.close();
      }
    }
    problems.sort((a, b) => a.position - b.position);
    // Rebuilding is the remedy only when the log itself passed every check.
    if (problems.length > 0 && problems.every((p) => p.problem.startsWith('stored projections differ') || p.problem.startsWith('time-travel snapshot') || p.problem.startsWith(TREE_PROBLEM))) {
      problems[0] = { ...problems[0]!, problem: `${problems[0]!.problem}; the log checks out, so \`longbuild rebuild\` refolds the projections (and snapshots, and the Merkle tree) from it` };
    }
    return { ok: problems.length === 0, events: chain.events, headHash: chain.headHash, projectionsSha256, problems, checkpoints, treeRoot, snapshots, live, ...(forks !== undefined ? { forks } : {}) };
  } finally {
    await log.close();
  }
}

/** the stored time-travel snapshots are folds of this log (all, or a seeded sample). */
function auditSnapshots(paths: BuildPaths, events: readonly StoredEvent[], sample: { count: number; seed: number } | undefined): { checked: number; problems: VerifyProblem[] } {
  const stored = openBuildProjections(paths);
  try {
    return snapshotProblems(allProjections(), new SqliteSnapshotStore(stored.db), events, sample);
  } finally {
    stored.close();
  }
}

export function storedPosition(paths: BuildPaths): number {
  const stored = openBuildProjections(paths);
  try {
    return stored.highestPosition();
  } finally {
    stored.close();
  }
}

/** `SIZE:ROOT`, the root in base64 (as in a checkpoint) or hex. */
function parseExpectHead(text: string): { size: number; root: Buffer } {
  const m = /^([0-9]+):([A-Za-z0-9+/=]+)$/.exec(text);
  const root = m ? (/^[0-9a-f]{64}$/.test(m[2]!) ? Buffer.from(m[2]!, 'hex') : Buffer.from(m[2]!, 'base64')) : Buffer.alloc(0);
  if (!m || root.length !== 32) throw new UsageError(`verify: --expect-head must be SIZE:ROOT (the root in base64 as a checkpoint prints it, or hex), got '${text.slice(0, 80)}'`);
  return { size: Number(m[1]), root };
}

/** R-28 on stored bytes: every event is of a known type and its data fits that type's schema. */
export function schemaProblems(events: readonly StoredEvent[]): VerifyProblem[] {
  for (const e of events) {
    try {
      domainCatalogue.validate(e.type, e.schemaVersion, e.data);
    } catch (err) {
      if (err instanceof ValidationError) return [{ position: e.position, problem: `event fails the catalogue: ${err.message}` }];
      throw err;
    }
  }
  return [];
}

/**
 * every signed checkpoint in the build verifies under the build's key (or `--key`) and its
 * root is the log's Merkle root at its size; so does a checkpoint the auditor held (`--since`)
 * and an expected tree head (`--expect-head`). A log rewritten consistently, even with every
 * checkpoint re-signed by another key, fails against a key or checkpoint from before.
 */
export interface CheckpointChecks {
  /** `--key`: the log's verifier key as the auditor holds it (a vkey or a file). */
  readonly key?: string;
  /** `--since`: a checkpoint file held before. */
  readonly since?: string;
  readonly expectHead?: { size: number; root: Buffer };
  /** Checkpoint files read before the log was (a live run signs new ones meanwhile); default: read now. */
  readonly notes?: readonly CheckpointNote[];
  /** The copy of the last checkpoint this machine signed (read, like `notes`, before the log). */
  readonly kept?: { readonly file: string; readonly note: string };
}

export function checkCheckpoints(
  paths: BuildPaths, events: readonly StoredEvent[], leaves: readonly Buffer[], opts: CheckpointChecks = {},
): { checked: number; problems: VerifyProblem[] } {
  const { key: keyArg, since, expectHead, kept } = opts;
  const preread = opts.notes ?? readCheckpointNotes(paths);
  const init = events[0]?.type === 'BuildInitialized' ? (events[0].data as { buildId: string; signing?: { vkey: string } }) : undefined;
  const problems: VerifyProblem[] = [];
  let key: VerifierKey | null = null;
  try {
    const text = keyArg === undefined ? init?.signing?.vkey : existsSync(keyArg) ? readFileSync(keyArg, 'utf8').trim() : keyArg;
    if (text !== undefined) key = parseVerifierKey(text);
  } catch (err) {
    throw new UsageError(`verify: --key must be a verifier key or a file holding one: ${(err as Error).message}`);
  }
  if (key && init?.signing && keyArg !== undefined && key.name === init.buildId && init.signing.vkey !== formatVerifierKey(key.name, key.type, key.publicKey)) {
    problems.push({ position: 1, problem: `the log records the signing key ${init.signing.vkey}, not the key given with --key (the log was rewritten under another key)` });
  }
  // Every complete subtree hashed once: a root at any checkpoint's size is then O(log n).
  const tree = memoryTree(leaves);
  const rootAt = (size: number): Buffer => treeRoot(tree, size);
  const matched: number[] = [];
  // A mismatch lies after the largest smaller checkpoint that matched: that narrows the position.
  const after = (size: number): number => 1 + Math.max(0, ...matched.filter((m) => m < size));
  const check = (note: string, file: string): void => {
    if (!key || !init) return;
    let cp;
    try {
      cp = readCheckpoint(note, key, init.buildId, file);
    } catch (err) {
      // A damaged file, not a rewritten log, when the log checks out otherwise: the way out is named.
      problems.push({ position: 1, problem: `checkpoint ${file} does not verify: ${(err as Error).message}; if only the file was damaged, \`longbuild run\` writes it again from this machine's copy of the last signature when it has one, else move it aside (mv ${file} ${file}.damaged) and run again` });
      return;
    }
    if (cp.size > leaves.length) problems.push({ position: leaves.length + 1, problem: `log truncated: ${file} was signed at size ${cp.size}, but the log ends at ${leaves.length}` });
    else if (!rootAt(cp.size).equals(cp.root)) problems.push({ position: after(cp.size), problem: `the log is not the one ${file} signed at size ${cp.size} (its Merkle root differs: rewritten at or after position ${after(cp.size)})` });
    else matched.push(cp.size);
  };
  const files = preread;
  for (const f of files) check(f.note, f.file);
  if (init && !init.signing && keyArg === undefined) problems.push({ position: 1, problem: 'the log names no signing key: nothing vouches for it (a build from before signed checkpoints, or a stripped rewrite)' });
  else if (init?.signing && files.length === 0) problems.push({ position: 1, problem: `no signed checkpoint in ${paths.checkpoints} (deleted?)` });
  if (since !== undefined) {
    if (!existsSync(since)) throw new UsageError(`verify: --since ${since} does not exist`);
    check(readFileSync(since, 'utf8'), since);
  }
  // The copy of the last checkpoint this machine signed, outside the build directory; one
  // that does not verify as this build's belongs to another build once kept at this path.
  if (kept !== undefined && key && init) {
    let ours = true;
    try {
      readCheckpoint(kept.note, key, init.buildId, kept.file);
    } catch {
      ours = false;
    }
    if (ours) check(kept.note, kept.file);
  }
  if (expectHead) {
    if (expectHead.size > leaves.length) problems.push({ position: leaves.length + 1, problem: `log truncated: the expected head has size ${expectHead.size}, the log ends at ${leaves.length}` });
    else if (!rootAt(expectHead.size).equals(expectHead.root)) problems.push({ position: 1, problem: `the log's Merkle root at size ${expectHead.size} is ${rootAt(expectHead.size).toString('base64')}, not the expected ${expectHead.root.toString('base64')}` });
  }
  return { checked: files.length + (since !== undefined ? 1 : 0), problems };
}

export interface CheckpointNote {
  readonly size: number;
  readonly file: string;
  readonly note: string;
}

/** The copy of the last checkpoint this machine signed for the build, read now; undefined when none. */
export function readKeptHead(paths: BuildPaths, env: NodeJS.ProcessEnv): { file: string; note: string } | undefined {
  const file = signedHeadPath(env, paths.dir);
  try {
    return { file, note: readFileSync(file, 'utf8') };
  } catch {
    return undefined;
  }
}

/** The build's checkpoint files and their text, read now. */
export function readCheckpointNotes(paths: BuildPaths): CheckpointNote[] {
  return checkpointFiles(paths).map((f) => ({ size: f.size, file: f.file, note: f.note() }));
}

/** The driver file still has the SHA-256 the log pinned (BuildInitialized, or a fork's ForkedFrom). */
function driverProblems(paths: BuildPaths, events: readonly StoredEvent[]): VerifyProblem[] {
  const pin = driverPin(events);
  if (pin === null) return [];
  if (!existsSync(paths.driver)) return [{ position: pin.position, problem: `${paths.driver} is missing` }];
  return sha256Hex(readFileSync(paths.driver)) === pin.sha256 ? [] : [{ position: pin.position, problem: `${paths.driver} does not match the SHA-256 pinned in ${pin.by} (edited)` }];
}

/** Every evidence file the log names (verification and worker output) is present and hashes to its name. */
function evidenceProblems(paths: BuildPaths, events: readonly StoredEvent[]): VerifyProblem[] {
  const seen = new Set<string>();
  for (const e of events) {
    for (const sha of evidenceNamed(e)) {
      if (seen.has(sha)) continue;
      seen.add(sha);
      const file = join(paths.evidence, sha);
      if (!existsSync(file)) return [{ position: e.position, problem: `evidence file ${sha} the log names is missing from ${paths.evidence}` }];
      if (sha256Hex(readFileSync(file)) !== sha) return [{ position: e.position, problem: `evidence file ${sha} does not hash to its name (edited)` }];
    }
  }
  return [];
}

/** Every test summary read again from its evidence, every promotion held to the ratchet. */
function testsProblems(paths: BuildPaths, events: readonly StoredEvent[]): VerifyProblem[] {
  const r = auditTests(events, (sha) => {
    const file = join(paths.evidence, sha);
    return /^[0-9a-f]{64}$/.test(sha) && existsSync(file) ? readFileSync(file) : null;
  });
  return r.problem === null ? [] : [{ position: r.problem.position, problem: `tests (R-52): ${r.problem.message}` }];
}

/**
 * the integration ref (integrator's and published) and the attempt branches agree with the
 * log; and the integrator holds every object of the integration head.
 */
async function refsProblems(paths: BuildPaths, state: BuildState, headPosition: number): Promise<VerifyProblem[]> {
  if (!state.build || !existsSync(join(paths.integrator, 'HEAD'))) return [];
  const damage = state.integrationHead ? await integratorDamage(paths.integrator, state.integrationHead) : null;
  if (damage !== null) return [{ position: headPosition, problem: `${paths.integrator} is damaged: ${damage}; ${integratorRecovery(paths.integrator)}` }];
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
    if (a !== b) return [{ position: stored.position(), problem: `stored projections differ from a rebuild: ${firstDifference(a, b)}` }];
    const ia = stored.dumpEventIndex().split('\n');
    const ib = rebuilt.dumpEventIndex().split('\n');
    const at = ia.findIndex((line, i) => line !== ib[i]);
    const differs = at >= 0 ? at : ia.length !== ib.length ? ia.length : -1;
    return differs < 0 ? [] : [{ position: stored.position(), problem: `the stored event index (the viewer's list) differs from a rebuild: stored ${ia[differs] ?? '(no row)'} vs rebuilt ${ib[differs] ?? '(no row)'}; run \`longbuild rebuild\`` }];
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
