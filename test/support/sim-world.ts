/**
 * A TEST DOUBLE of everything outside the host: git (refs, attempt branches, clones, integration
 * and verification), the worker, the call marks and the evidence store, all in memory, so that
 * the real controller (the pure step and its interpreter, the real effect runner, a real SQLite
 * log in memory) can run hundreds of whole builds per second in a property. The world outlives a
 * simulated crash (as a disk does); the controller does not. The real-process counterparts of
 * these properties are test/resume-property.test.ts and `longbuild fuzz` (real git, real SIGKILL).
 */
import type { JsonValue } from '../../src/events/canonical.js';
import { sha256Hex } from '../../src/events/hash.js';
import type { Worker, WorkPacket } from '../../src/commands/ports.js';
import type { GitPort, EvidenceStore, VerificationRun } from '../../src/adapters/controller/ports.js';
import type { CallMarks } from '../../src/adapters/controller/call-marks.js';
import type { FaultInjector } from '../../src/adapters/faults.js';
import type { ObservedRefs, RefRepair } from '../../src/commands/refs.js';

const ATTEMPTS = 'refs/heads/longbuild/attempts/';
const sha = (...parts: string[]): string => sha256Hex(parts.join('\0')).slice(0, 40);

/** What the simulated agents and verification do: which attempts fail, which verifications fail. */
export interface SimScript {
  /** Node id -> the number of first attempts whose worker fails. */
  readonly workerFails: Readonly<Record<string, number>>;
  /** Node id -> the number of first attempts whose candidate fails verification. */
  readonly verifyFails: Readonly<Record<string, number>>;
}

export class SimWorld {
  readonly refs = new Map<string, string>();
  readonly published = new Map<string, string>();
  /** commit -> its parent, its tree, and the node attempt it came from (null: an integration result). */
  readonly commits = new Map<string, { parent: string; tree: string; attemptId: string | null }>();
  readonly clones = new Set<string>();
  readonly marks = new Set<string>();
  readonly kept = new Map<string, JsonValue>();
  readonly evidenceBytes = new Map<string, Uint8Array>();
  /** Every worker call made, by idempotency key. */
  readonly workerCalls: string[] = [];
  /** Every planner call made, by call id. */
  readonly plannerCalls: string[] = [];

  constructor(readonly script: SimScript, integrationRef: string, baseHead: string) {
    this.refs.set(integrationRef, baseHead);
    this.published.set(integrationRef, baseHead);
    this.commits.set(baseHead, { parent: '', tree: sha('tree', 'base'), attemptId: null });
  }

  treeOf(commit: string): string {
    return this.commits.get(commit)?.tree ?? sha('tree', 'unknown', commit);
  }

  readonly evidence: EvidenceStore = {
    put: (bytes) => {
      const h = sha256Hex(bytes);
      this.evidenceBytes.set(h, bytes);
      return h;
    },
    get: (h) => this.evidenceBytes.get(h) ?? null,
  };

  readonly calls: CallMarks = {
    mark: (key, n) => void this.marks.add(`${key}#${n}`),
    started: (key, n) => this.marks.has(`${key}#${n}`),
    keep: (key, n, outcome) => void this.kept.set(`${key}#${n}`, outcome),
    kept: (key, n) => this.kept.get(`${key}#${n}`) ?? null,
  };

  readonly worker: Worker = {
    implement: async (packet: WorkPacket, worktree: string) => {
      this.workerCalls.push(packet.idempotencyKey);
      if (packet.kind === 'writable' && !this.clones.has(packet.attemptId)) throw new Error(`sim: no clone ${worktree} for ${packet.attemptId}`);
      const fails = packet.attempt <= (this.script.workerFails[packet.nodeId] ?? 0);
      const stdout = `${packet.nodeId} attempt ${packet.attempt}\n`;
      if (fails) return { outcome: 'failed', stdout, stderr: 'sim: failing on purpose\n', reason: 'exit 1' };
      return packet.kind === 'writable'
        ? { outcome: 'committed', stdout, stderr: '' }
        : { outcome: 'recorded', stdout, stderr: '', decision: `decided ${packet.nodeId}` };
    },
  };

  readonly git: GitPort = {
    prepareAttemptWorktree: async (attemptId) => {
      this.clones.add(attemptId);
      return { worktree: `/sim/${attemptId}`, reworked: false };
    },
    filesChangedBy: async () => [],
    deleteAttemptBranches: async (ids) => {
      for (const id of ids) this.refs.delete(ATTEMPTS + id);
    },
    findAttemptCommit: async (branch, baseHead) => {
      const c = this.refs.get(branch);
      return c !== undefined && this.commits.get(c)?.parent === baseHead ? { commit: c, tree: this.treeOf(c) } : null;
    },
    commitAttempt: async (branch, baseHead, _worktree, message, date) => {
      const attemptId = branch.slice(ATTEMPTS.length);
      const commit = sha('commit', branch, baseHead, message, date);
      this.commits.set(commit, { parent: baseHead, tree: sha('tree', this.treeOf(baseHead), attemptId.replace(/\.\d+$/, '')), attemptId });
      this.refs.set(branch, commit);
      return { kind: 'committed', commit, tree: this.treeOf(commit) };
    },
    removeAttemptWorktree: async (attemptId) => void this.clones.delete(attemptId),
    keptAttemptWorktree: async (attemptId) => (this.clones.has(attemptId) ? `/sim/${attemptId}` : null),
    candidateProblem: async () => null,
    integrateAndVerify: async (jobId, head, candidates, date, _commands, opts = {}) => {
      const nodes = candidates.map((c) => this.commits.get(c)?.attemptId ?? '?');
      const tree = sha('tree', this.treeOf(head), ...candidates.map((c) => this.treeOf(c)).sort());
      const resultCommit = sha('merge', jobId, head, date, ...candidates);
      this.commits.set(resultCommit, { parent: head, tree, attemptId: null });
      const passes = nodes.every((a) => Number(a.slice(a.lastIndexOf('.') + 1)) > (this.script.verifyFails[a.slice(0, a.lastIndexOf('.'))] ?? 0));
      const run = (): VerificationRun['commands'][number] => ({
        argv: ['sim-verify'], exitCode: passes ? 0 : 1, stdout: Buffer.from(`verified ${nodes.join(' ')}\n`), stderr: Buffer.from(passes ? '' : 'sim: failing\n'),
        durationMs: 1, cacheHit: false,
      });
      const commands = !passes && opts.retestOnFailure === true ? [run(), run()] : [run()];
      const verification: VerificationRun = { passed: passes, ...(passes ? {} : { reason: `sim-verify exited 1${commands.length > 1 ? ' (failed twice on the same tree)' : ''}` }), commands };
      return { ok: true, resultCommit, tree, verification };
    },
    readRef: async (ref) => this.refs.get(ref) ?? null,
    promote: async (ref, commit, expectedOld) => {
      const actual = this.refs.get(ref) ?? null;
      if (actual !== expectedOld) return { ok: false, actual };
      this.refs.set(ref, commit);
      this.published.set(ref, commit);
      return { ok: true };
    },
    observeRefs: async (ref, withAttempts): Promise<ObservedRefs> => {
      const base = { integration: this.refs.get(ref) ?? null, published: this.published.get(ref) ?? null };
      if (!withAttempts) return base;
      const attempts: Record<string, string> = {};
      for (const [name, c] of this.refs) if (name.startsWith(ATTEMPTS)) attempts[name.slice(ATTEMPTS.length)] = c;
      return { ...base, attempts };
    },
    repairRef: async (r: RefRepair) => {
      const map = r.where === 'published' ? this.published : this.refs;
      if (r.expected === null) map.delete(r.ref);
      else map.set(r.ref, r.expected);
    },
  };
}

/** Thrown at the chosen fault point: the controller dies there, the world stays. */
export class SimCrash extends Error {}

/** A fault injector that crashes at the k-th point reached (counting from 1; 0: never), and counts them. */
export class CrashAt implements FaultInjector {
  reached = 0;
  lastPoint = '';
  constructor(private readonly at: number) {}
  reach(point: string): void {
    this.reached += 1;
    this.lastPoint = point;
    if (this.reached === this.at) throw new SimCrash(`crashed at ${point} (#${this.at})`);
  }
}
