/**
 * The build state's `nodes` without a copy of every node at every event (issue 19: 10,000 nodes in
 * one active window). A plain record is copied whole by an immutable update — ~4 ms for 10,000
 * keys here, twice a step —, so the fold keeps the nodes in a persistent table instead: records in
 * a two-level tree of 64-slot arrays (an update copies two arrays of 64 pointers and one leaf) and
 * the ids in insertion order in an array (copied only when nodes are added or removed: a plan, a
 * compaction). Readers see an ordinary read-only record — `nodes[id]`, `id in nodes`,
 * `Object.keys/values/entries`, `for … in`, JSON — through a proxy whose keys come in a plain
 * object's own order (array-index ids first, ascending; then insertion order). It refuses writes:
 * a state is changed only by folding an event.
 *
 * A fold (`evolveBuild`) changes nodes through a `NodesDraft`: reads hand out immer drafts of the
 * records they touch, writes and deletes are kept aside, and `commit` makes the next table from
 * the base one plus just those. A fold in place (`evolveBuildInPlace`) works on a plain record.
 */
import { current, isDraft, type Draft, type Immer } from 'immer';
import type { NodeRecord } from './build-records.js';
import { FANOUT, slotsOf } from './sharded.js';

export type Nodes = Readonly<Record<string, NodeRecord>>;

/** Records by id in a two-level tree of 64-slot arrays (slots from a hash of the id), leaves keyed by id. */
type Leaf = Readonly<Record<string, NodeRecord>>;
type Mid = readonly (Leaf | undefined)[];
type Shards = readonly (Mid | undefined)[];

function shardGet(s: Shards, id: string): NodeRecord | undefined {
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
}

const TABLES = new WeakMap<object, Table>();

/** What `Object.getPrototypeOf` says of a table: not a plain object, so immer never drafts it. */
const NODES_PROTO: object = Object.freeze(Object.create(Object.prototype) as object);

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
  throw new TypeError('a build state\'s nodes are read-only: fold an event to change them');
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
  getPrototypeOf: () => NODES_PROTO,
  set: readOnly,
  deleteProperty: readOnly,
  defineProperty: readOnly,
  setPrototypeOf: readOnly,
};

/** The read-only record view of a table; the proxy's target is the key TABLES knows it by. */
function view(t: Table): Nodes {
  const target = {};
  TABLES.set(target, t);
  const v = new Proxy(target, VIEW_TRAPS) as Nodes;
  TABLES.set(v, t);
  return v;
}

/** Whether `nodes` is a table's view (not a plain record). */
export function isNodeTable(nodes: object): boolean {
  return TABLES.has(nodes);
}

/** The table behind `nodes`, made from a plain record when it is one (once: O(n)). */
function tableOf(nodes: Nodes): Table {
  const t = TABLES.get(nodes);
  if (t !== undefined) return t;
  const order = Object.keys(nodes);
  const shards: (Leaf | undefined)[][] = [];
  for (const id of order) {
    const [a, b] = slotsOf(id);
    const mid = (shards[a] ??= new Array<Leaf | undefined>(FANOUT));
    const leaf = (mid[b] ??= {}) as Record<string, NodeRecord>;
    leaf[id] = nodes[id]!;
  }
  if (shards.length < FANOUT) shards.length = FANOUT;
  return { shards, order };
}

/** `nodes` as a plain, mutable record (for a fold in place or a structured clone). */
export function plainNodes(nodes: Nodes): Record<string, NodeRecord> {
  return isNodeTable(nodes) ? Object.fromEntries(Object.entries(nodes)) : (nodes as Record<string, NodeRecord>);
}

/** `s` with `key` set to `value` (undefined: removed), copying only the path to its leaf (two 64-slot arrays and the leaf). */
function withEntry(s: Shards, key: string, value: NodeRecord | undefined): Shards {
  const [a, b] = slotsOf(key);
  const mid = s[a];
  const leaf: Record<string, NodeRecord> = { ...mid?.[b] };
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
function undrafted(record: NodeRecord): NodeRecord {
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(record)) if (isDraft(v)) (out ??= { ...record })[k] = current(v);
  return (out ?? record) as NodeRecord;
}

/**
 * A fold's `nodes`: a record-like proxy over the base table whose reads hand out immer drafts of
 * the records they touch, and whose writes and deletes are kept until `commit`. `touched` gets
 * every id read, written or deleted (a superset of the changed ones, for the graph index); `in`
 * and listing the ids read no record. Keys
 * come in a plain record's order: a deleted id that is set again moves to the end.
 */
export class NodesDraft {
  private table: Table | null = null;
  private readonly drafts = new Map<string, Draft<NodeRecord>>();
  private readonly written = new Map<string, NodeRecord | typeof DELETED>();
  /** Ids set while absent (new, or deleted earlier in this fold), in that order. */
  private readonly added: string[] = [];
  private readonly addedSet = new Set<string>();
  /** Ids deleted at some point of this fold (they lose their place in the order). */
  private readonly deleted = new Set<string>();
  readonly proxy: Record<string, Draft<NodeRecord>>;

  constructor(private readonly nodes: Nodes, private readonly immer: Immer, private readonly touched: Set<string>) {
    this.proxy = new Proxy({}, {
      get: (_t, key) => (typeof key === 'string' ? this.read(key) : undefined),
      // Asking whether a node is there, or listing the ids, reads no record: no draft is made, nothing is noted.
      has: (_t, key) => typeof key === 'string' && this.present(key),
      set: (_t, key, value) => {
        if (typeof key === 'string') this.write(key, value as NodeRecord);
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
    }) as Record<string, Draft<NodeRecord>>;
  }

  /** The base table (a plain record is made into one only when the fold reaches its nodes). */
  private get base(): Table {
    return (this.table ??= tableOf(this.nodes));
  }

  private present(id: string): boolean {
    const w = this.written.get(id);
    return w !== undefined ? w !== DELETED : shardGet(this.base.shards, id) !== undefined;
  }

  /** What `id` holds now, as it is (a record read through `get` is drafted; this one is not). */
  private peek(id: string): unknown {
    return this.written.get(id) ?? this.drafts.get(id) ?? shardGet(this.base.shards, id);
  }

  private read(id: string): Draft<NodeRecord> | undefined {
    this.touched.add(id);
    const w = this.written.get(id);
    if (w === DELETED) return undefined;
    if (w !== undefined) return w as Draft<NodeRecord>;
    const d = this.drafts.get(id);
    if (d !== undefined) return d;
    const record = shardGet(this.base.shards, id);
    if (record === undefined) return undefined;
    const draft = this.immer.createDraft(record);
    this.drafts.set(id, draft);
    return draft;
  }

  private write(id: string, value: NodeRecord | typeof DELETED): void {
    this.touched.add(id);
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

  /** The next nodes, or null when the fold changed none (the base stays). */
  commit(): Nodes | null {
    if (this.drafts.size === 0 && this.written.size === 0) return null;
    const before = this.base.shards;
    let shards = before;
    for (const [id, d] of this.drafts) {
      const record = this.immer.finishDraft(d) as NodeRecord;
      if (record !== shardGet(before, id)) shards = withEntry(shards, id, record);
    }
    for (const [id, value] of this.written) {
      const record = value === DELETED ? undefined : isDraft(value) ? (this.immer.finishDraft(value as Draft<NodeRecord>) as NodeRecord) : undrafted(value);
      if (record !== shardGet(before, id)) shards = withEntry(shards, id, record);
    }
    if (shards === before && this.deleted.size === 0 && this.added.length === 0) return null;
    if (this.deleted.size === 0 && this.added.length === 0) return view({ shards, order: this.base.order });
    const order = this.base.order.filter((id) => !this.deleted.has(id));
    for (const id of this.added) order.push(id);
    return view({ shards, order });
  }
}
