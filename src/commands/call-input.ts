/**
 * The input digest of a planner or worker call (R-41), pure. A fork adopts a parent's result for
 * a call whose digest equals the one the parent recorded, so the digest must cover everything the
 * call can act on, and nothing that only names the log's own history:
 *
 * - the input as the call received it (the full work packet, with dependency files and failure
 *   output; the planner input with acceptance output), and the driver of that call (the
 *   blueprint's node or plan, or the configured command/agent);
 * - every commit id in it replaced by the content it names: its tree and its first parent's tree
 *   (what a worker's checkout holds, and what the commit changed). A fork's commits are its own
 *   (made at other times, on other parents' ids), so ids would never match beyond the first
 *   promotion of a wall-clock build; trees do whenever the work is the same;
 * - a summary's id (a digest that includes when its milestone completed) read as `summary`: what
 *   the summary holds is in the input, beside it;
 * - recording times left out (`commitDate`, a checkpoint's `createdAt`), the call's idempotency
 *   key (it names the build, not the work: the attempt it names is in the packet), and the graph's
 *   SHA-256 (`graph.sha256`, a checkpoint's `graphSha256`: digests of node records whose commit ids
 *   they cannot map; the nodes and checkpoints they sum are in the input, mapped).
 */
import { createHash, type Hash } from 'node:crypto';
import { canonicalJson, type JsonValue } from '../events/canonical.js';

const HEX40 = /^[0-9a-f]{40}$/;
/** A compaction summary's id (src/commands/compaction.ts). */
const SUMMARY_ID = /^summary-[0-9a-f]{16}$/;

/** What a commit id stands for in a digest: its tree and its first parent's (null: a root commit). */
export interface CommitContent {
  readonly tree: string;
  readonly parentTree: string | null;
}

/** The distinct strings of `value` that could be commit ids (40 lowercase hex digits). */
export function commitIdsIn(value: unknown): string[] {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      if (HEX40.test(v)) found.add(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(value);
  return [...found].sort();
}

/** Keys whose values record when, or which build, not what. */
const NOT_CONTENT = new Set(['commitDate', 'createdAt', 'idempotencyKey']);

/**
 * The SHA-256 of a call's input: `{ role, driver, input }` in canonical JSON, with `input`'s commit
 * ids mapped through `contents` (an id without content — not a commit, or unknown — stays as it is).
 */
export function callInputSha256(role: 'planner' | 'worker', input: unknown, driver: JsonValue | HashedDriver, contents: ReadonlyMap<string, CommitContent | null>): string {
  const map = (v: unknown, key: string | null, parentKey: string | null): JsonValue | undefined => {
    if (key !== null && NOT_CONTENT.has(key)) return undefined;
    if ((key === 'sha256' && parentKey === 'graph') || key === 'graphSha256') return undefined;
    if (typeof v === 'string') {
      if (SUMMARY_ID.test(v)) return 'summary';
      const c = HEX40.test(v) ? contents.get(v) : undefined;
      return c ? { commitTree: c.tree, parentTree: c.parentTree } : v;
    }
    if (Array.isArray(v)) return v.map((x) => map(x, null, key) ?? null);
    if (v !== null && typeof v === 'object') {
      // No prototype: a key named `__proto__` (a file path, say) is then a key like any other.
      const out: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>;
      for (const [k, x] of Object.entries(v)) {
        const m = map(x, k, key);
        if (m !== undefined) out[k] = m;
      }
      return out;
    }
    return v as JsonValue;
  };
  // `{ driver, input, role }` in canonical JSON (its keys in that order), hashed on from the state
  // the driver's part left: a blueprint's planner driver is its whole plan (~70 KB for 1,000 nodes,
  // 3.7 MB for 50,000), the same object at every planner call, and was canonicalised and hashed
  // again at each.
  const rest = `${canonicalJson(map(input, null, null) ?? null)},"role":${JSON.stringify(role)}}`;
  return afterDriver(driver).copy().update(rest).digest('hex');
}

/**
 * A driver digested once and let go (decision 0054): the SHA-256 state after its part of the
 * digest. A blueprint's plan is the same at every planner call and as large as the blueprint (a
 * copy of every node); the controller keeps this state instead of the plan.
 */
export class HashedDriver {
  /** The state after `{"driver":<canonical JSON>,"input":` (copy it before updating). */
  readonly state: Hash;
  constructor(driver: JsonValue) {
    this.state = startDigest(driver);
  }
}

const startDigest = (driver: JsonValue): Hash => createHash('sha256').update(`{"driver":${canonicalJson(driver)},"input":`);

/** SHA-256 states after `{"driver":<canonical JSON>,"input":`, one per driver object seen (others are not kept). */
const driverStates = new WeakMap<object, Hash>();

function afterDriver(driver: JsonValue | HashedDriver): Hash {
  if (driver instanceof HashedDriver) return driver.state;
  const hashed = (): Hash => startDigest(driver);
  if (driver === null || typeof driver !== 'object') return hashed();
  let state = driverStates.get(driver);
  if (state === undefined) driverStates.set(driver, (state = hashed()));
  return state;
}
