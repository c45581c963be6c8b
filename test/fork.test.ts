/**
 * `longbuild fork` (R-41, issue 18). The property: over random builds (random DAGs in milestones,
 * read-only and writable nodes, real git) and random fork points,
 *
 * - a fork under the same blueprint finishes with the parent's tree and the parent's recorded
 *   results after the point (same attempts, outcomes, trees, decisions; same answers), every one
 *   adopted from the parent: zero planner and worker calls;
 * - a fork whose blueprint changes one writable node's files redoes exactly the calls an
 *   independent reading of the parent's log says that change reaches — the node's own attempt, and
 *   every call made after its promotion (their base head holds it) — and adopts the others; its
 *   tree is the tree of a fresh build of the changed blueprint.
 *
 * The oracle reads the parent's log (positions of attempts, promotions and planner answers), not
 * the input digests the code under test computes. Also here: the refusals, `verify` of the link
 * (and of a parent rewritten after the fork), a fork of a fork.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Planner, Worker } from '../src/commands/ports.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { forkBuild } from '../src/adapters/fork/fork-build.js';
import { initFromBlueprint } from '../src/adapters/build-init.js';
import { blueprintDriver } from '../src/adapters/driver-file.js';
import { openBuild } from '../src/adapters/session.js';
import { ScriptedPlanner } from '../src/adapters/blueprint/scripted-planner.js';
import { ScriptedWorker } from '../src/adapters/blueprint/scripted-worker.js';
import { loadBlueprint } from '../src/adapters/blueprint/blueprint.js';
import { dagArb, type RandomDag } from './support/arbitraries.js';
import { blueprintOf } from './support/random-blueprint.js';
import { runCli, tempDir } from './support/cli.js';
import { editRow, rewrite, rows, type Row } from './support/rewrite-log.js';

interface Calls { planner: number; worker: string[] }

/** Run the build in `repo` to its end with the scripted planner and worker, counting their calls. */
async function runBuild(repo: string, blueprintPath: string): Promise<Calls> {
  const bp = loadBlueprint(blueprintPath);
  const calls: Calls = { planner: 0, worker: [] };
  const scriptedPlanner = new ScriptedPlanner(bp);
  const scriptedWorker = new ScriptedWorker(bp);
  const planner: Planner = { route: scriptedPlanner.route, propose: async (input) => ((calls.planner += 1), scriptedPlanner.propose(input)) };
  const worker: Worker = { implement: async (packet, worktree) => (calls.worker.push(packet.attemptId), scriptedWorker.implement(packet, worktree)) };
  const s = await openBuild({ repo, planner, worker, warn: () => undefined });
  try {
    const last = await s.runAll(() => undefined);
    expect(last?.outcome).toBe('horizon_complete');
  } finally {
    await s.close();
  }
  return calls;
}

function events(repo: string): StoredEvent[] {
  return rows(join(repo, '.longbuild', 'events.db'))
    .map((r) => ({ position: r.position, type: r.type, data: JSON.parse(r.data) }) as unknown as StoredEvent);
}

const tree = (repo: string): string => execFileSync('git', ['-C', repo, 'rev-parse', 'refs/heads/longbuild/integration^{tree}'], { encoding: 'utf8' }).trim();

/** What a result says, whoever made it: the recorded fields a reuse must carry over. */
function results(es: readonly StoredEvent[], after: number): string[] {
  return es.filter((e) => e.position > after && (e.type === 'AttemptFinished' || e.type === 'PlannerReturned')).map((e) => {
    const d = e.data as Record<string, unknown>;
    return e.type === 'PlannerReturned' ? `planner ${String(d.callId)} ${String(d.proposalSha256)}` : `attempt ${String(d.attemptId)} ${String(d.outcome)} ${String(d.tree ?? '-')} ${String(d.decision ?? '-')}`;
  });
}

/** Fork at `at`, or at the next point that is not inside one decision's events. */
async function forkAt(parent: string, at: number, to: string, blueprint?: string): Promise<number> {
  for (let p = at; ; p++) {
    try {
      await forkBuild({ parent: { repo: parent }, at: p, to, env: process.env, ...(blueprint !== undefined ? { driver: blueprintDriver(blueprint) } : {}) });
      return p;
    } catch (err) {
      if (!/inside one decision/.test((err as Error).message)) throw err;
    }
  }
}

/**
 * The oracle: which of the parent's calls after `point` a change of writable node `x`'s files
 * reaches, read from the parent's log. None if x was promoted by then; else x's own attempts and
 * every call whose base head holds x's promotion (started, or answered, after it).
 */
function reached(parent: readonly StoredEvent[], point: number, x: string): { attempts: string[]; plannerCalls: number } {
  const promoted = parent.find((e) => e.type === 'IntegrationPromoted' && ((e.data as { receipt: { nodeIds: string[] } }).receipt.nodeIds.includes(x)))!.position;
  if (promoted <= point) return { attempts: [], plannerCalls: 0 };
  const started = new Map(parent.filter((e) => e.type === 'AttemptStarted').map((e) => [(e.data as { attemptId: string }).attemptId, e.position]));
  const attempts = parent.filter((e) => e.type === 'AttemptFinished' && e.position > point).map((e) => e.data as { attemptId: string; nodeId: string })
    .filter((d) => d.nodeId === x || started.get(d.attemptId)! > promoted).map((d) => d.attemptId);
  const plannerCalls = parent.filter((e) => e.type === 'PlannerReturned' && e.position > point && e.position > promoted).length;
  return { attempts: attempts.sort(), plannerCalls };
}

const caseArb = dagArb({ minNodes: 2, maxNodes: 6, maxMilestones: 3, idPrefix: 'n' }).chain((dag) => fc.record({
  dag: fc.constant(dag),
  writable: fc.uniqueArray(fc.integer({ min: 0, max: dag.nodes.length - 1 }), { minLength: 1, maxLength: 3 }),
  detailedWindow: fc.constantFrom<1 | 2>(1, 2),
  point: fc.double({ min: 0, max: 1, noNaN: true }),
  changed: fc.nat(),
}));

describe('fork (R-41, issue 18)', () => {
  it('property: an unchanged fork reuses every result after the point (zero calls, same results and tree); a fork with one writable node changed redoes exactly the calls the change reaches', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ dag, writable, detailedWindow, point, changed }) => {
        const dir = tempDir('longbuild-fork-');
        const bpPath = join(dir, 'blueprint.json');
        const bp = blueprintOf(dag, writable, detailedWindow, 'random fork');
        writeFileSync(bpPath, JSON.stringify(bp));
        const parent = join(dir, 'parent');
        await initFromBlueprint(bpPath, { repo: parent });
        await runBuild(parent, bpPath);
        const parentEvents = events(parent);
        const at = await forkAt(parent, 1 + Math.floor(point * (parentEvents.length - 1)), join(dir, 'same'));

        // Unchanged: every call after the point is the parent's, adopted.
        const same = await runBuild(join(dir, 'same'), bpPath);
        expect(same).toEqual({ planner: 0, worker: [] });
        const sameEvents = events(join(dir, 'same'));
        expect(results(sameEvents, at + 1)).toEqual(results(parentEvents, at));
        expect(sameEvents.filter((e) => e.position > at + 1 && (e.type === 'AttemptFinished' || e.type === 'PlannerReturned')).every((e) => (e.data as { reused?: unknown }).reused !== undefined)).toBe(true);
        expect(tree(join(dir, 'same'))).toBe(tree(parent));

        // One writable node's files changed: the oracle's calls are made, the rest adopted.
        const x = dag.nodes[writable[changed % writable.length]!]!.id;
        const changedBp = structuredClone(bp) as { milestones: { nodes: { id: string; files?: Record<string, string> }[] }[] };
        for (const m of changedBp.milestones) for (const n of m.nodes) if (n.id === x) n.files = { [`src/${x}.txt`]: `${x} changed in the fork\n` };
        const changedPath = join(dir, 'changed.json');
        writeFileSync(changedPath, JSON.stringify(changedBp));
        const forked = join(dir, 'fork');
        const at2 = await forkAt(parent, at, forked, changedPath);
        const made = await runBuild(forked, changedPath);
        const expected = reached(parentEvents, at2, x);
        expect({ attempts: [...made.worker].sort(), plannerCalls: made.planner }).toEqual(expected);
        const forkEvents = events(forked);
        const redone = forkEvents.filter((e) => e.type === 'AttemptFinished' && e.position > at2 + 1 && (e.data as { reused?: unknown }).reused === undefined).map((e) => (e.data as { attemptId: string }).attemptId);
        expect(redone.sort()).toEqual(expected.attempts);
        // What the fork built is what a build of the changed blueprint builds (when the change came after the point).
        if (expected.attempts.length > 0) {
          const fresh = join(dir, 'fresh');
          await initFromBlueprint(changedPath, { repo: fresh });
          await runBuild(fresh, changedPath);
          expect(tree(forked)).toBe(tree(fresh));
        } else {
          expect(tree(forked)).toBe(tree(parent));
        }
      }),
      { numRuns: 5 },
    );
  }, 400_000);

  it('refuses a point inside one decision, outside the log, a non-empty target and a foreign signing key, with one line each and nothing written', async () => {
    const dir = tempDir('longbuild-fork-refuse-');
    const bpPath = join(dir, 'blueprint.json');
    writeFileSync(bpPath, JSON.stringify(blueprintOf({ nodes: [{ id: 'a', deps: [], milestone: 0 }], milestones: ['m1'], listing: [0] } as unknown as RandomDag, [0], 1)));
    const parent = join(dir, 'parent');
    expect(runCli(['init', '--blueprint', bpPath, '--repo', parent], { cwd: dir }).code).toBe(0);
    expect(runCli(['run', '--repo', parent], { cwd: dir }).code).toBe(0);
    const returned = events(parent).find((e) => e.type === 'PlannerReturned')!.position;
    const inside = runCli(['fork', '--repo', parent, '--at', String(returned), '--to', join(dir, 'f')], { cwd: dir });
    expect(inside.code).toBe(1);
    expect(inside.stderr).toMatch(/position \d+ is inside one decision's events \(PlannerReturned and HorizonSealed were appended together\); fork at \d+ or \d+/);
    expect(inside.stderr.trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(dir, 'f'))).toBe(false);
    const outside = runCli(['fork', '--repo', parent, '--at', '999', '--to', join(dir, 'f')], { cwd: dir });
    expect(outside.stderr).toMatch(/--at 999 is not a position of the parent's log \(1\.\.\d+\)/);
    writeFileSync(join(dir, 'occupied'), '');
    const occupied = runCli(['fork', '--repo', parent, '--at', '2', '--to', dir], { cwd: dir });
    expect(occupied.stderr).toMatch(/is not empty; give a new directory with --to/);
    const foreign = runCli(['fork', '--repo', parent, '--at', '2', '--to', join(dir, 'f')], { cwd: dir, env: { LONGBUILD_CONFIG_DIR: tempDir('lb-other-key-') } });
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/signing key|no such|does not exist|not found/i);
    expect(existsSync(join(dir, 'f'))).toBe(false);
    // An edited driver file is not carried into a fork.
    const driverFile = join(parent, '.longbuild', 'driver.json');
    const honestDriver = readFileSync(driverFile, 'utf8');
    writeFileSync(driverFile, honestDriver.replace('decided', 'DECIDED').replace('"verify":[]', '"verify":[["true"]]'));
    const edited = runCli(['fork', '--repo', parent, '--at', '2', '--to', join(dir, 'f')], { cwd: dir });
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(/the parent's driver file .* does not match the SHA-256 its log pins \(edited\?\)/);
    expect(existsSync(join(dir, 'f'))).toBe(false);
    writeFileSync(driverFile, honestDriver);
    const usage = runCli(['fork', '--repo', parent, '--to', join(dir, 'f')], { cwd: dir });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--at POSITION is required/);
  }, 120_000);

  it('a fork of a fork reuses its parent\'s results; verify checks each link, and names a parent rewritten after the fork', async () => {
    const dir = tempDir('longbuild-fork-chain-');
    const bpPath = join(dir, 'blueprint.json');
    const dag = { nodes: [{ id: 'a', deps: [], milestone: 0 }, { id: 'b', deps: ['a'], milestone: 0 }, { id: 'c', deps: ['b'], milestone: 1 }], milestones: ['m1', 'm2'], listing: [0, 1, 2] } as unknown as RandomDag;
    writeFileSync(bpPath, JSON.stringify(blueprintOf(dag, [0, 2], 1)));
    const parent = join(dir, 'parent');
    await initFromBlueprint(bpPath, { repo: parent });
    await runBuild(parent, bpPath);
    const sealed = events(parent).find((e) => e.type === 'HorizonSealed')!.position;
    await forkAt(parent, sealed, join(dir, 'f1'));
    expect(await runBuild(join(dir, 'f1'), bpPath)).toEqual({ planner: 0, worker: [] });
    const f1Events = events(join(dir, 'f1'));
    const bFinished = f1Events.find((e) => e.type === 'AttemptFinished' && (e.data as { nodeId: string }).nodeId === 'b')!.position;
    await forkAt(join(dir, 'f1'), bFinished, join(dir, 'f2'));
    expect(await runBuild(join(dir, 'f2'), bpPath)).toEqual({ planner: 0, worker: [] });
    expect(tree(join(dir, 'f2'))).toBe(tree(parent));
    const ok = runCli(['verify', '--repo', join(dir, 'f2'), '--json'], { cwd: dir });
    expect(ok.code, ok.stderr).toBe(0);
    const report = JSON.parse(ok.stdout) as { forks: { parent: { position: number }; reachable: boolean; reused: number; reusedChecked: number }[] };
    expect(report.forks.map((f) => f.parent.position)).toEqual([sealed, bFinished]);
    expect(report.forks.every((f) => f.reachable && f.reused > 0 && f.reusedChecked === f.reused)).toBe(true);

    // The parent edited after the fork: the fork's verify says its parent's log no longer verifies.
    const parentDb = join(dir, 'f1', '.longbuild', 'events.db');
    const target = rows(parentDb).filter((r) => r.type === 'AttemptFinished' && r.position > bFinished).at(-1)!;
    const edit = (all: Row[]): Row[] => all.map((r) => (r.position === target.position ? { ...r, data: r.data.replace('"outcome":"committed"', '"outcome":"recorded"') } : r));
    editRow(parentDb, target.position, () => ({ data: edit([target])[0]!.data }));
    const edited = runCli(['verify', '--repo', join(dir, 'f2')], { cwd: dir });
    expect(edited.code).toBe(1);
    expect(edited.stderr).toMatch(/fork of .* at \d+: .*(does not hash to its recorded hash \(edited\)|the parent's log does not verify)/);
    // Rewritten consistently (the chain re-hashed): the reused result is no longer the parent's event.
    rewrite(parentDb, (all) => all);
    const rewritten = runCli(['verify', '--repo', join(dir, 'f2')], { cwd: dir });
    expect(rewritten.code).toBe(1);
    expect(rewritten.stderr).toMatch(/fork of .* at \d+: (AttemptFinished is recorded as reused from the parent's event at \d+, but the parent's event at \d+ has another hash|the parent's event at \d+ is)/);
  }, 180_000);

  it('verify of a fork whose parent is gone checks the link from the fork\'s log alone and says so', async () => {
    const dir = tempDir('longbuild-fork-gone-');
    const bpPath = join(dir, 'blueprint.json');
    writeFileSync(bpPath, JSON.stringify(blueprintOf({ nodes: [{ id: 'a', deps: [], milestone: 0 }], milestones: ['m1'], listing: [0] } as unknown as RandomDag, [0], 1)));
    const parent = join(dir, 'parent');
    await initFromBlueprint(bpPath, { repo: parent });
    await runBuild(parent, bpPath);
    const sealed = events(parent).find((e) => e.type === 'HorizonSealed')!.position;
    await forkAt(parent, sealed, join(dir, 'f'));
    execFileSync('rm', ['-rf', parent]);
    // The parent's results cannot be had: the fork makes its calls, says why once, and completes.
    const s = await runBuild(join(dir, 'f'), bpPath);
    expect(s.worker).toEqual(['a.1']);
    const r = runCli(['verify', '--repo', join(dir, 'f')], { cwd: dir });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/parent not reachable at .*: the link is checked from this log alone/);
  }, 120_000);
  it('attack: a parent rewritten to hand the fork a protected file gets nothing onto the fork\'s integration ref (the reused files are checked like any candidate)', async () => {
    const dir = tempDir('longbuild-fork-hostile-');
    const bpPath = join(dir, 'blueprint.json');
    writeFileSync(bpPath, JSON.stringify({ ...blueprintOf({ nodes: [{ id: 'a', deps: [], milestone: 0 }], milestones: ['m1'], listing: [0] } as unknown as RandomDag, [0], 1), protectedPaths: ['secret'] }));
    const parent = join(dir, 'parent');
    await initFromBlueprint(bpPath, { repo: parent });
    await runBuild(parent, bpPath);
    const sealed = events(parent).find((e) => e.type === 'HorizonSealed')!.position;
    // The attacker controls the parent's files: a commit adding a protected file, on the same base,
    // named by the parent's recorded result for a.1 (the chain re-hashed so that it links).
    const I = join(parent, '.longbuild', 'integrator.git');
    const finished = rows(join(parent, '.longbuild', 'events.db')).find((r) => r.type === 'AttemptFinished')!;
    const honest = JSON.parse(finished.data) as { commit: string };
    const g = (args: string[], input?: string, env?: Record<string, string>): string => execFileSync('git', ['--git-dir', I, ...args], { encoding: 'utf8', input, env: { ...process.env, ...env } }).trim();
    const blob = g(['hash-object', '-w', '--stdin'], 'exfiltrated\n');
    const index = { GIT_INDEX_FILE: join(dir, 'evil.index') };
    g(['read-tree', `${honest.commit}^{tree}`], undefined, index);
    g(['update-index', '--add', '--cacheinfo', `100644,${blob},secret/key.txt`], undefined, index);
    const evilTree = g(['write-tree'], undefined, index);
    const evil = g(['commit-tree', evilTree, '-p', `${honest.commit}^`, '-m', 'evil'], undefined, { GIT_AUTHOR_NAME: 'x', GIT_AUTHOR_EMAIL: 'x@x', GIT_COMMITTER_NAME: 'x', GIT_COMMITTER_EMAIL: 'x@x' });
    rewrite(join(parent, '.longbuild', 'events.db'), (all) => all.map((r) => (r.position === finished.position ? { ...r, data: r.data.replace(honest.commit, evil).replace(/"tree":"[0-9a-f]{40}"/, `"tree":"${evilTree}"`) } : r)));
    await forkAt(parent, sealed, join(dir, 'f'));
    const made = await runBuild(join(dir, 'f'), bpPath);
    // The adopted files were refused by the fork's own host; the retry was a real call.
    const forkEvents = events(join(dir, 'f'));
    const first = forkEvents.find((e) => e.type === 'AttemptFinished')!.data as { outcome: string; reason?: string; reused?: unknown };
    expect(first.reused).toBeDefined();
    expect(first.outcome).toBe('failed');
    expect(first.reason).toMatch(/R-29/);
    expect(made.worker).toEqual(['a.2']);
    const onRef = execFileSync('git', ['-C', join(dir, 'f'), 'ls-tree', '-r', '--name-only', 'refs/heads/longbuild/integration'], { encoding: 'utf8' });
    expect(onRef).not.toMatch(/secret/);
    expect(onRef).toMatch(/src\/a\.txt/);
    // And verify of the fork names the parent as not what it was when it was forked (its chain was rewritten).
    const r = runCli(['verify', '--repo', join(dir, 'f')], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/fork of .*: /);
  }, 120_000);
});
