/**
 * `longbuild fork`: a new build that starts from a past point of another. Its log is the
 * parent's first POINT events, verbatim (same positions and hashes: the same chain and Merkle
 * tree up to there), then a ForkedFrom event naming the parent, the point and its hash, and the
 * driver it goes on under. Its repository is a clone of the parent's with the integration ref at
 * the head as of POINT; its integrator repository holds that head and the attempt branches the log
 * expects there. The parent is only read.
 */
import { FileCallMarks } from '../controller/call-marks.js';
import type { KeyObject } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import type { DataOf } from '../../events/catalogue.js';
import { ValidationError } from '../../events/errors.js';
import { GENESIS_HASH, sha256Hex } from '../../events/hash.js';
import type { StoredEvent } from '../../events/envelope.js';
import { parseVerifierKey } from '../../events/signed-note.js';
import { buildProjection } from '../../projections/build-projection.js';
import { foldEvents, type FoldPoint } from '../../projections/time-travel.js';
import { attemptOf, type BuildState } from '../../projections/build-state.js';
import { forkedFrom } from '../../commands/first-events.js';
import { ATTEMPT_REF_PREFIX, attemptIdsOfNode } from '../../commands/refs.js';
import { buildPaths, openBuildLog, openBuildProjections, type BuildPaths } from '../build-dir.js';
import { git } from '../git/exec.js';
import { ensureIntegratorRepo, ensureRepo, readRef } from '../git/git.js';
import { openEventLog } from '../log/open-log.js';
import { catchUpFromLog } from '../log/paging.js';
import { transferLog } from '../log/transfer.js';
import type { TransferableEventLog } from '../log/verbatim.js';
import { checkpointFiles, readCheckpoint, Notary } from '../transparency/notary.js';
import { buildKeyFrom, loadSigningKey, signedHeadPath, signingKeyPath } from '../transparency/keys.js';
import { testPolicyAt } from '../build-init.js';
import { driverRecord, type DriverFile } from '../driver-file.js';
import { indexResults } from './parent-results.js';

export interface ForkOptions {
  /** The parent build: its repository and build directory, as every command resolves them. */
  readonly parent: { readonly repo?: string; readonly dir?: string; readonly cwd?: string };
  /** The last parent event the fork keeps. */
  readonly at: number;
  /** The fork's repository (created; its build directory is `<to>/.longbuild`). */
  readonly to: string;
  /** Another driver to go on under (a blueprint, or a request and config); absent: the parent's. */
  readonly driver?: DriverFile;
  readonly env: NodeJS.ProcessEnv;
  readonly signingKey?: string;
  readonly cwd?: string;
}

export interface ForkResult {
  readonly buildId: string;
  readonly repo: string;
  readonly dir: string;
  readonly parent: { readonly dir: string; readonly position: number; readonly headHash: string; readonly events: number };
  /** The ForkedFrom event's position. */
  readonly position: number;
  readonly driverChanged: boolean;
  /** Results the parent recorded after the point with an input digest: what the fork may reuse. */
  readonly reusable: { readonly planner: number; readonly worker: number };
  readonly checkpoint?: { readonly size: number };
}

/** Create the fork; everything it writes is under `to`, which must not exist or be empty. */
export async function forkBuild(o: ForkOptions): Promise<ForkResult> {
  const parentPaths = buildPaths(o.parent);
  const to = resolve(o.cwd ?? process.cwd(), o.to);
  if (existsSync(to) && readdirSync(to).length > 0) throw new ValidationError(`fork: ${to} is not empty; give a new directory with --to`);
  const log = await openBuildLog(parentPaths);
  try {
    // One pass over the parent's log: the state up to the point, then its results after it.
    const prefix = await readPrefix(log, o.at);
    const results = await indexResults(log, prefix.at.position);
    const build = prefix.state.build!;
    const key = buildKey(o, build.buildId, prefix.vkey);
    const driverText = o.driver !== undefined ? canonicalJson(o.driver) : parentDriverText(parentPaths, results.driverPin ?? build.driver.sourceSha256);
    const paths = buildPaths({ repo: to });
    mkdirSync(to, { recursive: true });
    let made: { position: number; checkpoint: { size: number; rootHash: string; note: string } | null };
    try {
      made = await createFork(log, parentPaths, paths, prefix, driverText, key, o.env);
    } catch (err) {
      // Nothing half-made is left: the directory was new (or empty).
      rmSync(to, { recursive: true, force: true });
      throw err;
    }
    return {
      buildId: build.buildId, repo: paths.repo, dir: paths.dir, position: made.position,
      parent: { dir: parentPaths.dir, position: prefix.at.position, headHash: prefix.at.hash, events: prefix.events },
      driverChanged: sha256Hex(driverText) !== build.driver.sourceSha256,
      reusable: { planner: results.planner.size, worker: results.worker.size },
      ...(made.checkpoint !== null ? { checkpoint: { size: made.checkpoint.size } } : {}),
    };
  } finally {
    await log.close();
  }
}

/** Only the build's key extends it: checked before anything is written. */
function buildKey(o: ForkOptions, buildId: string, vkey: string | undefined): { vkey: string; privateKey: KeyObject } {
  if (vkey === undefined) throw new ValidationError('fork: the parent predates signed checkpoints (R-35); it can be read, not forked');
  const key = loadSigningKey(signingKeyPath(o.signingKey, o.env, o.cwd));
  const privateKey = buildKeyFrom(key.privateKey, buildId, vkey);
  if (privateKey === null) throw new ValidationError(`fork: the signing key ${key.path} is not the parent build's key (${vkey}); pass it with --signing-key FILE`, 'R-35');
  return { vkey, privateKey };
}

/**
 * The fork's repositories and build directory: the parent's prefix and ForkedFrom in its log,
 * its driver file, the parent's evidence and verification cache (content-addressed: they serve
 * the fork as they are), its projections and a signed checkpoint at its head.
 */
async function createFork(
  log: TransferableEventLog, parentPaths: BuildPaths, paths: BuildPaths, prefix: Prefix, driverText: string,
  key: { vkey: string; privateKey: KeyObject }, env: NodeJS.ProcessEnv,
): Promise<{ position: number; checkpoint: { size: number; rootHash: string; note: string } | null }> {
  const { state, at } = prefix;
  const build = state.build!;
  const driver = JSON.parse(driverText) as DriverFile;
  await cloneRepositories(parentPaths, paths, state);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  writeFileSync(paths.driver, driverText, { mode: 0o600 });
  if (existsSync(parentPaths.evidence)) cpSync(parentPaths.evidence, paths.evidence, { recursive: true });
  if (existsSync(parentPaths.cache)) cpSync(parentPaths.cache, paths.cache, { recursive: true });
  const checkpoint = parentCheckpoint(parentPaths, build.buildId, key.vkey, at.position);
  const { tests: testInput, ...record } = driverRecord(driver);
  // The parent's test policy goes on under its own driver; another driver's is made as init makes it.
  const sameDriver = sha256Hex(driverText) === build.driver.sourceSha256;
  const tests = sameDriver ? build.tests : await testPolicyAt(paths.repo, state.integrationHead!, record.verify, testInput);
  const forked = forkedFrom({
    parent: { buildId: build.buildId, repo: parentPaths.repo, dir: parentPaths.dir, position: at.position, headHash: at.hash, ...(checkpoint !== null ? { checkpoint } : {}) },
    driver: { kind: driver.kind, sourceSha256: sha256Hex(driverText) }, ...record, ...(tests !== undefined ? { tests } : {}), graphRevision: state.graphRevision,
  });
  const target = await openEventLog('sqlite', { defaultSqlitePath: paths.events });
  try {
    await transferLog(log, target, { upTo: at.position });
    const appended = await target.append(at.streamId, [{ type: forked.type, data: forked.data as JsonValue, metadata: { recordedAt: new Date().toISOString(), causationId: 'fork', correlationId: build.buildId } }], at.revision);
    FileCallMarks.create(paths.calls);
    const store = openBuildProjections(paths);
    try {
      await catchUpFromLog(store, target);
    } finally {
      store.close();
    }
    const notary = Notary.open(paths, target, build.buildId, parseVerifierKey(key.vkey), key.privateKey, signedHeadPath(env, paths.dir));
    try {
      await notary.sign();
    } finally {
      notary.close();
    }
    return { position: appended.position, checkpoint };
  } finally {
    await target.close();
  }
}

/**
 * The parent's driver file, checked against the SHA-256 its log pins at its head (BuildInitialized,
 * or its own newest ForkedFrom): an edited driver file is refused, not carried into the fork.
 */
function parentDriverText(paths: BuildPaths, pinned: string): string {
  if (!existsSync(paths.driver)) throw new ValidationError(`fork: the parent's driver file ${paths.driver} is missing; give --blueprint FILE or --request FILE --config FILE`);
  const text = readFileSync(paths.driver, 'utf8');
  if (sha256Hex(text) !== pinned) {
    throw new ValidationError(`fork: the parent's driver file ${paths.driver} does not match the SHA-256 its log pins (edited?); give --blueprint FILE or --request FILE --config FILE`);
  }
  return text;
}

interface Prefix {
  readonly state: BuildState;
  /** The event at the point. */
  readonly at: StoredEvent;
  /** The parent's events in all. */
  readonly events: number;
  /** The verifier key BuildInitialized records (absent: a build from before signed checkpoints). */
  readonly vkey: string | undefined;
}

/**
 * The state as of `at` and the event there. A point inside one decision's events (a planner's
 * answer and the horizon it sealed are appended together) is refused: the controller never stood
 * there, so no build can go on from it.
 */
async function readPrefix(log: TransferableEventLog, at: number): Promise<Prefix> {
  const head = await log.head();
  const events = head?.position ?? 0;
  if (!Number.isInteger(at) || at < 1 || at > events) throw new ValidationError(`fork: --at ${at} is not a position of the parent's log (1..${events})`);
  let point: FoldPoint<BuildState> = { position: 0, state: buildProjection.initialState, hash: GENESIS_HASH };
  let atEvent: StoredEvent | undefined;
  let next: StoredEvent | undefined;
  let vkey: string | undefined;
  for (let from = 1; from <= Math.min(at + 1, events); ) {
    const page = await log.readAll({ from, limit: Math.min(1000, at + 2 - from) });
    if (page.length === 0) break;
    point = foldEvents(buildProjection, point, page, at);
    for (const e of page) {
      if (e.position === 1) vkey = (e.data as DataOf<'BuildInitialized'>).signing?.vkey;
      if (e.position === at) atEvent = e;
      if (e.position === at + 1) next = e;
    }
    from = page.at(-1)!.position + 1;
  }
  if (atEvent === undefined) throw new ValidationError(`fork: the parent's log has no event at ${at}`);
  if (next !== undefined && sameAppend(atEvent, next)) {
    throw new ValidationError(`fork: position ${at} is inside one decision's events (${atEvent.type} and ${next.type} were appended together); fork at ${at - 1} or ${at + 1}`);
  }
  return { state: point.state, at: atEvent, events, vkey };
}

/** Events one append wrote share its time and cause. */
function sameAppend(a: StoredEvent, b: StoredEvent): boolean {
  const ma = a.metadata as { recordedAt?: string; causationId?: string };
  const mb = b.metadata as { recordedAt?: string; causationId?: string };
  return ma.recordedAt === mb.recordedAt && ma.causationId === mb.causationId;
}

/**
 * The fork's repository, a local clone of the parent's (its branches and history; the parent is not
 * its remote), with the integration ref at the head as of the point; the integrator's repository
 * with that head and the attempt branches the log expects there (committed candidates not yet
 * accepted), fetched from the parent's.
 */
async function cloneRepositories(parent: BuildPaths, fork: BuildPaths, state: BuildState): Promise<void> {
  const build = state.build!;
  const head = state.integrationHead!;
  await git(resolve(fork.repo, '..'), ['clone', '-q', '--local', '--no-checkout', parent.repo, fork.repo]);
  await git(fork.repo, ['remote', 'remove', 'origin']);
  if ((await git(fork.repo, ['cat-file', '-e', `${head}^{commit}`], { allowFail: true })).code !== 0) {
    await git(fork.repo, ['fetch', '-q', '--no-tags', parent.integrator, head]);
  }
  await git(fork.repo, ['update-ref', build.integrationRef, head]);
  if ((await readRef(fork.repo, 'HEAD')) !== null) await git(fork.repo, ['checkout', '-q', '-f']);
  await ensureRepo(fork.repo, new Date().toISOString(), { buildDir: fork.dir });
  await ensureIntegratorRepo(fork.integrator, fork.repo, build.integrationRef);
  const expected: string[] = [];
  for (const [nodeId, n] of Object.entries(state.nodes)) {
    if (n.state === 'accepted') continue;
    for (const id of attemptIdsOfNode(state, nodeId)) {
      const a = attemptOf(state, id);
      if (a?.status === 'committed' && a.commit !== null) expected.push(`+${a.commit}:${ATTEMPT_REF_PREFIX}${id}`);
    }
  }
  if (expected.length > 0) await git(fork.integrator, ['fetch', '-q', '--no-tags', parent.integrator, ...expected]);
}

/** The parent's first signed checkpoint at or after the point, verified under the build's key; null when none. */
function parentCheckpoint(paths: BuildPaths, buildId: string, vkey: string, at: number): { size: number; rootHash: string; note: string } | null {
  const key = parseVerifierKey(vkey);
  for (const f of checkpointFiles(paths)) {
    if (f.size < at) continue;
    try {
      const c = readCheckpoint(f.note(), key, buildId, f.file);
      return { size: c.size, rootHash: c.root.toString('hex'), note: c.note };
    } catch {
      continue; // an unreadable checkpoint file names nothing
    }
  }
  return null;
}
