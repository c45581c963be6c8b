import { produce, type Draft } from 'immer';
import type { Sharded } from './sharded.js';
import type { StoredEvent } from '../events/envelope.js';

/** What one event does to an event-kept table (`TableSpec.fromEvent`): put a whole row, or update columns of the row with this key. */
export type EventRowChange =
  | { readonly put: readonly (string | number | null)[] }
  | { readonly key: readonly (string | number | null)[]; readonly set: Readonly<Record<string, string | number | null>> };

/** One SQLite read-model table fed from a collection inside a projection's state. */
export interface TableSpec<S> {
  readonly name: string;
  /** Column names; the first `keyColumns` of them form the primary key. Values: TEXT/INTEGER/NULL. */
  readonly columns: readonly string[];
  readonly keyColumns: number;
  /**
   * The entity collection this table mirrors. The engine compares old and new collections by
   * reference (immer keeps untouched ones identical), then entities by reference, and upserts or
   * deletes only the rows that changed. Keys are the entity's primary key joined with '\u0000'.
   */
  entities(state: S): ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>> | Sharded<unknown>;
  /**
   * When true, `entities` returns a Sharded collection (two levels of bucket arrays, then key →
   * entity; see sharded.ts); the engine skips unchanged buckets by reference, so a write costs one
   * leaf, not n rows.
   */
  readonly sharded?: boolean;
  /**
   * Optional: the table is kept from the events, not from the state — for history the state lets
   * go of (the attempts of compacted nodes, decision 0054). Each event gives a whole row to put, a
   * row's columns to update (none when the row does not exist), or nothing. Applying a suffix of
   * the log again, in order, must leave the same rows (the engine may, after another process wrote
   * part of it). `entities` and `toRow` still describe the rows of the entities the state holds
   * (a property test checks the two agree); the engine writes them only where the events it has
   * do not reach back to what the table holds.
   */
  readonly fromEvent?: (event: StoredEvent) => EventRowChange | null;
  /** Column values, in `columns` order. Must be a pure function of the entity. */
  toRow(key: string, entity: unknown): readonly (string | number | null)[];
}

/**
 * A read model: a pure `evolve` over the log plus the SQLite tables it fills.
 * `evolve` never reads the clock, randomness or the environment.
 */
export interface Projection<S> {
  readonly name: string;
  readonly initialState: S;
  evolve(state: S, event: StoredEvent): S;
  /**
   * Optional: fold a run of consecutive events at once; must equal folding them one by one with
   * `evolve`. The engine and time travel use it for runs between snapshot boundaries.
   */
  evolveMany?(state: S, events: readonly StoredEvent[]): S;
  /**
   * Optional: fold one event into a state the caller owns, changing it in place; must leave it
   * equal to what `evolve` returns. Time travel and audits fold from a freshly decoded snapshot
   * (or a private copy of the initial state) and keep no earlier state, so they need no copies.
   */
  evolveInPlace?(state: S, event: StoredEvent): void;
  /** Optional: a copy of `state` the caller owns, for `evolveInPlace` (default: `structuredClone`). */
  ownedCopy?(state: S): S;
  readonly tables: readonly TableSpec<S>[];
  /**
   * Optional: the version of the state's shape. Stored states (snapshots) of another version are
   * dropped and the projection is folded again, as when its tables change.
   */
  readonly stateVersion?: number;
  /**
   * Optional: a smaller state to start time travel from (see `buildView`). `of` must commute with
   * the fold: `of(fold(of(s), E))` equals `of(fold(s, E))` for every state and events. The engine
   * snapshots `of(state)` under `name` at every snapshot boundary (a full state that grows with
   * the build is snapshotted ever less often), and `verify` refolds those snapshots too.
   */
  readonly view?: { readonly name: string; of(state: S): S };
}

/**
 * A projection written as one immer recipe: `evolve` drafts one event, `evolveMany` drafts a
 * whole run in one `produce` (one proxy tree, one finalisation and one freeze per run instead of
 * per event; ~5x cheaper on a rebuild). The recipe mutates the draft and returns nothing; it must
 * not read `original()`/`current()` of the draft, which would see the run's start, not the event's.
 */
export function immerProjection<S>(spec: {
  readonly name: string;
  readonly initialState: S;
  readonly recipe: (draft: Draft<S>, event: StoredEvent) => void;
  readonly tables: readonly TableSpec<S>[];
}): Projection<S> {
  const { recipe } = spec;
  return {
    name: spec.name,
    initialState: spec.initialState,
    tables: spec.tables,
    evolve: (state, event) => produce(state, (draft: Draft<S>) => { recipe(draft, event); }),
    evolveMany: (state, events) => produce(state, (draft: Draft<S>) => { for (const e of events) recipe(draft, e); }),
  };
}

/** Events folded per run by the engine and by time travel (one `evolveMany` call each). */
export const FOLD_RUN_EVENTS = 1024;

/** A copy of `state` the caller owns, for `evolveInPlace`: the projection's own `ownedCopy`, else `structuredClone`. */
export function ownedCopyOf<S>(projection: Projection<S>, state: S): S {
  return projection.ownedCopy !== undefined ? projection.ownedCopy(state) : structuredClone(state);
}

/** Fold `events[from..to)` into `state`: one `evolveMany` call where the projection has it. */
export function evolveRun<S>(projection: Projection<S>, state: S, events: readonly StoredEvent[], from: number, to: number): S {
  if (to - from > 1 && projection.evolveMany !== undefined) {
    return projection.evolveMany(state, from === 0 && to === events.length ? events : events.slice(from, to));
  }
  let s = state;
  for (let i = from; i < to; i++) s = projection.evolve(s, events[i]!);
  return s;
}
