import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as crypto from 'node:crypto';
import { CorruptLogError } from '../../events/errors.js';
import { domainCatalogue } from '../../events/catalogue.js';
import type { EventLog } from '../../events/event-log.js';
import { Frontier, eventLeafHash, inclusionProof, verifyInclusion } from '../../events/merkle.js';
import { NoteError, checkpointText, parseCheckpointText, signNote, verifyNote, type VerifierKey } from '../../events/signed-note.js';
import type { BuildPaths } from '../build-dir.js';
import { TreeStore, type LogLeaves } from './tree-store.js';
import { writeAtomically } from '../atomic-write.js';
import { checkpointFiles } from './checkpoint-pack.js';

/** Leaves kept in memory before they are written to the tree store (four tiles). */
const PENDING_LEAVES = 1024;

export interface SignedCheckpoint {
  readonly size: number;
  readonly root: Buffer;
  /** The whole signed note, as stored. */
  readonly note: string;
  readonly file: string;
}

/**
 * The log's leaves read synchronously, where the log can (the embedded SQLite log): the tree store
 * then keeps no second copy of a complete tile's leaves (decision 0034).
 */
export function logLeavesOf(log: EventLog): LogLeaves | undefined {
  const reader = log as Partial<{ readHashesSync(from: number, limit: number): string[] }>;
  if (typeof reader.readHashesSync !== 'function') return undefined;
  return (start, end) => reader.readHashesSync!(start + 1, end - start).map(eventLeafHash);
}

/** The events a checkpoint is signed after: every promotion, milestone checkpoint and end, and every record of attestations. */
export const SIGNED_AFTER: ReadonlySet<string> = new Set(['IntegrationPromoted', 'CheckpointWritten', 'BuildCompleted', 'BuildBlocked', 'ProvenanceRecorded']);

/** Signed checkpoints of a build, smallest tree size first: the files and the pack (checkpoint-pack.ts). */
export { checkpointFiles } from './checkpoint-pack.js';

/** Parse and verify one checkpoint note under `key` for `origin`; throws NoteError naming why not. */
export function readCheckpoint(note: string, key: VerifierKey, origin: string, file = '(checkpoint)'): SignedCheckpoint {
  const parsed = verifyNote(note, key);
  const body = parseCheckpointText(parsed.text);
  if (body.origin !== origin) throw new NoteError(`${file} is a checkpoint of '${body.origin}', not of this build ('${origin}')`);
  return { size: body.size, root: body.root, note, file };
}

/**
 * The build's notary: signs a checkpoint of the log's Merkle tree when asked, never
 * one that is not an extension of the last it signed, and checks the log against the last
 * checkpoint before a controller appends anything.
 */
export class Notary {
  private constructor(
    private readonly paths: BuildPaths,
    private readonly log: EventLog,
    private readonly store: TreeStore,
    private readonly origin: string,
    private readonly vkey: VerifierKey,
    private privateKey: crypto.KeyObject | null,
  ) {}

  /** The last checkpoint this notary signed or read, and the tree's frontier at its size. */
  private lastSigned: SignedCheckpoint | null = null;
  private frontier: Frontier | null = null;
  /** Leaves in the frontier not yet written to the tree store (written a tile's worth at a time, and on close). */
  private pending: Buffer[] = [];
  private dirMade = false;

  /** Write the pending leaves to the tree store, which then holds exactly the frontier's leaves. */
  private flush(): void {
    if (this.pending.length === 0 || this.frontier === null) return;
    const from = this.frontier.size - this.pending.length;
    if (this.store.size() > from) this.store.truncate(from);
    if (this.store.size() === from) this.store.append(this.pending);
    this.pending = [];
  }

  /** Sign with this key from now on (the caller has checked it is the build's). */
  useKey(privateKey: crypto.KeyObject): void {
    this.privateKey = privateKey;
  }

  static open(paths: BuildPaths, log: EventLog, origin: string, vkey: VerifierKey, privateKey: crypto.KeyObject | null, headCopy?: string): Notary {
    const n = new Notary(paths, log, TreeStore.open(paths.tree, logLeavesOf(log)), origin, vkey, privateKey);
    n.headCopy = headCopy;
    return n;
  }

  /** A copy of the last checkpoint this machine signed, kept outside the build directory. */
  private headCopy: string | undefined;

  /** The checkpoint in the head copy, verified; null when there is none. */
  private keptHead(): SignedCheckpoint | null {
    if (this.headCopy === undefined || !existsSync(this.headCopy)) return null;
    try {
      return readCheckpoint(readFileSync(this.headCopy, 'utf8'), this.vkey, this.origin, this.headCopy);
    } catch {
      return null; // another build's (a build directory reused) or damaged: the build's own files decide
    }
  }

  /** The checkpoint file restored from this machine's copy of the last signature, when check() did so. */
  restored: string | null = null;

  /**
   * The latest checkpoint; a latest file that does not verify while this machine's copy of the
   * last signature has the same size is damaged, not forged (the copy lives outside the build
   * directory): it is written again from the copy. Otherwise the refusal names the way out.
   */
  private latestOrRestored(kept: SignedCheckpoint | null): SignedCheckpoint | null {
    try {
      return this.latest();
    } catch (err) {
      const files = checkpointFiles(this.paths);
      const last = files[files.length - 1]!;
      if (!(err instanceof CorruptLogError) || kept === null || kept.size !== last.size) {
        if (err instanceof CorruptLogError) {
          throw new CorruptLogError(last.size, `${err.message.replace(/^.*?: /, '')}; if only that file was damaged (the log checks out: \`longbuild verify\` names nothing else), move it aside (mv ${last.file} ${last.file}.damaged) and run again: the run signs that part of the log again`);
        }
        throw err;
      }
      const file = join(this.paths.checkpoints, `${last.size}.checkpoint`); // a file is read before a packed line of its size
      writeAtomically(file, kept.note);
      this.restored = file;
      return this.latest();
    }
  }

  /** The checkpoint with the largest tree size, verified; null when none was signed. */
  latest(): SignedCheckpoint | null {
    const files = checkpointFiles(this.paths);
    const last = files[files.length - 1];
    if (!last) return null;
    try {
      const cp = readCheckpoint(last.note(), this.vkey, this.origin, last.file);
      if (cp.size !== last.size) throw new NoteError(`${last.file} holds a checkpoint of size ${cp.size}`);
      return cp;
    } catch (err) {
      if (err instanceof NoteError) throw new CorruptLogError(last.size, `signed checkpoint ${last.file} does not verify: ${err.message}`);
      throw err;
    }
  }

  /**
   * Before the first append: the chain head anchor is the log's last event, the last signed
   * checkpoint verifies, the log is at least as long, and its event at the checkpoint's size is the
   * leaf the signed root commits to (the controller has re-hashed and linked every event up to it).
   */
  async check(): Promise<void> {
    const head = await this.log.head();
    const anchor = await this.log.anchor();
    const at = head?.position ?? 0;
    if (anchor === null && head !== null) throw new CorruptLogError(at, 'the chain head anchor is missing (the log was edited outside longbuild); run `longbuild verify`');
    if (anchor !== null && anchor.position > at) throw new CorruptLogError(at + 1, `log truncated: the chain head anchor names position ${anchor.position}, but the log ends at ${at}; refusing to append`);
    if (anchor !== null && (anchor.position !== at || anchor.hash !== head!.hash)) {
      throw new CorruptLogError(anchor.position + 1, `events after position ${anchor.position} were not appended by longbuild (the chain head anchor is at ${anchor.position}, the log ends at ${at}); refusing to append on a forged log`);
    }
    const kept = this.keptHead();
    const inBuild = this.latestOrRestored(kept);
    if (kept !== null && kept.size > at) {
      throw new CorruptLogError(at + 1, `log truncated: this machine signed a checkpoint at size ${kept.size} (kept in ${this.headCopy}), but the log ends at ${at}; refusing to append`);
    }
    const cp = kept !== null && (inBuild === null || kept.size > inBuild.size) ? kept : inBuild;
    if (cp === null) throw new CorruptLogError(1, `no signed checkpoint in ${this.paths.checkpoints} (deleted?): refusing to append to a log nothing vouches for`);
    if (cp.size > at) throw new CorruptLogError(at + 1, `log truncated: a checkpoint was signed at size ${cp.size}, but the log ends at ${at}; refusing to append`);
    if (!(await this.includesHeadOf(cp))) {
      throw new CorruptLogError(cp.size, `the log is not the one the checkpoint at size ${cp.size} signed (rewritten?); refusing to append; run \`longbuild verify\``);
    }
    this.lastSigned = cp; // the next checkpoint extends this one (the newest, in the build or kept outside)
    // Events after the last checkpoint (a crash between an append and its signature) vouch for
    // nothing yet: each must at least be one the catalogue accepts.
    // The same read finds the checkpoints a stopped run missed (signMissed signs them).
    this.missed = [];
    for (const e of await this.log.readAll({ from: cp.size + 1 })) {
      try {
        domainCatalogue.validate(e.type, e.schemaVersion, e.data);
      } catch (err) {
        throw new CorruptLogError(e.position, `an event after the last signed checkpoint fails the catalogue (${(err as Error).message}); refusing to append`);
      }
      if (SIGNED_AFTER.has(e.type)) this.missed.push(e.position);
    }
  }

  /** Positions after the last signed checkpoint of events R-35 signs after, found by check(). */
  private missed: number[] = [];

  /** The event at `cp.size` is leaf size-1 of the signed tree (the tree store rebuilt once if it disagrees). */
  private async includesHeadOf(cp: SignedCheckpoint): Promise<boolean> {
    this.flush();
    const [hash] = await this.log.readHashes(cp.size, 1);
    if (hash === undefined) return false;
    const leaf = eventLeafHash(hash);
    for (let tries = 0; tries < 2; tries++) {
      await this.store.catchUp(this.log, cp.size);
      if (this.store.size() >= cp.size && verifyInclusion(cp.size - 1, cp.size, leaf, inclusionProof(this.store.source(), cp.size - 1, cp.size), cp.root)) return true;
      this.store.truncate(0); // the cache disagrees with the signed root: refold it from the log once
    }
    return false;
  }

  /**
   * Sign the checkpoints a run missed: after the last signed checkpoint, at each event
   * R-35 signs after (SIGNED_AFTER, found by check()), in order — what a run that stopped on an unwritable
   * checkpoints/ directory, or was killed between an append and its signature, left unsigned. The
   * head itself is signed at the end of the run as always. Returns the sizes signed.
   */
  async signMissed(): Promise<number[]> {
    if (this.privateKey === null) return [];
    const sizes = this.missed;
    this.missed = [];
    for (const size of sizes) await this.sign(size);
    return sizes;
  }

  /** Sign a checkpoint at the log's head (or at `at`), if it grew since the last one. */
  async sign(at?: number): Promise<SignedCheckpoint | null> {
    if (this.privateKey === null) return null;
    const size = at ?? (await this.log.head())?.position ?? 0;
    const last = this.lastSigned ?? this.latest();
    if (size === 0 || (last !== null && last.size === size)) return last;
    if (last !== null && last.size > size) throw new CorruptLogError(size + 1, `log truncated: a checkpoint was signed at size ${last.size}, but the log ends at ${size}; refusing to sign`);
    const frontier = await this.frontierAt(last);
    // The new leaves come from the log itself; the tree store is brought to the same place.
    for (let at = frontier.size; at < size;) {
      const hashes = await this.log.readHashes(at + 1, Math.min(8192, size - at));
      if (hashes.length === 0) throw new CorruptLogError(at + 1, 'the log ended while its tree was extended');
      for (const h of hashes) {
        const leaf = eventLeafHash(h);
        frontier.push(leaf);
        this.pending.push(leaf);
      }
      at += hashes.length;
    }
    if (this.pending.length >= PENDING_LEAVES) this.flush();
    const root = frontier.root();
    const note = signNote(checkpointText(this.origin, size, root), this.origin, this.privateKey);
    if (!this.dirMade) mkdirSync(this.paths.checkpoints, { recursive: true, mode: 0o700 });
    this.dirMade = true;
    const file = join(this.paths.checkpoints, `${size}.checkpoint`);
    writeAtomically(file, note);
    if (this.headCopy !== undefined) writeAtomically(this.headCopy, note);
    this.lastSigned = { size, root, note, file };
    return this.lastSigned;
  }

  /**
   * The tree's frontier at the last signed size, kept between signatures. Built from the tree
   * store once and checked against the signed root (the store rebuilt from the log once if it
   * disagrees): every later checkpoint extends that frontier, so it is consistent with the last
   * one by construction (R-35: never sign a checkpoint inconsistent with an earlier one).
   */
  private async frontierAt(last: SignedCheckpoint | null): Promise<Frontier> {
    const base = last?.size ?? 0;
    if (this.frontier !== null && this.frontier.size === base) return this.frontier;
    this.pending = [];
    for (let tries = 0; tries < 2; tries++) {
      if (tries > 0) this.store.truncate(0);
      else if (this.store.size() > base) this.store.truncate(base);
      await this.store.catchUp(this.log, base);
      const f = Frontier.at(this.store.source(), base);
      if (this.store.size() === base && (last === null || f.root().equals(last.root))) return (this.frontier = f);
    }
    throw new CorruptLogError(base, `the log is not an extension of the checkpoint signed at size ${base} (rewritten?); refusing to sign`);
  }

  /** The tree store built again from the log up to `size` (its cache was found wrong). */
  async rebuildTree(size: number): Promise<TreeStore> {
    this.flush();
    this.store.truncate(0);
    this.frontier = null;
    await this.store.catchUp(this.log, size);
    return this.store;
  }

  /** The tree store, caught up to `size` (for proofs). */
  async tree(size: number): Promise<TreeStore> {
    this.flush();
    await this.store.catchUp(this.log, size);
    return this.store;
  }

  close(): void {
    try {
      this.flush();
    } finally {
      this.store.close();
    }
  }
}
