/**
 * Compaction in whole builds, in process (openBuild: real SQLite log, real git, the scripted
 * planner and worker): a long build stays small, and compaction changes nothing a build produces.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { initFromBlueprint } from '../src/adapters/build-init.js';
import { INTEGRATION_REF, openBuild } from '../src/adapters/session.js';
import { render } from '../src/adapters/cli/commands/status.js';
import { statusOf } from '../src/adapters/app/build-status.js';
import { parseBlueprint } from '../src/adapters/blueprint/blueprint.js';
import { ScriptedPlanner } from '../src/adapters/blueprint/scripted-planner.js';
import type { Planner, PlannerInput } from '../src/commands/ports.js';
import type { Checkpoint, MilestoneRef } from '../src/events/catalogue.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { tempDir } from './support/cli.js';

interface BpNode { id: string; kind: 'read-only' | 'writable'; deps: string[]; accepted?: boolean; contract?: string; decision?: string }
interface BpMilestone { id: string; title: string; intent?: string; nodes: BpNode[] }

function writeBlueprint(dir: string, milestones: BpMilestone[], extra: Record<string, unknown> = {}): string {
  const path = join(dir, `bp-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ request: { goal: 'compaction test' }, verify: [['true']], detailedWindow: 2, coarseWindow: 12, milestones, ...extra }));
  return path;
}

/** The blueprint's scripted planner, keeping a copy of every input it is given. */
function recordingPlanner(blueprintPath: string, inputs: PlannerInput[]): Planner {
  const inner = new ScriptedPlanner(parseBlueprint(JSON.parse(readFileSync(blueprintPath, 'utf8'))));
  return { route: inner.route, propose: (input) => (inputs.push(structuredClone(input)), inner.propose(input)) };
}

/**
 * The oracle of R-16's "the sealed horizon and the exact checkpoints", read from the log alone: at
 * each PlannerInvoked, the checkpoints written so far (in log order) of the milestones the horizon
 * in force then details — the last HorizonSealed or HorizonRenewed before it; none before a seal.
 */
function windowCheckpointsByCall(events: readonly StoredEvent[]): Checkpoint[][] {
  let detailed: string[] = [];
  const written: Checkpoint[] = [];
  const calls: Checkpoint[][] = [];
  for (const e of events) {
    const d = e.data as { detailed?: MilestoneRef[]; checkpoint?: Checkpoint };
    if (e.type === 'HorizonSealed' || e.type === 'HorizonRenewed') detailed = d.detailed!.map((m) => m.id);
    if (e.type === 'CheckpointWritten') written.push(d.checkpoint!);
    if (e.type === 'PlannerInvoked') calls.push(written.filter((c) => detailed.includes(c.milestoneId)));
  }
  return calls;
}

/** Run a build to its end (or a step cap); returns the outcomes and the active graph size after every step. */
async function runToEnd(repo: string, cap = 100_000, planner?: Planner): Promise<{ outcomes: string[]; sizes: number[] }> {
  const s = await openBuild({ repo, ...(planner !== undefined ? { planner } : {}) });
  const outcomes: string[] = [];
  const sizes: number[] = [];
  try {
    for (let i = 0; i < cap; i++) {
      const r = await s.advance();
      outcomes.push(r.outcome);
      sizes.push(Object.keys(s.controller.current.nodes).length);
      if (r.outcome === 'horizon_complete' || r.outcome === 'blocked') break;
    }
    return { outcomes, sizes };
  } finally {
    await s.close();
  }
}

describe('R-21 a long build stays small', () => {
  it('R-21 R-16 40 milestones x 25 nodes finish with an active graph of at most the window (2 x 25) plus 2 summary nodes at any step, 1 node at the end; the planner input stays as small', async () => {
    const M = 40;
    const N = 25;
    const milestones: BpMilestone[] = Array.from({ length: M }, (_, i) => ({
      id: `m${i}`,
      title: `Milestone ${i}`,
      // A binary tree per milestone whose root consumes the last node of the milestone before.
      nodes: Array.from({ length: N }, (_, j) => ({
        id: `m${i}-n${j}`,
        kind: 'read-only' as const,
        deps: j > 0 ? [`m${i}-n${Math.floor((j - 1) / 2)}`] : i > 0 ? [`m${i - 1}-n${N - 1}`] : [],
      })),
    }));
    const repo = tempDir();
    const bp = writeBlueprint(repo, milestones);
    await initFromBlueprint(bp, { repo });
    const inputs: PlannerInput[] = [];
    const { outcomes, sizes } = await runToEnd(repo, 100_000, recordingPlanner(bp, inputs));
    expect(outcomes.at(-1)).toBe('horizon_complete');
    // the planner's input stays bounded too — each renewal sees its own window's two
    // checkpoints, not every one so far (decision 0029), so the last is no larger than the first.
    const renewals = inputs.filter((i) => i.purpose === 'renew');
    expect(renewals).toHaveLength(M / 2 - 1);
    expect(renewals.map((i) => i.checkpoints.map((c) => c.milestoneId))).toEqual(renewals.map((_, k) => [`m${2 * k}`, `m${2 * k + 1}`]));
    const bytes = renewals.map((i) => JSON.stringify(i).length);
    expect(Math.max(...bytes)).toBeLessThan(1.25 * bytes[0]!);
    const count = (o: string) => outcomes.filter((x) => x === o).length;
    expect(count('checkpointed')).toBe(M);
    expect(count('compacted')).toBe(M);
    expect(count('renewed')).toBe(M / 2 - 1);
    expect(count('dispatched')).toBe(M * N);
    // The figure: never more than the detailed window plus two summaries.
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2 * N + 2);
    expect(sizes.at(-1)).toBe(1);
    const s = await openBuild({ repo });
    try {
      const st = s.controller.current;
      expect(Object.keys(st.summaries)).toHaveLength(M); // every summary stays in history
      expect(Object.values(st.summaries).filter((r) => r.absorbedBy === null)).toHaveLength(1);
      expect(st.horizon!.revision).toBe(M / 2);
      // What a person reads: `status` names the first and last few of its 40 checkpoints and counts them; --json has all.
      const out = statusOf(st);
      expect(out.checkpoints).toHaveLength(M);
      const line = render(out).split('\n').find((l) => l.startsWith('checkpoints: '))!;
      expect(line).toBe('checkpoints: m0, m1, m2, m3, m4, … m35, m36, m37, m38, m39 (40 in all; --json lists every one)');
    } finally {
      await s.close();
    }
  }, 120_000);
});

// ---- compaction on and off reach the same result -------------------------------------------

/** Random small blueprints: 3..4 milestones of 1..3 nodes, deps on any earlier node, some contracts and decisions. */
const blueprintArb = fc.integer({ min: 3, max: 4 }).chain((m) =>
  fc.array(fc.record({
    size: fc.integer({ min: 1, max: 3 }),
    writable: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    picks: fc.array(fc.array(fc.nat(20), { maxLength: 2 }), { minLength: 3, maxLength: 3 }),
    contract: fc.boolean(),
  }), { minLength: m, maxLength: m }),
).map((ms) => {
  const earlier: string[] = [];
  return ms.map((spec, i): BpMilestone => {
    const nodes: BpNode[] = [];
    for (let j = 0; j < spec.size; j++) {
      const id = `x${i}-${j}`;
      const deps = [...new Set(spec.picks[j]!.filter(() => earlier.length > 0).map((p) => earlier[p % earlier.length]!))];
      const writable = spec.writable[j]!;
      nodes.push({
        id, kind: writable ? 'writable' : 'read-only', deps,
        ...(spec.contract && j === 0 ? { contract: `c${i}@1` } : {}),
        ...(!writable ? { decision: `decided ${id}` } : {}),
      });
      earlier.push(id);
    }
    return { id: `ms${i}`, title: `Milestone ${i}`, nodes };
  });
});

const git = (repo: string, ...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8' }).trim();

/** What a build produced, independent of graph shape and of event positions (commit dates). */
async function outcomeOf(repo: string) {
  const s = await openBuild({ repo });
  try {
    const st = s.controller.current;
    const tree = (commit: string) => git(repo, 'rev-parse', `${commit}^{tree}`);
    // Whole, as the log has them: the state keeps those of closed windows as heads (decision 0032).
    const written = (await s.log.readAll()).filter((e) => e.type === 'CheckpointWritten').map((e) => (e.data as { checkpoint: Checkpoint }).checkpoint);
    expect(written.map((c) => c.milestoneId)).toEqual(Object.values(st.checkpoints).sort((a, b) => a.position - b.position).map((c) => c.checkpoint.milestoneId));
    const cps = written.map((c: Checkpoint) => ({
      milestoneId: c.milestoneId, horizonRevision: c.horizonRevision, tree: tree(c.integrationHead),
      accepted: c.acceptedNodes.map((n) => ({ id: n.id, kind: n.kind, tree: n.commit === null ? null : tree(n.commit) })),
      contracts: c.contracts, foundations: c.foundations, decisions: c.decisions, metrics: c.metrics, nextHorizon: c.nextHorizon,
    }));
    return { completed: st.completed, tree: tree(git(repo, 'rev-parse', INTEGRATION_REF)), checkpoints: cps, calls: st.calls, summaries: Object.keys(st.summaries).length };
  } finally {
    await s.close();
  }
}

describe('R-21 compaction changes nothing a build produces', () => {
  it('R-19 R-21 R-16 property: a build with compaction and one without reach the same integration tree and checkpoints; every planner call saw exactly its window\'s checkpoints', async () => {
    await fc.assert(
      fc.asyncProperty(blueprintArb, fc.constantFrom<1 | 2>(1, 2), async (milestones, detailedWindow) => {
        const results = [];
        for (const compaction of [true, false]) {
          const repo = tempDir();
          const bp = writeBlueprint(repo, milestones, { compaction, detailedWindow });
          await initFromBlueprint(bp, { repo });
          const inputs: PlannerInput[] = [];
          const { outcomes } = await runToEnd(repo, 500, recordingPlanner(bp, inputs));
          expect(outcomes.at(-1)).toBe('horizon_complete');
          // each call's checkpoints are exactly its window's, as the log alone says (oracle above).
          const s = await openBuild({ repo });
          try {
            expect(inputs.map((i) => i.checkpoints)).toEqual(windowCheckpointsByCall(await s.log.readAll({ from: 1, limit: 100_000 })));
          } finally {
            await s.close();
          }
          expect(outcomes.includes('compacted')).toBe(compaction);
          results.push(await outcomeOf(repo));
        }
        const [on, off] = results;
        expect(on!.summaries).toBe(milestones.length);
        expect(off!.summaries).toBe(0);
        expect({ ...on, summaries: 0 }).toEqual({ ...off, summaries: 0 });
      }),
      { numRuns: 3 },
    );
  }, 120_000);
});
