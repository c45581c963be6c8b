import { canonicalJson } from '../events/canonical.js';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import { GENESIS_HASH, sha256Hex } from '../events/hash.js';
import type { StoredEvent } from '../events/envelope.js';
import { evolveRun, ownedCopyOf, type Projection } from './projection.js';
import type { SnapshotKeeper } from './snapshot-keeper.js';
import { EVENT_INDEX, EVENT_INDEX_TABLES } from './event-index-table.js';
import type { TableWriter } from './tables.js';

// How the projection store (engine.ts) folds one projection: its live state, the chain checks, the folds.

/** One projection's live state: what is folded in memory and what the tables hold. */
export interface Runtime {
  readonly projection: Projection<unknown>;
  readonly writers: TableWriter<unknown>[];
  readonly fingerprint: string;
  state: unknown;
  /** Last position folded into `state`, and that event's hash. */
  memPosition: number;
  memHash: string;
  /** Last position the tables reflect, and that event's hash. */
  storedPosition: number;
  storedHash: string;
  /** `state` is this runtime's alone (decoded from a snapshot, or copied): free to fold in place until the tables are reached. */
  owned?: boolean;
}

/** The table of each projection's stored position, the hash of the event there, and its layout's fingerprint. */
export const POSITIONS_SCHEMA = `
CREATE TABLE IF NOT EXISTS projection_positions (
  name        TEXT PRIMARY KEY,
  position    INTEGER NOT NULL,
  hash        TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL
);
`;

/** When folds snapshot a state: every `every` events (0 = never), kept by `keeper`. */
export interface SnapshotCadence {
  readonly every: number;
  readonly keeper: SnapshotKeeper;
}

/** The tables were written from another log: the event at their position has another hash. */
export const differentLog = (r: Runtime): CorruptLogError =>
  new CorruptLogError(r.memPosition, `projection ${r.projection.name} was built from a different log (event hash differs from the one its tables saw); run \`longbuild rebuild\``);

/** Throws CorruptLogError unless `e` is the event right after `position`, linked to its `hash`. */
export function assertLinks(projection: string, position: number, hash: string, e: StoredEvent): void {
  if (e.position !== position + 1) throw new CorruptLogError(position + 1, `projection ${projection} expected position ${position + 1}, got ${e.position}`);
  if (e.prevHash !== hash) throw new CorruptLogError(e.position, `projection ${projection}: event does not follow the chain the projection has seen (prevHash mismatch); run \`longbuild rebuild\``);
}

/** The index of the first event of `batch` past `position` (batch.length when none). */
export function indexAfter(batch: readonly StoredEvent[], position: number, from = 0): number {
  let i = from;
  while (i < batch.length && batch[i]!.position <= position) i += 1;
  return i;
}

/** Identity of a projection's table layout: a changed layout means its tables are rebuilt. */
export function fingerprintOf(p: Projection<unknown>): string {
  const tables = p.tables.map((t) => ({ columns: [...t.columns], keyColumns: t.keyColumns, name: t.name }));
  return sha256Hex(canonicalJson(p.stateVersion === undefined ? tables : { stateVersion: p.stateVersion, tables }));
}

export function checkUniqueNames(projections: readonly Projection<any>[]): void {
  const names = new Set<string>();
  const tables = new Set<string>();
  for (const p of projections) {
    if (names.has(p.name) || p.name === EVENT_INDEX) throw new ValidationError(`two projections are named '${p.name}'`, 'R-5');
    names.add(p.name);
    for (const t of p.tables) {
      if (tables.has(t.name) || t.name === 'projection_positions' || t.name === 'snapshots' || EVENT_INDEX_TABLES.includes(t.name)) {
        throw new ValidationError(`projection table name '${t.name}' is used twice or reserved`, 'R-5');
      }
      tables.add(t.name);
    }
  }
}

/**
 * Fold events the tables already reflect (a restore from a snapshot older than them) in place:
 * nothing is written and no one else holds the state — a long build's state restored ~8,000
 * events behind its tables copied its large records at every event otherwise. Once the tables
 * are reached the state is given up (no longer owned): it is the base the next rows are diffed
 * against. A fold that throws halfway leaves a state no position describes, so the runtime starts
 * again from the initial state (the next catch-up folds the whole log).
 */
export function refoldInPlace(r: Runtime, events: readonly StoredEvent[], from: number, to: number): void {
  const inPlace = r.projection.evolveInPlace!;
  try {
    for (let i = from; i < to; i++) {
      const e = events[i]!;
      assertLinks(r.projection.name, r.memPosition, r.memHash, e);
      if (r.owned !== true) {
        r.state = ownedCopyOf(r.projection, r.state);
        r.owned = true;
      }
      inPlace.call(r.projection, r.state, e);
      r.memPosition = e.position;
      r.memHash = e.hash;
    }
    if (r.memPosition === r.storedPosition && r.memHash !== r.storedHash) {
      throw differentLog(r);
    }
  } catch (err) {
    Object.assign(r, { state: r.projection.initialState, owned: false, memPosition: 0, memHash: GENESIS_HASH });
    throw err;
  }
  if (r.memPosition >= r.storedPosition) r.owned = false;
}

/**
 * Fold `events[from..to)` into a projection's memory, checking each continues the chain. The
 * run is cut at snapshot positions (the state there is snapshotted); each piece is one
 * `evolveRun`. On a broken link it throws before folding further (callers roll memory back).
 */
export function foldRun(r: Runtime, events: readonly StoredEvent[], from: number, to: number, snapshots: SnapshotCadence): void {
  let position = r.memPosition;
  let hash = r.memHash;
  let start = from;
  for (let i = from; i < to; i++) {
    const e = events[i]!;
    assertLinks(r.projection.name, position, hash, e);
    position = e.position;
    hash = e.hash;
    const snapshot = snapshots.every > 0 && position % snapshots.every === 0 && position > r.storedPosition;
    if (snapshot || i === to - 1) {
      r.state = evolveRun(r.projection, r.state, events, start, i + 1);
      r.owned = false; // an immutable fold's state shares its parts with the states before it
      r.memPosition = position;
      r.memHash = hash;
      start = i + 1;
      if (snapshot) snapshots.keeper.put(r.projection, position, hash, r.state);
    }
  }
}
