import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';

// Read a git bundle (v2/v3) with Node's standard library only, for the standalone verifier: the
// auditor's machine needs no git. Parses the packfile, resolves OFS/REF deltas, and indexes every
// object by its SHA-1 ("<type> <size>\0<content>"), so a commit and its tree can be looked up.

const TYPES: Record<number, string> = { 1: 'commit', 2: 'tree', 3: 'blob', 4: 'tag' };

export interface GitObject {
  readonly type: string;
  readonly content: Buffer;
}

export class GitBundleError extends Error {
  override readonly name = 'GitBundleError';
}

/** Every object in the bundle's pack, by SHA-1 hex, and the refs its header names. */
export function readGitBundle(bytes: Buffer): { refs: Map<string, string>; objects: Map<string, GitObject> } {
  let at = 0;
  const line = (): string => {
    const nl = bytes.indexOf(0x0a, at);
    if (nl < 0) throw new GitBundleError('truncated bundle header');
    const l = bytes.subarray(at, nl).toString('utf8');
    at = nl + 1;
    return l;
  };
  const sig = line();
  if (sig !== '# v2 git bundle' && sig !== '# v3 git bundle') throw new GitBundleError(`not a git bundle (first line '${sig.slice(0, 30)}')`);
  const refs = new Map<string, string>();
  for (;;) {
    const l = line();
    if (l === '') break;
    if (l.startsWith('@') || l.startsWith('-')) continue; // capabilities, prerequisites
    const m = /^([0-9a-f]{40}) (.+)$/.exec(l);
    if (!m) throw new GitBundleError(`bad bundle ref line '${l.slice(0, 60)}'`);
    refs.set(m[2]!, m[1]!);
  }
  return { refs, objects: readPack(bytes.subarray(at)) };
}

function readPack(pack: Buffer): Map<string, GitObject> {
  if (pack.subarray(0, 4).toString('latin1') !== 'PACK') throw new GitBundleError('the bundle holds no packfile');
  const count = pack.readUInt32BE(8);
  const byOffset = new Map<number, GitObject>();
  const bySha = new Map<string, GitObject>();
  const pendingRef: { offset: number; base: string; delta: Buffer }[] = [];
  let at = 12;
  for (let i = 0; i < count; i++) {
    const offset = at;
    let c = pack[at++]!;
    const type = (c >> 4) & 7;
    let size = c & 15;
    let shift = 4;
    while (c & 0x80) {
      c = pack[at++]!;
      size += (c & 0x7f) * 2 ** shift;
      shift += 7;
    }
    let baseOffset: number | null = null;
    let baseSha: string | null = null;
    if (type === 6) {
      c = pack[at++]!;
      let rel = c & 0x7f;
      while (c & 0x80) {
        c = pack[at++]!;
        rel = (rel + 1) * 128 + (c & 0x7f);
      }
      baseOffset = offset - rel;
    } else if (type === 7) {
      baseSha = pack.subarray(at, at + 20).toString('hex');
      at += 20;
    }
    const { buffer, engine } = inflateSync(pack.subarray(at), { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    at += engine.bytesWritten;
    if (buffer.length !== size) throw new GitBundleError(`pack object at ${offset} inflates to ${buffer.length} bytes, not ${size}`);
    if (type === 6) {
      const base = byOffset.get(baseOffset!);
      if (!base) throw new GitBundleError(`delta at ${offset} names a base at ${baseOffset} that is not an earlier object`);
      store(offset, { type: base.type, content: applyDelta(base.content, buffer) });
    } else if (type === 7) {
      const base = bySha.get(baseSha!);
      if (base) store(offset, { type: base.type, content: applyDelta(base.content, buffer) });
      else pendingRef.push({ offset, base: baseSha!, delta: buffer });
    } else {
      const name = TYPES[type];
      if (!name) throw new GitBundleError(`unknown pack object type ${type} at ${offset}`);
      store(offset, { type: name, content: buffer });
    }
  }
  for (let progress = true; pendingRef.length > 0 && progress;) {
    progress = false;
    for (let i = pendingRef.length - 1; i >= 0; i--) {
      const p = pendingRef[i]!;
      const base = bySha.get(p.base);
      if (!base) continue;
      store(p.offset, { type: base.type, content: applyDelta(base.content, p.delta) });
      pendingRef.splice(i, 1);
      progress = true;
    }
  }
  if (pendingRef.length > 0) throw new GitBundleError(`${pendingRef.length} delta(s) name bases the bundle does not hold (a thin bundle)`);
  return bySha;

  function store(offset: number, o: GitObject): void {
    byOffset.set(offset, o);
    bySha.set(objectSha(o), o);
  }
}

export function objectSha(o: GitObject): string {
  return createHash('sha1').update(`${o.type} ${o.content.length}\0`).update(o.content).digest('hex');
}

function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let at = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    let c: number;
    do {
      c = delta[at++]!;
      v += (c & 0x7f) * 2 ** shift;
      shift += 7;
    } while (c & 0x80);
    return v;
  };
  if (varint() !== base.length) throw new GitBundleError('delta base size mismatch');
  const out = Buffer.alloc(varint());
  let o = 0;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      let off = 0;
      let len = 0;
      for (let b = 0; b < 4; b++) if (op & (1 << b)) off |= delta[at++]! << (8 * b);
      for (let b = 0; b < 3; b++) if (op & (1 << (4 + b))) len |= delta[at++]! << (8 * b);
      if (len === 0) len = 0x10000;
      base.copy(out, o, off >>> 0, (off >>> 0) + len);
      o += len;
    } else if (op > 0) {
      delta.copy(out, o, at, at + op);
      at += op;
      o += op;
    } else {
      throw new GitBundleError('delta opcode 0 is reserved');
    }
  }
  if (o !== out.length) throw new GitBundleError('delta result size mismatch');
  return out;
}

/** The tree a commit names. */
export function commitTree(o: GitObject): string | null {
  if (o.type !== 'commit') return null;
  const m = /^tree ([0-9a-f]{40})$/m.exec(o.content.toString('utf8'));
  return m ? m[1]! : null;
}

/** A commit's first parent, or null (a root commit, or not a commit). */
export function commitFirstParent(o: GitObject): string | null {
  if (o.type !== 'commit') return null;
  const m = /^parent ([0-9a-f]{40})$/m.exec(o.content.toString('utf8').split('\n\n', 1)[0]!);
  return m ? m[1]! : null;
}

/** The entries of a tree object: mode, name and object id (git's binary tree format). */
export function treeEntries(o: GitObject): { mode: string; name: string; sha: string }[] {
  const out: { mode: string; name: string; sha: string }[] = [];
  const c = o.content;
  let at = 0;
  while (at < c.length) {
    const space = c.indexOf(0x20, at);
    const nul = c.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 21 > c.length) throw new GitBundleError('a tree object is malformed');
    out.push({ mode: c.toString('latin1', at, space), name: c.toString('utf8', space + 1, nul), sha: c.toString('hex', nul + 1, nul + 21) });
    at = nul + 21;
  }
  return out;
}

/**
 * The first object of `tree` (recursively) the bundle does not hold, or null when it holds every
 * tree and blob (a submodule's commit, mode 160000, lives elsewhere). `seen` spares trees shared
 * between commits a second walk.
 */
export function missingInTree(objects: ReadonlyMap<string, GitObject>, tree: string, seen: Set<string>): { sha: string; path: string; type: 'tree' | 'blob' } | null {
  const stack: { sha: string; path: string }[] = [{ sha: tree, path: '' }];
  while (stack.length > 0) {
    const { sha, path } = stack.pop()!;
    if (seen.has(sha)) continue;
    const t = objects.get(sha);
    if (t === undefined || t.type !== 'tree') return { sha, path: path === '' ? '(root)' : path, type: 'tree' };
    for (const e of treeEntries(t)) {
      const p = path === '' ? e.name : `${path}/${e.name}`;
      if (e.mode === '40000') stack.push({ sha: e.sha, path: p });
      else if (e.mode !== '160000' && objects.get(e.sha)?.type !== 'blob') return { sha: e.sha, path: p, type: 'blob' };
    }
    seen.add(sha);
  }
  return null;
}
