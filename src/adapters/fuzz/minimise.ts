/**
 * Minimising a failing fuzz case of a blueprint build (`--minimise`): smaller blueprints and
 * earlier occurrences of its point, tried until none fails the same way any more.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanRun, runCase, type CleanRun } from './case.js';
import { removeBuilds } from './child.js';
import type { FuzzCase, FuzzOptions, MinimalFailure } from './report.js';
import { NO_STARTS } from './stops.js';

interface BlueprintShape {
  milestones: { id: string; nodes: { id: string; deps?: string[] }[] }[];
  [k: string]: unknown;
}

/** Smaller blueprints than `bp`: without its last milestone, then without each node nothing depends on. */
export function shrinkCandidates(bp: BlueprintShape): BlueprintShape[] {
  const out: BlueprintShape[] = [];
  if (bp.milestones.length > 1) out.push({ ...bp, milestones: bp.milestones.slice(0, -1) });
  const needed = new Set(bp.milestones.flatMap((m) => m.nodes.flatMap((n) => n.deps ?? [])));
  bp.milestones.forEach((m, mi) => {
    for (const n of m.nodes) {
      if (needed.has(n.id) || m.nodes.length === 1) continue;
      out.push({ ...bp, milestones: bp.milestones.map((x, i) => (i === mi ? { ...x, nodes: x.nodes.filter((y) => y.id !== n.id) } : x)) });
    }
  });
  return out;
}

const sizeOf = (bp: BlueprintShape) => ({ milestones: bp.milestones.length, nodes: bp.milestones.reduce((n, m) => n + m.nodes.length, 0) });

/**
 * Greedy minimisation of a failing case (delta debugging by hand): take the first smaller
 * blueprint that still fails the same case, and repeat; then the earliest occurrence of the point
 * that fails. Each candidate costs a clean run and a case.
 */
export async function minimise(opts: FuzzOptions, blueprintPath: string, failure: FuzzCase, maxTrials: number, dir: string): Promise<Omit<MinimalFailure, 'reproduce'> | null> {
  let best = JSON.parse(readFileSync(blueprintPath, 'utf8')) as BlueprintShape;
  let bestCase: FuzzCase = failure;
  let trials = 0;
  const root = mkdtempSync(join(tmpdir(), 'longbuild-fuzz-min-'));
  const fails = async (bp: BlueprintShape, c: FuzzCase): Promise<FuzzCase | null> => {
    trials += 1;
    const path = join(root, `candidate-${trials}.json`);
    writeFileSync(path, JSON.stringify(bp, null, 2));
    const o = { ...opts, driver: { blueprint: path } };
    let clean: CleanRun;
    try {
      clean = await cleanRun(o.driver, opts.env, opts.backend);
    } catch {
      return null; // not a valid build any more
    }
    // The earliest occurrence of the same point that still fails (the point must be reached at all).
    const occurrences = clean.points.filter((p) => p.point === c.point).map((p) => p.occurrence).filter((k) => k <= (c.occurrence ?? 1));
    for (const k of occurrences) {
      const candidate = { ...c, occurrence: k };
      const r = await runCase(o, clean, candidate, NO_STARTS);
      if (r.divergences.length > 0 || r.duplicates.length > 0) return candidate;
      if (trials >= maxTrials) break;
    }
    return null;
  };
  try {
    for (let shrunk = true; shrunk && trials < maxTrials;) {
      shrunk = false;
      for (const candidate of shrinkCandidates(best)) {
        if (trials >= maxTrials) break;
        const c = await fails(candidate, bestCase);
        if (c !== null) {
          best = candidate;
          bestCase = c;
          shrunk = true;
          break;
        }
      }
    }
    const out = join(dir, `longbuild-fuzz-minimal-${process.pid}.json`);
    writeFileSync(out, `${JSON.stringify(best, null, 2)}\n`);
    return { blueprint: out, ...sizeOf(best), ...(bestCase.point ? { point: bestCase.point, occurrence: bestCase.occurrence! } : {}), trials };
  } finally {
    removeBuilds(root, opts.env);
  }
}
