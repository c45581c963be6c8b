import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { cliJson, runCli, tempDir } from './support/cli.js';
import fc from 'fast-check';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBlueprint, parseBlueprint, type Blueprint } from '../src/adapters/blueprint/blueprint.js';
import { ScriptedPlanner, scriptedProposal } from '../src/adapters/blueprint/scripted-planner.js';
import { ScriptedWorker } from '../src/adapters/blueprint/scripted-worker.js';
import { readLedger } from '../src/adapters/blueprint/effects-ledger.js';
import {
  attemptBranch,
  commitAttempt,
  findAttemptCommit,
  git,
  integrateCandidates,
  prepareAttemptWorktree,
} from '../src/adapters/git/git.js';
import { verifyWithCache } from '../src/adapters/cache/cached-verification.js';
import { commitOpts, directRunner, newRepo } from './support/git-fixture.js';
import { MilestoneRefSchema, PlannedNodeSchema } from '../src/events/catalogue.js';
import type { PlannerInput, WorkPacket } from '../src/commands/ports.js';
import { argvsOf } from '../src/adapters/verify-commands.js';

const HELIOS = join(import.meta.dirname, 'fixtures', 'helios.json');
const DATE = '2025-03-01T12:00:00Z';
const PATH = process.env['PATH'] ?? '/usr/bin:/bin';
const ProposedNode = PlannedNodeSchema.omit({ milestone: true });

function input(purpose: 'seal' | 'renew', horizon: PlannerInput['horizon'], callId = 'call-1'): PlannerInput {
  return { purpose, callId, request: {}, horizon, checkpoints: [], graph: { revision: 0, sha256: '0'.repeat(64), nodes: [] }, integrationHead: '0'.repeat(40) };
}

/** A synthetic blueprint of `count` milestones with one read-only node each. */
function synthetic(count: number, detailedWindow: 1 | 2, coarseWindow?: number): Blueprint {
  return parseBlueprint({
    request: { title: 'synthetic' },
    verify: [],
    detailedWindow,
    ...(coarseWindow === undefined ? {} : { coarseWindow }),
    milestones: Array.from({ length: count }, (_, i) => ({ id: `m${i}`, title: `M${i}`, nodes: [{ id: `n${i}`, kind: 'read-only', deps: i === 0 ? [] : [`n${i - 1}`] }] })),
  });
}

function packet(nodeId: string, attempt: number, baseHead: string, kind: 'read-only' | 'writable' = 'writable'): WorkPacket {
  const attemptId = `${nodeId}.${attempt}`;
  return { attemptId, idempotencyKey: `worker:${attemptId}`, nodeId, attempt, kind, milestone: 'm', deps: [], baseHead, branch: attemptBranch(attemptId), commitDate: DATE };
}

describe('scripted planner (docs/cli.md blueprint, R-13 input)', () => {
  it('R-13 seal proposes the first detailedWindow milestones in detail and the next ones coarse', async () => {
    const bp = loadBlueprint(HELIOS);
    const p = (await new ScriptedPlanner(bp).propose(input('seal', null))) as any;
    expect(p.detailed.map((m: any) => m.id)).toEqual(['interfaces-and-api', 'running-home']);
    expect(p.detailed[0].nodes.map((n: any) => n.id)).toEqual(['interfaces', 'catalog-api']);
    expect(p.detailed[0].nodes[0]).toEqual({ id: 'interfaces', kind: 'read-only', deps: [], accepted: true, contract: 'helios-interfaces@1' });
    expect(p.coarse).toEqual([{ id: 'release-preview', title: 'Release preview', intent: 'ship a preview with release notes' }]);
    // Blueprint-only fields never reach the proposal; the host adds `milestone`.
    for (const m of p.detailed) {
      expect(Object.keys(m).sort()).toEqual(['id', 'nodes', 'title']);
      for (const n of m.nodes) {
        expect(ProposedNode.safeParse(n).success).toBe(true);
        for (const k of ['files', 'failFiles', 'failAttempts', 'milestone']) expect(n).not.toHaveProperty(k);
      }
    }
    for (const c of p.coarse) expect(MilestoneRefSchema.safeParse(c).success).toBe(true);
  });

  it('R-15 renew promotes the first coarse milestones and refills the coarse list', async () => {
    const bp = loadBlueprint(HELIOS);
    const planner = new ScriptedPlanner(bp);
    const sealed = scriptedProposal(bp, input('seal', null));
    const renewed = (await planner.propose(input('renew', { horizonId: 'h', revision: 1, detailed: sealed.detailed.map(({ nodes: _n, ...m }) => m), coarse: sealed.coarse }))) as any;
    expect(renewed.detailed.map((m: any) => m.id)).toEqual(['release-preview']);
    expect(renewed.detailed[0].nodes).toEqual([{ id: 'release-notes', kind: 'writable', deps: ['caregiver-home'] }]);
    expect(renewed.coarse).toEqual([]);
    const bp20 = synthetic(20, 2);
    const s = scriptedProposal(bp20, input('seal', null));
    expect(s.detailed.map((m) => m.id)).toEqual(['m0', 'm1']);
    expect(s.coarse.map((m) => m.id)).toEqual(['m2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9', 'm10', 'm11', 'm12', 'm13']);
    const r = scriptedProposal(bp20, input('renew', { horizonId: 'h', revision: 1, detailed: [], coarse: s.coarse }));
    expect(r.detailed.map((m) => m.id)).toEqual(['m2', 'm3']);
    expect(r.coarse.map((m) => m.id)).toEqual(['m4', 'm5', 'm6', 'm7', 'm8', 'm9', 'm10', 'm11', 'm12', 'm13', 'm14', 'm15']);
  });

  it('R-13 an invalid window is proposed as written (coarseWindow 13), for the host to refuse', () => {
    const p = scriptedProposal(synthetic(20, 1, 13), input('seal', null));
    expect(p.detailed).toHaveLength(1);
    expect(p.coarse).toHaveLength(13);
  });

  it('R-15 successive renewals walk every milestone once, in order (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.constantFrom(1 as const, 2 as const), fc.integer({ min: 0, max: 14 }), (count, dw, cw) => {
        const bp = synthetic(count, dw, cw);
        let p = scriptedProposal(bp, input('seal', null));
        const seen = p.detailed.map((m) => m.id);
        for (let i = 0; i < count && p.coarse.length > 0; i++) {
          expect(p.coarse.length).toBeLessThanOrEqual(cw);
          const before = p.coarse.length;
          p = scriptedProposal(bp, input('renew', { horizonId: 'h', revision: i + 1, detailed: [], coarse: p.coarse }));
          expect(p.detailed.length).toBe(Math.min(dw, before));
          seen.push(...p.detailed.map((m) => m.id));
        }
        // With a coarse window of 0 nothing is ever queued for renewal.
        const expected = cw === 0 ? bp.milestones.slice(0, dw) : bp.milestones;
        expect(seen).toEqual(expected.map((m) => m.id));
      }),
      { numRuns: 200 },
    );
  });

  it('R-18 each planner invocation is in the effects ledger with its call id', async () => {
    const ledgerPath = join(mkdtempSync(join(tmpdir(), 'lb-ledger-')), 'effects.ndjson');
    const planner = new ScriptedPlanner(loadBlueprint(HELIOS), { ledgerPath });
    await planner.propose(input('seal', null, 'plan-1'));
    await planner.propose(input('seal', null, 'plan-1'));
    expect(readLedger(readFileSync(ledgerPath, 'utf8'))).toEqual([
      { kind: 'planner', key: 'plan-1', pid: process.pid },
      { kind: 'planner', key: 'plan-1', pid: process.pid },
    ]);
    expect(planner.route).toBe('scripted:blueprint');
  });
});

describe('scripted worker (R-24, R-29)', () => {
  const repoWithHead = newRepo;
  /** The host's part after a worker returns: commit the clone's files on the attempt branch. */
  const hostCommit = (repo: string, worktree: string, pk: WorkPacket, head: string) => commitAttempt(repo, worktree, pk.branch, head, `longbuild: ${pk.nodeId}`, pk.commitDate, commitOpts());
  const runVerification = (job: { workspace: string; gitDir: string; tree: string }, commands: readonly (readonly string[])[]) =>
    verifyWithCache({ workspace: job.workspace, gitDir: job.gitDir, tree: job.tree, commands, env: { PATH }, timeoutMs: 60_000, cache: null, run: directRunner });

  it('R-24 helios catalog-api: files committed on the attempt branch, same commit in any repo, verification passes', async () => {
    const bp = loadBlueprint(HELIOS);
    const commits: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { repo, head, wt, ws } = await repoWithHead();
      const pk = packet('catalog-api', 1, head);
      const prepared = await prepareAttemptWorktree(repo, wt, pk.attemptId, pk.branch, head);
      const res = await new ScriptedWorker(bp).implement(pk, prepared.worktree);
      expect(res.outcome).toBe('committed');
      await hostCommit(repo, prepared.worktree, pk, head);
      const found = await findAttemptCommit(repo, pk.branch, head);
      if (found === null) throw new Error('no attempt commit');
      commits.push(found.commit);
      expect((await git(repo, ['ls-tree', '-r', '--name-only', found.commit])).stdout).toBe('src/catalog.js\ntest/catalog.test.js\n');
      expect((await git(repo, ['show', `${found.commit}:src/catalog.js`])).stdout).toBe(bp.milestones[0]!.nodes[1]!.files!['src/catalog.js']);
      if (i === 0) {
        const job = await integrateCandidates(repo, ws, 'job-1', head, [found.commit], DATE);
        if (job.kind !== 'applied') throw new Error('conflict');
        const v = await runVerification(job, argvsOf(bp.verify));
        expect(v.passed).toBe(true);
      }
    }
    expect(commits[0]).toBe(commits[1]);
  });

  it('R-24 failAttempts: early attempts write a failing test, later ones the real files', async () => {
    const bp = parseBlueprint({
      request: {},
      verify: [['node', '--test']],
      detailedWindow: 1,
      milestones: [{ id: 'm', title: 'M', nodes: [{ id: 'flaky', kind: 'writable', deps: [], failAttempts: 1, files: { 'test/ok.test.js': "require('node:test')('ok', () => {});\n" } }] }],
    });
    const { repo, head, wt, ws } = await repoWithHead();
    const results: boolean[] = [];
    for (const attempt of [1, 2]) {
      const pk = packet('flaky', attempt, head);
      const prepared = await prepareAttemptWorktree(repo, wt, pk.attemptId, pk.branch, head);
      expect((await new ScriptedWorker(bp).implement(pk, prepared.worktree)).outcome).toBe('committed');
      await hostCommit(repo, prepared.worktree, pk, head);
      const c = await findAttemptCommit(repo, pk.branch, head);
      const files = (await git(repo, ['ls-tree', '-r', '--name-only', c!.commit])).stdout;
      expect(files).toBe(attempt === 1 ? 'test/longbuild-fail-flaky.test.js\n' : 'test/ok.test.js\n');
      const job = await integrateCandidates(repo, ws, `job-${attempt}`, head, [c!.commit], DATE);
      if (job.kind !== 'applied') throw new Error('conflict');
      results.push((await runVerification(job, argvsOf(bp.verify))).passed);
    }
    expect(results).toEqual([false, true]);
  });

  it('R-29 a read-only node records its decision and writes nothing; every call is in the ledger first', async () => {
    const bp = parseBlueprint({
      request: {},
      verify: [],
      detailedWindow: 1,
      milestones: [{ id: 'm', title: 'M', nodes: [{ id: 'review', kind: 'read-only', deps: [], decision: 'use sqlite' }, { id: 'plain', kind: 'writable', deps: [] }] }],
    });
    const ledgerPath = join(mkdtempSync(join(tmpdir(), 'lb-ledger-')), 'effects.ndjson');
    const { repo, head, wt } = await repoWithHead();
    const worker = new ScriptedWorker(bp, { ledgerPath });
    const pk = packet('review', 1, head, 'read-only');
    const prepared = await prepareAttemptWorktree(repo, wt, pk.attemptId, pk.branch, head);
    expect(await worker.implement(pk, prepared.worktree)).toEqual({ outcome: 'recorded', decision: 'use sqlite', stdout: '', stderr: '' });
    expect(await findAttemptCommit(repo, pk.branch, head)).toBeNull();
    // A writable node without files still commits one deterministic marker file.
    const pk2 = packet('plain', 1, head);
    const prepared2 = await prepareAttemptWorktree(repo, wt, pk2.attemptId, pk2.branch, head);
    expect((await worker.implement(pk2, prepared2.worktree)).outcome).toBe('committed');
    expect(existsSync(join(prepared2.worktree, 'nodes', 'plain.txt'))).toBe(true);
    // Unknown node: a failed result, but the invocation is still recorded.
    const bad = await worker.implement(packet('ghost', 1, head), prepared2.worktree);
    expect(bad).toMatchObject({ outcome: 'failed', reason: expect.stringMatching(/not in the blueprint/) });
    expect(readLedger(readFileSync(ledgerPath, 'utf8'))).toEqual([
      { kind: 'worker', key: 'worker:review.1', nodeId: 'review', pid: process.pid },
      { kind: 'worker', key: 'worker:plain.1', nodeId: 'plain', pid: process.pid },
      { kind: 'worker', key: 'worker:ghost.1', nodeId: 'ghost', pid: process.pid },
    ]);
  });
});

describe('R-14 every pin of a sealed or renewed horizon', () => {
  /** Canonical JSON written here, independently of src/events/canonical.ts: sorted keys, no spaces (plain JSON values). */
  const canon = (v: unknown): string => (Array.isArray(v) ? `[${v.map(canon).join(',')}]`
    : v !== null && typeof v === 'object' ? `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon((v as Record<string, unknown>)[k])}`).join(',')}}` : JSON.stringify(v));

  it('pins the request SHA-256, graph revision, integration head, accepted contracts and foundations, creation time and planner route as the log stood', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    const events = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const request = JSON.parse(readFileSync(HELIOS, 'utf8')).request;
    const horizons = events.filter((e) => e.type === 'HorizonSealed' || e.type === 'HorizonRenewed');
    expect(horizons.map((e) => e.type)).toEqual(['HorizonSealed', 'HorizonRenewed']);
    for (const h of horizons) {
      const before = cliJson(['show', '--at', String(h.position - 1)], { cwd: repo });
      const accepted = (before.nodes as { id: string; state: string }[]).filter((n) => n.state === 'accepted').map((n) => n.id);
      // Contracts accepted before this point, from the horizons that declared them.
      const contracts = horizons.filter((x) => x.position < h.position).flatMap((x) => x.data.nodes)
        .filter((n: { id: string; contract?: string }) => n.contract !== undefined && (accepted.includes(n.id) || events.some((e) => e.position < h.position && e.type === 'MilestoneCompacted' && e.data.summary.compactedNodeIds.includes(n.id))))
        .map((n: { contract: string }) => n.contract);
      expect(h.data.pins).toEqual({
        requestSha256: createHash('sha256').update(canon(request)).digest('hex'),
        graphRevision: before.graphRevision,
        integrationHead: before.integrationHead,
        contracts: h.type === 'HorizonSealed' ? [] : contracts,
        foundations: [],
        createdAt: h.metadata.recordedAt,
        plannerRoute: 'scripted:blueprint',
      });
    }
    expect(horizons[1].data.pins.contracts).toEqual(['helios-interfaces@1']);
  });
});
