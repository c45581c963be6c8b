import type { StoredEvent } from '../events/envelope.js';

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
  entities(state: S): ReadonlyMap<string, unknown> | Readonly<Record<string, unknown>>;
  /**
   * When true, `entities` returns a Sharded collection (two bucket levels, then key → entity; see
   * sharded.ts); the engine skips unchanged buckets by reference, so a write costs one leaf, not n rows.
   */
  readonly sharded?: boolean;
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
  readonly tables: readonly TableSpec<S>[];
}
