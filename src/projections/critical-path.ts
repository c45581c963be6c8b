/**
 * The critical path of a build: the longest chain of unfinished planned work, weighted
 * by what each node still needs — its worker call (the mean recorded worker duration) and, for a
 * writable node, its verification (the mean recorded verification job) — and the estimated time
 * it leaves. Pure: the estimates come from durations the log records.
 *
 * Dispatch keeps R-10's unlock depth, the same chain counted in nodes: with equal estimates the
 * two agree (the top of the ranked wave heads a longest chain). They differ when estimates differ
 * — a read-only node needs no verification, a validating one only its verification — and the log
 * cannot rank by them: the durations are wall-clock measurements, and a resumed build measures
 * other ones, so a ranking by them would dispatch differently after a crash (R-19 asks for the
 * same ready sequence).
 */
import { compareCodePoints } from '../events/canonical.js';
import type { BuildState } from './build-state.js';
import { unlockDepths } from './graph.js';

export interface CriticalPath {
  /** The chain, first node first (empty when nothing planned is unfinished). */
  readonly nodes: readonly string[];
  /** Its estimated remaining time, ms; null when the log records no durations to estimate from. */
  readonly remainingMs: number | null;
  /** What the estimates rest on. */
  readonly basis: { readonly workerCalls: number; readonly workerMeanMs: number | null; readonly verifications: number; readonly verifyMeanMs: number | null };
}

/** The longest chain of unfinished work in the state's graph (ties: R-10's order, then id). */
export function criticalPath(state: BuildState): CriticalPath {
  const d = state.durations;
  const workerMean = d !== undefined && d.worker.calls > 0 ? d.worker.ms / d.worker.calls : null;
  const verifyMean = d !== undefined && d.verify.jobs > 0 ? d.verify.ms / d.verify.jobs : null;
  const basis = { workerCalls: d?.worker.calls ?? 0, workerMeanMs: round(workerMean), verifications: d?.verify.jobs ?? 0, verifyMeanMs: round(verifyMean) };
  const known = workerMean !== null || verifyMean !== null;
  const unfinished = Object.values(state.nodes).filter((n) => n.state !== 'accepted' && n.state !== 'canceled');
  // What a node still needs: a worker call unless it is past it, and its verification if writable.
  const weight = (id: string): number => {
    const n = state.nodes[id]!;
    if (!known) return 1;
    const work = n.state === 'validating' ? 0 : workerMean ?? 0;
    return work + (n.kind === 'writable' ? verifyMean ?? 0 : 0);
  };
  const dependents = new Map<string, string[]>();
  for (const n of unfinished) for (const dep of n.deps) dependents.set(dep, [...(dependents.get(dep) ?? []), n.id]);
  const depth = unlockDepths(state.nodes);
  const topo = state.topoIndex ?? {};
  const before = (a: string, b: string): number => (depth.get(b) ?? 0) - (depth.get(a) ?? 0) || (topo[a] ?? 0) - (topo[b] ?? 0) || compareCodePoints(a, b);
  const best = new Map<string, { total: number; next: string | null }>();
  const visit = (id: string, seen: Set<string>): number => {
    const done = best.get(id);
    if (done !== undefined) return done.total;
    if (seen.has(id)) return 0; // a cycle is refused when a plan is sealed; never loop here
    seen.add(id);
    let next: string | null = null;
    let tail = 0;
    for (const c of [...(dependents.get(id) ?? [])].sort(before)) {
      const t = visit(c, seen);
      if (next === null || t > tail) {
        next = c;
        tail = t;
      }
    }
    seen.delete(id);
    const total = weight(id) + tail;
    best.set(id, { total, next });
    return total;
  };
  // A chain starts at a node none of whose dependencies is unfinished.
  const isOpen = (id: string): boolean => {
    const x = state.nodes[id];
    return x !== undefined && x.state !== 'accepted' && x.state !== 'canceled';
  };
  const roots = unfinished.filter((n) => !n.deps.some(isOpen)).map((n) => n.id).sort(before);
  let start: string | null = null;
  let longest = -1;
  for (const id of roots) {
    const total = visit(id, new Set());
    if (total > longest) {
      start = id;
      longest = total;
    }
  }
  const nodes: string[] = [];
  for (let at = start; at !== null; at = best.get(at)?.next ?? null) nodes.push(at);
  return { nodes, remainingMs: known ? Math.max(0, Math.round(longest)) : null, basis };
}

function round(x: number | null): number | null {
  return x === null ? null : Math.round(x);
}
