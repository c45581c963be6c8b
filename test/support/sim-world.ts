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
import type { GitPort, EvidenceStore, VerificationRun } from '../../src/adapters/controller/effect-ports.js';
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
  /** Node id -> how long its worker call takes, in the world's own time units (default 1). */
  readonly durations?: Readonly<Record<string, number>>;
  /** Node id -> how long verifying a job holding it takes in the world's time (a job: its slowest node; default 0: at once). */
  readonly verifyDurations?: Readonly<Record<string, number>>;
  /** How many times acceptance fails on a head holding this work (default: never). */
  readonly acceptFails?: (content: readonly string[]) => number;
  /** How long an acceptance run takes in the world's time (default 0). */
  readonly acceptDuration?: number;
}

export class SimWorld {
  readonly refs = new Map<string, string>();
  readonly published = new Map<string, string>();
  /** commit -> its parent, its tree, and the node attempt it came from (null: an integration result). */
  readonly commits = new Map<string, { parent: string; tree: string; attemptId: string | null }>();
  /** tree -> the nodes whose work it holds (a tree is its content: the same set, the same tree, in any order). */
  private readonly trees = new Map<string, readonly string[]>();
  readonly clones = new Set<string>();
  readonly marks = new Set<string>();
  readonly kept = new Map<string, JsonValue>();
  readonly evidenceBytes = new Map<string, Uint8Array>();
  /** Every worker call made, by idempotency key. */
  readonly workerCalls: string[] = [];
  /** Every planner call made, by call id. */
  readonly plannerCalls: string[] = [];
  /**
   * Worker calls in progress. They return in the order of the world's clock (the time a call
   * started plus its duration), one per turn of the event loop, so which calls overlap — and the
   * order their results arrive in — depends on the controller and the script alone, not on timing.
   */
  private readonly pending: { finishAt: number; key: string; kind: 'worker' | 'verify' | 'accept'; resolve: () => void }[] = [];
  private clock = 0;
  /** The most worker calls that were in progress at once. */
  maxOverlap = 0;
  /** The most verifications that were in progress at once (speculative integration). */
  maxJobs = 0;
  /** Every verification run, by job id. */
  readonly verifications: string[] = [];
  /** Every acceptance run, by run id. */
  readonly acceptanceRuns: string[] = [];
  /** Failures of acceptance still to come, by the content of the head checked. */
  private readonly acceptFailsLeft = new Map<string, number>();

  /** Call marks without a kept outcome: calls a crash left in doubt (key#invocation). */
  inDoubt(): string[] {
    return [...this.marks].filter((m) => !this.kept.has(m));
  }

  constructor(readonly script: SimScript, integrationRef: string, baseHead: string) {
    this.refs.set(integrationRef, baseHead);
    this.published.set(integrationRef, baseHead);
    this.commits.set(baseHead, { parent: '', tree: this.tree([]), attemptId: null });
  }

  /** A call that takes `duration` units of the world's time; 0: it returns at once. */
  private async takeTime(key: string, duration: number, kind: 'worker' | 'verify' | 'accept'): Promise<void> {
    if (duration <= 0) return;
    await new Promise<void>((resolve) => {
      this.pending.push({ finishAt: this.clock + duration, key, kind, resolve });
      this.maxOverlap = Math.max(this.maxOverlap, this.pending.filter((p) => p.kind === 'worker').length);
      this.maxJobs = Math.max(this.maxJobs, this.pending.filter((p) => p.kind === 'verify').length);
      setImmediate(() => this.returnNext());
    });
  }

  /** The call in progress that ends first returns (ties: by key). */
  private returnNext(): void {
    this.pending.sort((a, b) => a.finishAt - b.finishAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const next = this.pending.shift();
    if (next === undefined) return;
    this.clock = next.finishAt;
    next.resolve();
  }

  treeOf(commit: string): string {
    return this.commits.get(commit)?.tree ?? sha('tree', 'unknown', commit);
  }

  /** The nodes whose work a commit's tree holds. */
  contentOf(commit: string): readonly string[] {
    return this.trees.get(this.treeOf(commit)) ?? [];
  }

  private tree(nodes: readonly string[]): string {
    const set = [...new Set(nodes)].sort();
    const t = sha('tree', ...set);
    this.trees.set(t, set);
    return t;
  }

  readonly evidence: EvidenceStore = {
    put: (bytes) => {
      const h = sha256Hex(bytes);
      this.evidenceBytes.set(h, bytes);
      return h;
    },
    get: (h) => this.evidenceBytes.get(h) ?? null,
  };

  /**
   * Kept outcomes written and not flushed yet (a power loss would take them; a killed process
   * would not): a flushed line (a mark, a flushed keep, `flush`) makes every earlier one durable.
   */
  readonly unflushedKept = new Set<string>();
  /** Called just before the world changes (a commit of an attempt, a verification, a promotion). */
  onWorldChange: ((what: string) => void) | null = null;

  readonly calls: CallMarks = {
    mark: (key, n) => {
      this.marks.add(`${key}#${n}`);
      this.unflushedKept.clear();
    },
    started: (key, n) => this.marks.has(`${key}#${n}`),
    keep: (key, n, outcome, options) => {
      this.kept.set(`${key}#${n}`, outcome);
      if (options?.flush === false) this.unflushedKept.add(key);
      else this.unflushedKept.clear();
    },
    kept: (key, n) => this.kept.get(`${key}#${n}`) ?? null,
    flush: () => this.unflushedKept.clear(),
  };

  readonly worker: Worker = {
    implement: async (packet: WorkPacket, worktree: string) => {
      this.workerCalls.push(packet.idempotencyKey);
      await this.takeTime(packet.idempotencyKey, this.script.durations?.[packet.nodeId] ?? 1, 'worker');
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
    contentOf: async () => null,
    materialize: async () => {
      throw new Error('the simulated world has no fork parent to materialize from');
    },
    deleteAttemptBranches: async (ids) => {
      for (const id of ids) this.refs.delete(ATTEMPTS + id);
    },
    findAttemptCommit: async (branch, baseHead) => {
      const c = this.refs.get(branch);
      return c !== undefined && this.commits.get(c)?.parent === baseHead ? { commit: c, tree: this.treeOf(c) } : null;
    },
    commitAttempt: async (branch, baseHead, _worktree, message, date) => {
      this.onWorldChange?.(`commit ${branch}`);
      const attemptId = branch.slice(ATTEMPTS.length);
      const commit = sha('commit', branch, baseHead, message, date);
      this.commits.set(commit, { parent: baseHead, tree: this.tree([...this.contentOf(baseHead), attemptId.replace(/\.\d+$/, '')]), attemptId });
      this.refs.set(branch, commit);
      return { kind: 'committed', commit, tree: this.treeOf(commit) };
    },
    removeAttemptWorktree: async (attemptId) => void this.clones.delete(attemptId),
    keptAttemptWorktree: async (attemptId) => (this.clones.has(attemptId) ? `/sim/${attemptId}` : null),
    candidateProblem: async () => null,
    integrateAndVerify: async (jobId, head, candidates, date, _commands, opts = {}) => {
      this.onWorldChange?.(`verify ${jobId}`);
      // Each job's candidates as git applies them: a lone candidate on the tip is a fast-forward,
      // anything else a new commit of (tip, date, candidates) — so a stacked job's tip under its
      // own candidates is exactly the commit the jobs below it promote (speculative integration).
      const layers = [...(opts.layers ?? []), { jobId, commits: candidates, date }];
      let tip = head;
      let under = head;
      for (const l of layers) {
        if (l.jobId === jobId) under = tip;
        const only = l.commits.length === 1 ? this.commits.get(l.commits[0]!) : undefined;
        if (only !== undefined && only.parent === tip) {
          tip = l.commits[0]!;
          continue;
        }
        const tree = this.tree([...this.contentOf(tip), ...l.commits.flatMap((c) => this.contentOf(c))]);
        const next = sha('merge', tip, l.date, ...l.commits);
        this.commits.set(next, { parent: tip, tree, attemptId: null });
        tip = next;
      }
      const nodes = layers.flatMap((l) => l.commits.map((c) => this.commits.get(c)?.attemptId ?? '?'));
      const own = candidates.map((c) => (this.commits.get(c)?.attemptId ?? '?').replace(/\.\d+$/, ''));
      await this.takeTime(`verify:${jobId}`, Math.max(0, ...own.map((id) => this.script.verifyDurations?.[id] ?? 0)), 'verify');
      const passes = nodes.every((a) => Number(a.slice(a.lastIndexOf('.') + 1)) > (this.script.verifyFails[a.slice(0, a.lastIndexOf('.'))] ?? 0));
      const run = (): VerificationRun['commands'][number] => ({
        argv: ['sim-verify'], exitCode: passes ? 0 : 1, stdout: Buffer.from(`verified ${nodes.join(' ')}\n`), stderr: Buffer.from(passes ? '' : 'sim: failing\n'),
        durationMs: 1, cacheHit: false,
      });
      const commands = !passes && opts.retestOnFailure === true ? [run(), run()] : [run()];
      const verification: VerificationRun = { passed: passes, ...(passes ? {} : { reason: `sim-verify exited 1${commands.length > 1 ? ' (failed twice on the same tree)' : ''}` }), commands };
      this.verifications.push(jobId);
      return { ok: true, resultCommit: tip, tree: this.treeOf(tip), under, verification };
    },
    checkHead: async (runId, head) => {
      // Acceptance: the head's content passes unless the script fails it for that content (a number of times).
      const content = this.contentOf(head);
      const key = content.join(',');
      const fails = (this.acceptFailsLeft.get(key) ?? this.script.acceptFails?.(content) ?? 0);
      this.acceptFailsLeft.set(key, Math.max(0, fails - 1));
      const passed = fails === 0;
      this.acceptanceRuns.push(runId);
      await this.takeTime(`accept:${runId}`, this.script.acceptDuration ?? 0, 'accept');
      const command = { argv: ['sim-accept'], exitCode: passed ? 0 : 1, stdout: Buffer.from(`accepted ${key}\n`), stderr: Buffer.from(passed ? '' : 'sim: acceptance failing\n'), durationMs: 1, cacheHit: false };
      return { tree: this.treeOf(head), verification: { passed, ...(passed ? {} : { reason: 'sim-accept exited 1' }), commands: [command] } };
    },
    holdoutCommit: async () => {
      throw new Error('the simulated world has no test policy: nothing asks for a hold-out');
    },
    readRef: async (ref) => this.refs.get(ref) ?? null,
    promote: async (ref, commit, expectedOld) => {
      this.onWorldChange?.(`promote ${commit}`);
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

/**
 * A fault injector that crashes at the k-th point reached (counting from 1; 0: never), and counts
 * them. After the crash every point throws: a dead controller does nothing more, in any of its
 * chains (as SIGKILL would have it), while calls already made by the world may still return.
 */
export class CrashAt implements FaultInjector {
  reached = 0;
  lastPoint = '';
  crashed = false;
  constructor(private readonly at: number) {}
  reach(point: string): void {
    if (this.crashed) throw new SimCrash('the controller is dead');
    this.reached += 1;
    this.lastPoint = point;
    if (this.reached === this.at) {
      this.crashed = true;
      throw new SimCrash(`crashed at ${point} (#${this.at})`);
    }
  }
}
