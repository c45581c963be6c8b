/**
 * Records of the build state that an immutable update would copy whole: `nodes` (10,000
 * in one active window, written at every event) and the ones that grow with the build's history
 * — `checkpoints`, `summaries` and `plannerCalls`, one entry per milestone or planning round. A
 * plain record is copied whole by immer at every write, and V8 keeps a record grown key by key in
 * dictionary mode, where a copy costs ~0.2–5 µs per key: ~4 ms for 10,000 nodes, ~2 ms for the
 * 750 checkpoints of a 30,000-node build. So the fold keeps them in persistent tables instead:
 * records in a two-level tree of 64-slot arrays (an update copies two arrays of 64 pointers and
 * one leaf) and the ids in insertion order in an array (copied only when a key is added or
 * removed). Readers see an ordinary read-only record — `r[id]`, `id in r`, `Object.hasOwn`,
 * `Object.keys/values/entries`, `for … in`, JSON — through a proxy whose keys come in a plain
 * object's own order (array-index ids first, ascending; then insertion order). It refuses writes:
 * a state is changed only by folding an event. `recordKeys`, `recordEntries` and `someValue` read
 * a table without the proxy (what a step reads every time; the first two are kept with the
 * table), and `changedTableLeaves` gives what differs between two tables without visiting what
 * they share (the projection tables' diff). Decisions 0027 and 0035.
 *
 * A fold (`evolveBuild`) changes a table through a `TableDraft`: reads hand out immer drafts of the
 * records they touch, writes and deletes are kept aside, and `commit` makes the next table from
 * the base one plus just those. A fold in place (`evolveBuildInPlace`) works on plain records.
 */
import { current, isDraft, type Draft, type Immer } from 'immer';
import { FANOUT, slotsOf } from './sharded.js';

/** A record of the build state: a plain one, or a table's read-only view. */
export type Records<T> = Readonly<Record<string, T>>;

/** Records by id in a two-level tree of 64-slot arrays (slots from a hash of the id), leaves keyed by id. */
type Leaf = Readonly<Record<string, unknown>>;
type Mid = readonly (Leaf | undefined)[];
type Shards = readonly (Mid | undefined)[];

function shardGet(s: Shards, id: string): unknown {
  const [a, b] = slotsOf(id);
  const leaf = s[a]?.[b];
  return leaf !== undefined && Object.hasOwn(leaf, id) ? leaf[id] : undefined;
}

/** A table: records by id and the ids in insertion order. */
interface Table {
  readonly shards: Shards;
  readonly order: readonly string[];
  /** The ids as a plain object would list them (computed once per table). */
  keys?: readonly string[];
  /** Its [id, record] pairs in that order (computed once per table, by `recordEntries`). */
  entries?: readonly (readonly [string, unknown])[];
}

const TABLES = new WeakMap<object, Table>();

/** What `Object.getPrototypeOf` says of a table: not a plain object, so immer never drafts it. */
const TABLE_PROTO: object = Object.freeze(Object.create(Object.prototype) as object);

const ARRAY_INDEX = /^(?:0|[1-9][0-9]*)$/;
const isArrayIndex = (k: string): boolean => ARRAY_INDEX.test(k) && Number(k) < 4294967295;

/** Ids in insertion order as a plain record lists them: array-index ids first, ascending. */
function plainOrder(order: readonly string[]): readonly string[] {
  let ints: string[] | null = null;
  for (const k of order) if (isArrayIndex(k)) (ints ??= []).push(k);
  return ints === null ? order : [...ints.sort((a, b) => Number(a) - Number(b)), ...order.filter((k) => !isArrayIndex(k))];
}

function keysOf(t: Table): readonly string[] {
  return (t.keys ??= plainOrder(t.order));
}

const readOnly = (): never => {
  throw new TypeError('a build state\'s records are read-only: fold an event to change them');
};

const VIEW_TRAPS: ProxyHandler<object> = {
  get(target, key) {
    if (typeof key !== 'string') return undefined;
    return shardGet(TABLES.get(target)!.shards, key);
  },
  has(target, key) {
    return typeof key === 'string' && shardGet(TABLES.get(target)!.shards, key) !== undefined;
  },
  ownKeys(target) {
    return [...keysOf(TABLES.get(target)!)];
  },
  getOwnPropertyDescriptor(target, key) {
    if (typeof key !== 'string') return undefined;
    const value = shardGet(TABLES.get(target)!.shards, key);
    return value === undefined ? undefined : { value, writable: false, enumerable: true, configurable: true };
  },
  getPrototypeOf: () => TABLE_PROTO,
  set: readOnly,
  deleteProperty: readOnly,
  defineProperty: readOnly,
  setPrototypeOf: readOnly,
};

/** The read-only record view of a table; the proxy's target is the key TABLES knows it by. */
function view<T>(t: Table): Records<T> {
  const target = {};
  TABLES.set(target, t);
  const v = new Proxy(target, VIEW_TRAPS) as Records<T>;
  TABLES.set(v, t);
  return v;
}

/** Whether `records` is a table's view (not a plain record). */
export function isRecordTable(records: object): boolean {
  return TABLES.has(records);
}

/** The table behind `records`, made from a plain record when it is one (once: O(n)). */
function tableOf<T>(records: Records<T>): Table {
  const t = TABLES.get(records);
  if (t !== undefined) return t;
  const order = Object.keys(records);
  const shards: (Leaf | undefined)[][] = [];
  for (const id of order) {
    const [a, b] = slotsOf(id);
    const mid = (shards[a] ??= new Array<Leaf | undefined>(FANOUT));
    const leaf = (mid[b] ??= {}) as Record<string, unknown>;
    leaf[id] = records[id];
  }
  if (shards.length < FANOUT) shards.length = FANOUT;
  return { shards, order };
}

/** `records` as a plain, mutable record (for a fold in place or a structured clone). */
export function plainRecord<T>(records: Records<T>): Record<string, T> {
  return isRecordTable(records) ? Object.fromEntries(recordEntries(records)) : (records as Record<string, T>);
}

/**
 * The [id, record] pairs of a record in its own order, as `Object.entries` lists them: a table's
 * without its proxy, made once per table (a step that lists the checkpoints at every decision
 * reads them once per change).
 */
export function recordEntries<T>(records: Records<T>): readonly (readonly [string, T])[] {
  const t = TABLES.get(records);
  if (t === undefined) return Object.entries(records);
  return (t.entries ??= keysOf(t).map((id) => [id, shardGet(t.shards, id)] as const)) as readonly (readonly [string, T])[];
}

/** The ids of a record in its own order, as `Object.keys` lists them (a table's without its proxy, and not copied: read only). */
export function recordKeys<T>(records: Records<T>): readonly string[] {
  const t = TABLES.get(records);
  return t === undefined ? Object.keys(records) : keysOf(t);
}

/** Whether some record of `records` satisfies `test` (a table's read without its proxy). */
export function someValue<T>(records: Records<T>, test: (record: T) => boolean): boolean {
  const t = TABLES.get(records);
  if (t === undefined) {
    for (const id in records) if (test(records[id]!)) return true;
    return false;
  }
  for (const mid of t.shards) {
    if (mid == null) continue;
    for (const leaf of mid) if (leaf != null) for (const id in leaf) if (test(leaf[id] as T)) return true;
  }
  return false;
}

/**
 * The leaves that differ between two tables, skipping the subtrees they share (the projection
 * tables are written from what a fold changed, not by comparing every record): pairs of plain
 * records holding every key that may differ. Null when either is not a table (compare them whole).
 */
export function changedTableLeaves(before: object, after: object): [Leaf, Leaf][] | null {
  const x = TABLES.get(before);
  const y = TABLES.get(after);
  if (x === undefined || y === undefined) return null;
  const out: [Leaf, Leaf][] = [];
  if (x.shards === y.shards) return out;
  for (let a = 0; a < FANOUT; a++) {
    const ma = x.shards[a];
    const mb = y.shards[a];
    if (ma === mb) continue;
    for (let b = 0; b < FANOUT; b++) {
      const la = ma?.[b] ?? EMPTY_LEAF;
      const lb = mb?.[b] ?? EMPTY_LEAF;
      if (la !== lb) out.push([la, lb]);
    }
  }
  return out;
}

const EMPTY_LEAF: Leaf = Object.freeze({});

/** `s` with `key` set to `value` (undefined: removed), copying only the path to its leaf (two 64-slot arrays and the leaf). */
function withEntry(s: Shards, key: string, value: unknown): Shards {
  const [a, b] = slotsOf(key);
  const mid = s[a];
  const leaf: Record<string, unknown> = { ...mid?.[b] };
  if (value === undefined) delete leaf[key];
  else leaf[key] = value;
  const m = mid === undefined ? new Array<Leaf | undefined>(FANOUT) : mid.slice();
  m[b] = leaf;
  const top = s.slice();
  top[a] = m;
  return top;
}

const DELETED = Symbol('deleted');

/** A new record written into the draft, with any field taken from a draft (`{ ...draft.nodes[id] }`) made plain. */
function undrafted<T extends object>(record: T): T {
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(record)) if (isDraft(v)) (out ??= { ...record } as Record<string, unknown>)[k] = current(v);
  return (out ?? record) as T;
}

/**
 * A fold's record (`nodes`, `checkpoints`, …): a record-like proxy over the base table whose reads
 * hand out immer drafts of the records they touch, and whose writes and deletes are kept until
 * `commit`. `touched`, when given, gets every id read, written or deleted (a superset of the
 * changed ones, for the graph index); `in` and listing the ids read no record. Keys come in a
 * plain record's order: a deleted id that is set again moves to the end.
 */
export class TableDraft<T extends object> {
  private table: Table | null = null;
  private readonly drafts = new Map<string, Draft<T>>();
  private readonly written = new Map<string, T | typeof DELETED>();
  /** Ids set while absent (new, or deleted earlier in this fold), in that order. */
  private readonly added: string[] = [];
  private readonly addedSet = new Set<string>();
  /** Ids deleted at some point of this fold (they lose their place in the order). */
  private readonly deleted = new Set<string>();
  readonly proxy: Record<string, Draft<T>>;

  constructor(private readonly records: Records<T>, private readonly immer: Immer, private readonly touched?: Set<string>) {
    this.proxy = new Proxy({}, {
      get: (_t, key) => (typeof key === 'string' ? this.read(key) : undefined),
      // Asking whether a node is there, or listing the ids, reads no record: no draft is made, nothing is noted.
      has: (_t, key) => typeof key === 'string' && this.present(key),
      set: (_t, key, value) => {
        if (typeof key === 'string') this.write(key, value as T);
        return true;
      },
      deleteProperty: (_t, key) => {
        if (typeof key === 'string') this.write(key, DELETED);
        return true;
      },
      ownKeys: () => this.keys(),
      getOwnPropertyDescriptor: (_t, key) => {
        if (typeof key !== 'string' || !this.present(key)) return undefined;
        return { value: this.peek(key), writable: true, enumerable: true, configurable: true };
      },
    }) as Record<string, Draft<T>>;
  }

  /** The base table (a plain record is made into one only when the fold reaches it). */
  private get base(): Table {
    return (this.table ??= tableOf(this.records));
  }

  private present(id: string): boolean {
    const w = this.written.get(id);
    return w !== undefined ? w !== DELETED : shardGet(this.base.shards, id) !== undefined;
  }

  /** What `id` holds now, as it is (a record read through `get` is drafted; this one is not). */
  private peek(id: string): unknown {
    return this.written.get(id) ?? this.drafts.get(id) ?? shardGet(this.base.shards, id);
  }

  private read(id: string): Draft<T> | undefined {
    this.touched?.add(id);
    const w = this.written.get(id);
    if (w === DELETED) return undefined;
    if (w !== undefined) return w as Draft<T>;
    const d = this.drafts.get(id);
    if (d !== undefined) return d;
    const record = shardGet(this.base.shards, id) as T | undefined;
    if (record === undefined) return undefined;
    const draft = this.immer.createDraft(record) as Draft<T>;
    this.drafts.set(id, draft);
    return draft;
  }

  private write(id: string, value: T | typeof DELETED): void {
    this.touched?.add(id);
    const was = this.present(id);
    if (value === DELETED) {
      if (was) this.deleted.add(id);
      if (this.addedSet.delete(id)) this.added.splice(this.added.indexOf(id), 1);
    } else if (!was) {
      this.added.push(id);
      this.addedSet.add(id);
    }
    this.written.set(id, value);
    this.drafts.delete(id);
  }

  /** The ids now, in a plain record's order. */
  private keys(): string[] {
    const base = this.deleted.size === 0 ? keysOf(this.base) : keysOf(this.base).filter((id) => !this.deleted.has(id));
    return this.added.length === 0 ? [...base] : [...plainOrder([...base, ...this.added])];
  }

  /** The next record, or null when the fold changed none (the base stays). */
  commit(): Records<T> | null {
    if (this.drafts.size === 0 && this.written.size === 0) return null;
    const before = this.base.shards;
    let shards = before;
    for (const [id, d] of this.drafts) {
      const record = this.immer.finishDraft(d) as T;
      if (record !== shardGet(before, id)) shards = withEntry(shards, id, record);
    }
    for (const [id, value] of this.written) {
      const record = value === DELETED ? undefined : isDraft(value) ? (this.immer.finishDraft(value as Draft<T>) as T) : undrafted(value);
      if (record !== shardGet(before, id)) shards = withEntry(shards, id, record);
    }
    if (shards === before && this.deleted.size === 0 && this.added.length === 0) return null;
    if (this.deleted.size === 0 && this.added.length === 0) return view({ shards, order: this.base.order });
    const order = this.base.order.filter((id) => !this.deleted.has(id));
    for (const id of this.added) order.push(id);
    return view({ shards, order });
  }
}
