/**
 * `verify` of a fork (R-41): each ForkedFrom event's link to its parent. Offline, from the fork's
 * log alone: it follows the event at the point it names, whose hash it records; the parent's
 * signed checkpoint it carries verifies under the build's key, and when it was signed at the fork
 * point, the fork's own Merkle root there is its root. With the parent reachable where the fork
 * says it lives: the parent's event at the point has that hash (so the fork's prefix is the
 * parent's log, verbatim), the checkpoint's root is the parent's, and every result recorded as
 * reused is the parent's event at the position it names: same hash, same input digest, same result.
 */
import type { DataOf } from '../../events/catalogue.js';
import { CorruptLogError } from '../../events/errors.js';
import { computeEventHash, type StoredEvent } from '../../events/envelope.js';
import type { VerifyProblem } from '../../events/event-log.js';
import { eventLeafHash, hashLeaves } from '../../events/merkle.js';
import { parseVerifierKey } from '../../events/signed-note.js';
import { buildPaths, openBuildLog } from '../build-dir.js';
import { readCheckpoint } from '../transparency/notary.js';

export interface ForkLink {
  /** The ForkedFrom event's position. */
  readonly position: number;
  readonly parent: { readonly buildId: string; readonly dir: string; readonly position: number };
  /** Whether the parent's log could be read (its link and reused results checked against it). */
  readonly reachable: boolean;
  /** Results recorded as reused from this parent, and how many were checked against it. */
  readonly reused: number;
  readonly reusedChecked: number;
}

type Reused = { readonly position: number; readonly hash: string };

/** The link checks of every ForkedFrom in `events` (a whole log, from position 1). */
export async function forkLinks(events: readonly StoredEvent[]): Promise<{ links: ForkLink[]; problems: VerifyProblem[] }> {
  const links: ForkLink[] = [];
  const problems: VerifyProblem[] = [];
  const forks = events.filter((e) => e.type === 'ForkedFrom');
  const init = events[0]?.type === 'BuildInitialized' ? (events[0].data as DataOf<'BuildInitialized'>) : undefined;
  for (const [i, f] of forks.entries()) {
    const d = f.data as DataOf<'ForkedFrom'>;
    const p = d.parent;
    const problem = (position: number, text: string): void => void problems.push({ position, problem: `fork of ${p.dir} at ${p.position}: ${text}` });
    if (f.position !== p.position + 1) problem(f.position, `ForkedFrom stands at ${f.position}, not right after the point it names`);
    else if (f.prevHash !== p.headHash) problem(f.position, `the event before ForkedFrom is not the parent's event it names (hash ${f.prevHash.slice(0, 16)}, recorded ${p.headHash.slice(0, 16)})`);
    if (init !== undefined && p.buildId !== init.buildId) problem(f.position, `ForkedFrom names parent build ${p.buildId}, but the log's prefix is build ${init.buildId}'s`);
    if (p.checkpoint !== undefined) {
      if (p.checkpoint.size < p.position) problem(f.position, `the parent's checkpoint (size ${p.checkpoint.size}) comes before the fork point`);
      try {
        if (init?.signing === undefined) throw new Error('the log records no signing key');
        const cp = readCheckpoint(p.checkpoint.note, parseVerifierKey(init.signing.vkey), p.buildId, 'the parent\'s checkpoint');
        if (cp.size !== p.checkpoint.size || cp.root.toString('hex') !== p.checkpoint.rootHash) problem(f.position, 'the parent\'s checkpoint note does not say the size and root ForkedFrom records');
        if (cp.size === p.position && !hashLeaves(events.slice(0, p.position).map((e) => eventLeafHash(e.hash))).equals(cp.root)) {
          problem(f.position, `the fork's Merkle root at ${p.position} is not the root the parent signed there`);
        }
      } catch (err) {
        problem(f.position, `the parent's signed checkpoint does not verify: ${(err as Error).message}`);
      }
    }
    // The results recorded as reused from this parent: those after this ForkedFrom, up to the next.
    const until = forks[i + 1]?.position ?? Infinity;
    const reused = events.filter((e) => e.position > f.position && e.position < until && (e.data as { reused?: Reused }).reused !== undefined);
    let parentEvents: Map<number, StoredEvent> | null = null;
    try {
      parentEvents = await readParent(p.repo, p.dir, [p.position, ...reused.map((e) => (e.data as { reused: Reused }).reused.position)]);
    } catch (err) {
      // Not reachable here: the offline checks above are what can be said. A parent that is
      // there but whose log does not verify is a problem of the link.
      if (err instanceof CorruptLogError) problem(f.position, `the parent's log does not verify (${err.message}); run \`longbuild verify\` there`);
      parentEvents = null;
    }
    let checked = 0;
    if (parentEvents !== null) {
      const at = parentEvents.get(p.position);
      if (at !== undefined && computeEventHash(at) !== at.hash) problem(f.position, `the parent's event at ${p.position} does not hash to its recorded hash (edited)`);
      else if (at?.hash !== p.headHash) problem(f.position, `the parent's event at ${p.position} is ${at ? `${at.hash.slice(0, 16)}` : 'missing'}, not the ${p.headHash.slice(0, 16)} the fork records (the parent was rewritten, or is another build)`);
      if (p.checkpoint !== undefined && p.checkpoint.size > p.position) {
        const root = await parentRoot(p.repo, p.dir, p.checkpoint.size).catch(() => null);
        if (root !== null && root !== p.checkpoint.rootHash) problem(f.position, `the parent's log is not the one its checkpoint at size ${p.checkpoint.size} signed`);
      }
      for (const e of reused) {
        const r = (e.data as { reused: Reused }).reused;
        const src = parentEvents.get(r.position);
        const why = src === undefined ? `the parent has no event at ${r.position}`
          : computeEventHash(src) !== src.hash ? `the parent's event at ${r.position} does not hash to its recorded hash (edited)`
          : src.hash !== r.hash ? `the parent's event at ${r.position} has another hash` : sameResult(e, src);
        if (why !== null) problem(e.position, `${e.type} is recorded as reused from the parent's event at ${r.position}, but ${why}`);
        checked += 1;
      }
    }
    links.push({ position: f.position, parent: { buildId: p.buildId, dir: p.dir, position: p.position }, reachable: parentEvents !== null, reused: reused.length, reusedChecked: checked });
  }
  return { links, problems };
}

/** Null when `parent` is the result `own` says it reused: same type, input digest and result. */
function sameResult(own: StoredEvent, parent: StoredEvent): string | null {
  if (own.type !== parent.type) return `that is a ${parent.type}`;
  const a = own.data as Record<string, unknown>;
  const b = parent.data as Record<string, unknown>;
  if (a.inputSha256 !== b.inputSha256) return 'its input digest differs';
  // A committed result's tree is the parent's (the same files on the same base tree).
  const fields = own.type === 'PlannerReturned' ? ['proposalSha256'] : ['nodeId', 'outcome', 'stdoutSha256', 'stderrSha256', 'decision', ...(a.outcome === 'committed' ? ['tree'] : [])];
  const differing = fields.filter((k) => a[k] !== b[k]);
  return differing.length > 0 ? `its ${differing.join(', ')} differ${differing.length === 1 ? 's' : ''}` : null;
}

async function readParent(repo: string, dir: string, positions: readonly number[]): Promise<Map<number, StoredEvent>> {
  const log = await openBuildLog(buildPaths({ repo, dir }));
  try {
    const out = new Map<number, StoredEvent>();
    for (const position of [...new Set(positions)].sort((x, y) => x - y)) {
      const [e] = await log.readAll({ from: position, limit: 1 });
      if (e !== undefined && e.position === position) out.set(position, e);
    }
    return out;
  } finally {
    await log.close();
  }
}

/** The parent's Merkle root (hex) over its first `size` events. */
async function parentRoot(repo: string, dir: string, size: number): Promise<string> {
  const log = await openBuildLog(buildPaths({ repo, dir }));
  try {
    const leaves = [];
    for (let from = 1; from <= size; ) {
      const page = await log.readAll({ from, limit: Math.min(1000, size - from + 1) });
      if (page.length === 0) break;
      leaves.push(...page.map((e) => eventLeafHash(e.hash)));
      from = page.at(-1)!.position + 1;
    }
    return hashLeaves(leaves).toString('hex');
  } finally {
    await log.close();
  }
}
