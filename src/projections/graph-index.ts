/**
 * What the controller derives from the work graph at every step — the graph's SHA-256, the
 * ready set, each unfinished node's unlock depth and the nodes in each state — kept
 * up to date from the nodes a fold changed instead of recomputed from every node (decision 0021).
 *
 * An index belongs to one `nodes` object (states are immutable and share unchanged records). The
 * fold tells it which node ids an event touched (`noteNodesFolded`, from the fold's `NodesDraft`,
 * record-table.ts: every id it read, wrote or deleted); the
 * first question asked about the next state's `nodes` moves the index there and applies just those
 * changes. A state nobody folded from (a snapshot, a state made by hand) gets an index built from
 * scratch on its first question. Every answer equals the from-scratch one (property-tested
 * against a plain reference, `test/graph-index.test.ts`).
 */
import { createHash, type Hash } from 'node:crypto';
import { canonicalJson, compareCodePoints } from '../events/canonical.js';
import { sha256Hex } from '../events/hash.js';
import type { NodeRecord } from './build-records.js';

type Nodes = Readonly<Record<string, NodeRecord>>;

/** Ids per cached slice of the canonical graph's bytes. */
const CHUNK = 64;
/** Changed ids carried over folds nobody asked about before the index is dropped (rebuilt on demand). */
const MAX_PENDING = 1024;
/** Changes in one step beyond which unlock depths are recomputed whole (a plan, a compaction). */
const BULK = 64;

const indexes = new WeakMap<object, GraphIndex>();
/** nodes → the nodes object whose index it can be derived from, and the ids changed since. */
const lineage = new WeakMap<object, { readonly from: object; readonly changed: Set<string> }>();

/** Whether a node is finished (accepted or canceled by an operator): it no longer unlocks anything. */
function finished(n: NodeRecord | undefined): boolean {
  return n === undefined || n.state === 'accepted' || n.state === 'canceled';
}

/** A summary node, or an accepted one, satisfies its dependents. */
export function isSatisfied(node: NodeRecord | undefined): boolean {
  return node !== undefined && node.state === 'accepted';
}

function own(nodes: Nodes, id: string): NodeRecord | undefined {
  return Object.hasOwn(nodes, id) ? nodes[id] : undefined;
}

/**
 * Record that `next` was folded from `prev` changing (at most) the node ids `changed` (null: not
 * known, e.g. the whole record replaced; the set is kept: the caller hands it over). Cheap:
 * nothing is computed until someone asks.
 */
export function noteNodesFolded(prev: Nodes, next: Nodes, changed: Set<string> | null): void {
  if (prev === next) return;
  if (changed === null) return;
  let from: object = prev;
  let set: Set<string>;
  if (indexes.has(prev)) set = changed; // the caller's: it hands it over
  else {
    const before = lineage.get(prev);
    if (before === undefined) return; // nothing to derive from: built from scratch when asked
    from = before.from;
    set = new Set(before.changed);
    for (const id of changed) set.add(id);
    if (set.size > MAX_PENDING) return;
  }
  lineage.set(next, { from, changed: set });
}

/** A `nodes` object was changed in place (a private fold): whatever was derived from it is stale. */
export function forgetNodes(nodes: Nodes): void {
  indexes.delete(nodes);
  lineage.delete(nodes);
}

/** The index of `nodes`: kept, derived from the one it was folded from, or built. */
export function graphIndexOf(nodes: Nodes): GraphIndex {
  return knownGraphIndexOf(nodes) ?? store(nodes, GraphIndex.build(nodes));
}

/** The index of `nodes` if one is kept or can be derived from a fold, else null (nothing built). */
export function knownGraphIndexOf(nodes: Nodes): GraphIndex | null {
  const kept = indexes.get(nodes);
  if (kept !== undefined) return kept;
  const line = lineage.get(nodes);
  if (line === undefined) return null;
  lineage.delete(nodes);
  const base = indexes.get(line.from);
  if (base === undefined) return null; // taken by another state folded from the same one
  indexes.delete(line.from); // an index follows the newest state; an older one asked again rebuilds
  base.apply(nodes, line.changed);
  return store(nodes, base);
}

function store(nodes: Nodes, index: GraphIndex): GraphIndex {
  indexes.set(nodes, index);
  return index;
}

interface CachedNode {
  readonly id: string;
  readonly kind: string;
  readonly state: string;
  readonly milestone: string;
  readonly deps: readonly string[];
  readonly json: string;
}

// By node object, checked against the fields it was made from: a record folded in place (the
// audit's one-pass fold) is re-serialised when it changed, a shared unchanged one is not.
const nodeJson = new WeakMap<object, CachedNode>();

/** A node's canonical JSON in the graph's canonical form: the fields that make the graph, deps sorted. */
export function nodeCanonical(n: NodeRecord): string {
  const c = nodeJson.get(n);
  if (c !== undefined && c.id === n.id && c.kind === n.kind && c.state === n.state && c.milestone === n.milestone && sameList(c.deps, n.deps)) return c.json;
  const deps = [...n.deps];
  const json = canonicalJson({ id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps: [...deps].sort(compareCodePoints) });
  nodeJson.set(n, { id: n.id, kind: n.kind, state: n.state, milestone: n.milestone, deps, json });
  return json;
}

/** The canonical JSON of `ids[from..to)`, joined by commas (a slice of the canonical graph's body). */
export function canonicalSlice(ids: readonly string[], from: number, to: number, recordOf: (id: string) => NodeRecord): string {
  let json = '';
  for (let i = from; i < to; i++) json += (i === from ? '' : ',') + nodeCanonical(recordOf(ids[i]!));
  return json;
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Binary search: the index of `id` in the sorted `ids`, or where it would go. */
function searchIds(ids: readonly string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareCodePoints(ids[mid]!, id) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class GraphIndex {
  private readonly records = new Map<string, NodeRecord>();
  /** Every id, in code-point order (the canonical form's order). */
  private ids: string[] = [];
  /** Each CHUNK ids' canonical JSON, each preceded by a comma but the very first, as UTF-8; null when one of them changed. */
  private chunks: (Buffer | null)[] = [];
  private sha: string | null = null;
  /**
   * `prefixes[k]`: the SHA-256 state after `[` and slices 0..k-1, valid for k ≤ `prefixValid`. A
   * change to slice k re-hashes from slice k on, not from the start (decision 0027).
   */
  private prefixes: Hash[] = [];
  private prefixValid = 0;
  private readonly byState = new Map<string, Set<string>>();
  /** Per milestone: how many nodes, and how many not finished. */
  private readonly milestones = new Map<string, { total: number; open: number }>();
  /** dep id → the ids of the nodes that depend on it (whether or not the dep exists). */
  private readonly dependents = new Map<string, Set<string>>();
  /** Queued nodes whose dependencies are all accepted (any milestone). */
  private readonly readySet = new Set<string>();
  /** Unlock depth of every unfinished node. */
  private depths = new Map<string, number>();

  static build(nodes: Nodes): GraphIndex {
    const ix = new GraphIndex();
    for (const id in nodes) ix.enter(id, nodes[id]!);
    ix.ids = [...ix.records.keys()].sort(compareCodePoints);
    ix.chunks = new Array<Buffer | null>(Math.ceil(ix.ids.length / CHUNK)).fill(null);
    for (const id of ix.ids) ix.recheckReady(id);
    ix.depths = fullDepths(ix.records, ix.dependents);
    return ix;
  }

  /** Bring the index from the nodes it reflects to `nodes`, which differ at most at `changed`. */
  apply(nodes: Nodes, changed: ReadonlySet<string>): void {
    const satisfactionChanged: string[] = [];
    const depthSeeds: string[] = [];
    let moved = false; // ids added or removed: the sorted ids shift
    let changes = 0;
    for (const id of changed) {
      const before = this.records.get(id);
      const after = own(nodes, id);
      if (before === after) continue;
      changes++;
      this.sha = null;
      if (before !== undefined) this.leave(id, before);
      if (after !== undefined) this.enter(id, after);
      if (before === undefined || after === undefined) {
        moved = true;
        const at = searchIds(this.ids, id);
        if (after === undefined) this.ids.splice(at, 1);
        else this.ids.splice(at, 0, id);
        this.invalidateFrom(at);
      } else {
        this.dropChunk(Math.floor(searchIds(this.ids, id) / CHUNK));
      }
      if (isSatisfied(before) !== isSatisfied(after)) satisfactionChanged.push(id);
      const depsChanged = !sameList(before?.deps, after?.deps);
      if (finished(before) !== finished(after) || depsChanged) {
        depthSeeds.push(id);
        for (const d of before?.deps ?? []) depthSeeds.push(d);
        if (depsChanged) for (const d of after?.deps ?? []) depthSeeds.push(d);
      }
    }
    if (moved) this.chunks.length = Math.ceil(this.ids.length / CHUNK);
    for (const id of changed) this.recheckReady(id);
    for (const id of satisfactionChanged) for (const child of this.dependents.get(id) ?? []) this.recheckReady(child);
    if (changes > BULK) this.depths = fullDepths(this.records, this.dependents);
    else if (depthSeeds.length > 0) this.updateDepths(depthSeeds);
  }

  /** SHA-256 of the canonical graph: the same bytes as `canonicalGraph`, hashed slice by slice. */
  graphSha256(): string {
    if (this.sha !== null) return this.sha;
    const recordOf = (id: string): NodeRecord => this.records.get(id)!;
    if (this.ids.length <= CHUNK) {
      // One slice: its JSON and a one-shot digest (cheaper than a Hash object for a small graph).
      return (this.sha = sha256Hex(`[${canonicalSlice(this.ids, 0, this.ids.length, recordOf)}]`));
    }
    // From the state before the first slice that changed: the slices before it are not hashed again.
    let k = Math.min(this.prefixValid, this.chunks.length, this.prefixes.length - 1);
    if (k < 0) {
      this.prefixes = [createHash('sha256').update(OPEN)];
      k = 0;
    }
    const hash = this.prefixes[k]!.copy();
    for (; k < this.chunks.length; k++) {
      let chunk = this.chunks[k];
      if (chunk === null || chunk === undefined) {
        const json = canonicalSlice(this.ids, k * CHUNK, Math.min(this.ids.length, (k + 1) * CHUNK), recordOf);
        chunk = this.chunks[k] = Buffer.from(k === 0 ? json : `,${json}`, 'utf8'); // encoded once, hashed as bytes
      }
      hash.update(chunk); // fed slice by slice: a Buffer.concat of the whole form cost ~2.5 ms a step at 10,000 nodes
      this.prefixes[k + 1] = hash.copy();
    }
    this.prefixes.length = this.chunks.length + 1;
    this.prefixValid = this.chunks.length;
    return (this.sha = hash.update(CLOSE).digest('hex'));
  }

  /** The ids of the nodes in `state` (a live set: do not change it). */
  withState(state: string): ReadonlySet<string> {
    return this.byState.get(state) ?? EMPTY;
  }

  /** How many nodes `milestone` has, and how many of them are neither accepted nor canceled. */
  milestoneCounts(milestone: string): { readonly total: number; readonly open: number } {
    return this.milestones.get(milestone) ?? { total: 0, open: 0 };
  }

  /** Queued nodes whose dependencies are all accepted, in any milestone (a live set). */
  ready(): ReadonlySet<string> {
    return this.readySet;
  }

  /** Unlock depth of an unfinished node; 0 for any other. */
  depth(id: string): number {
    return this.depths.get(id) ?? 0;
  }

  /** Every unfinished node's unlock depth (a copy). */
  allDepths(): Map<string, number> {
    return new Map(this.depths);
  }

  private enter(id: string, n: NodeRecord): void {
    this.records.set(id, n);
    setOf(this.byState, n.state).add(id);
    const m = this.milestones.get(n.milestone) ?? { total: 0, open: 0 };
    m.total++;
    if (!finished(n)) m.open++;
    this.milestones.set(n.milestone, m);
    for (const d of n.deps) setOf(this.dependents, d).add(id);
  }

  private leave(id: string, n: NodeRecord): void {
    this.records.delete(id);
    this.byState.get(n.state)?.delete(id);
    const m = this.milestones.get(n.milestone)!;
    m.total--;
    if (!finished(n)) m.open--;
    if (m.total === 0) this.milestones.delete(n.milestone);
    for (const d of n.deps) {
      const set = this.dependents.get(d);
      set?.delete(id);
      if (set?.size === 0) this.dependents.delete(d);
    }
  }

  private recheckReady(id: string): void {
    const n = this.records.get(id);
    if (n !== undefined && n.state === 'queued' && n.deps.every((d) => isSatisfied(this.records.get(d)))) this.readySet.add(id);
    else this.readySet.delete(id);
  }

  private invalidateFrom(at: number): void {
    for (let k = Math.floor(at / CHUNK); k < this.chunks.length; k++) this.dropChunk(k);
  }

  /** Slice k changed: its bytes are made again, and the hash states after it are stale. */
  private dropChunk(k: number): void {
    this.chunks[k] = null;
    if (k < this.prefixValid) this.prefixValid = k;
  }

  /**
   * Recompute the depths that the changed nodes can affect: a node's depth depends only on its
   * unfinished dependents' depths, so a change walks up the dependencies, stopping where a
   * depth comes out as it was. A walk that runs long (it cannot, on an acyclic graph; sealing
   * refuses cycles) ends in a whole recomputation.
   */
  private updateDepths(seeds: readonly string[]): void {
    const work = [...seeds];
    let budget = 8 * this.records.size + 1000;
    while (work.length > 0) {
      if (--budget < 0) {
        this.depths = fullDepths(this.records, this.dependents);
        return;
      }
      const id = work.pop()!;
      const n = this.records.get(id);
      if (finished(n)) {
        this.depths.delete(id);
        continue;
      }
      let best = 0;
      for (const child of this.dependents.get(id) ?? []) {
        if (!finished(this.records.get(child))) best = Math.max(best, 1 + (this.depths.get(child) ?? 0));
      }
      if (this.depths.get(id) === best) continue;
      this.depths.set(id, best);
      for (const d of n!.deps) if (!finished(this.records.get(d))) work.push(d);
    }
  }
}

const EMPTY: ReadonlySet<string> = new Set();
const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

function setOf(map: Map<string, Set<string>>, key: string): Set<string> {
  let set = map.get(key);
  if (set === undefined) map.set(key, (set = new Set()));
  return set;
}

/** Every unfinished node's unlock depth, from scratch (memoised depth-first search). */
function fullDepths(records: ReadonlyMap<string, NodeRecord>, dependents: ReadonlyMap<string, ReadonlySet<string>>): Map<string, number> {
  const depth = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (id: string): number => {
    const known = depth.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0; // a cycle is refused at sealing; never loop here
    visiting.add(id);
    let best = 0;
    for (const child of dependents.get(id) ?? []) if (!finished(records.get(child))) best = Math.max(best, 1 + visit(child));
    visiting.delete(id);
    depth.set(id, best);
    return best;
  };
  for (const [id, n] of records) if (!finished(n)) visit(id);
  return depth;
}
