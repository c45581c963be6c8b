/**
 * What a fuzz campaign is asked for and what it reports (`longbuild fuzz`): its
 * options, cases and failures, the report `--report FILE` writes, and the command that
 * reproduces one case.
 */
import { writeFileSync } from 'node:fs';
import type { CallProblem, Divergence, PointOccurrence } from '../../commands/fuzz-compare.js';
import { redactedUrl } from '../log/pg-connection.js';
import type { SnapshotMode } from './cli-snapshot.js';
import type { OutageProxy } from './outage-proxy.js';

/** What a fuzzed build is made from: a blueprint, or a request and a config (command-driven). */
export type FuzzDriver =
  | { readonly blueprint: string }
  | { readonly request: string; readonly config: string };

/** Fault kinds `--faults` takes. */
export const FUZZ_FAULTS = ['kill', 'enospc', 'eio', 'hang', 'lease-race', 'db-down'] as const;
export type FuzzFault = (typeof FUZZ_FAULTS)[number];

export interface FuzzOptions {
  readonly driver: FuzzDriver;
  readonly points: number | 'all';
  readonly seed: number;
  readonly jobs: number;
  /** Fault kinds injected at every chosen point (default: kill). */
  readonly faults?: readonly FuzzFault[];
  /** Also kill the resume of each kill case at this many points it passes ('all': every one). */
  readonly double?: number | 'all';
  /** Kill this many builds at random instants (process group SIGKILL) instead of at named points. */
  readonly randomKills?: number;
  /** The instant of every random kill, instead of a random one (reproduces one). */
  readonly killAtMs?: number;
  /** With `double`: kill the resume exactly at these points (reproduces one). */
  readonly onlySecond?: readonly PointOccurrence[];
  /**
   * On a failure of a blueprint build, look for the smallest blueprint (fewest milestones, then
   * nodes) and the earliest occurrence that still fail the same way, trying at most this many
   * candidates (0: do not minimise). Written to `minimalDir`.
   */
  readonly minimiseTrials?: number;
  readonly minimalDir?: string;
  /** Keep every fuzzed build's log in PostgreSQL (`postgres:URL`), one schema per build, reached through an outage proxy (db-down). */
  readonly log?: string;
  /** Internal: the PostgreSQL backend of a `log` run. */
  readonly backend?: PgBackend;
  /** Run exactly these occurrences (reproduce a failure) instead of sampling. */
  readonly only?: readonly PointOccurrence[];
  /** Environment for every child (PATH etc.); fault variables are set by the runner. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Keep the temporary repositories of failed cases (their paths are in the report). */
  readonly keepFailed?: boolean;
  /**
   * Where a case at a point starts (decision 0019): 'stops' — from the latest place before its
   * point where the clean run, stopped by `run --max-steps`, stood with nothing half done (found by
   * running the build once more in stages); 'start' — from the initialised build; 'auto'
   * (default) — stops when there are enough cases to repay the staged run.
   */
  readonly startFrom?: StartFrom;
  /**
   * Start the cases' runs from a V8 start-up snapshot of the CLI built for this campaign
   * (decision 0028): 'auto' (default) when there are at least AUTO_SNAPSHOT_CASES cases.
   */
  readonly snapshot?: SnapshotMode;
  /** Internal: the bundle the snapshot is built from (tests give one that cannot be built). */
  readonly snapshotSource?: string;
  /** Internal: the Node.js arguments that start the cases' runs (the campaign sets them). */
  readonly launch?: readonly string[];
  readonly onProgress?: (p: FuzzProgress) => void;
}

export const START_FROM = ['auto', 'stops', 'start'] as const;
export type StartFrom = (typeof START_FROM)[number];

/** Builds on PostgreSQL: a schema each, through a proxy that can take the database away. */
export interface PgBackend {
  readonly proxy: OutageProxy;
  readonly url: string;
  /** A fresh `postgres:` spec through the proxy (its schema is dropped at the end). */
  next(): string;
  readonly schemas: string[];
}

export interface FuzzProgress {
  readonly done: number;
  readonly total: number;
  readonly failed: number;
  readonly last: string;
}

/** One case: a fault at a point (and for --double, a kill of the resume at a second point), or a kill after a delay. */
export interface FuzzCase {
  readonly fault: FuzzFault | 'random-kill';
  readonly point?: string;
  readonly occurrence?: number;
  readonly second?: PointOccurrence;
  readonly delayMs?: number;
}

/** The smallest reproduction minimisation found for a failure. */
export interface MinimalFailure {
  readonly blueprint: string;
  readonly milestones: number;
  readonly nodes: number;
  readonly point?: string;
  readonly occurrence?: number;
  readonly trials: number;
  readonly reproduce: string;
}

export interface FuzzFailure extends FuzzCase {
  readonly minimal?: MinimalFailure;
  /** The first problem, in one line. */
  readonly divergence: string;
  readonly divergences: readonly Divergence[];
  readonly duplicates: readonly CallProblem[];
  readonly reproduce: string;
  readonly keptAt?: string;
}

export type EffectCounts = Record<'planner' | 'worker' | 'verify' | 'promote', number>;

/** One covered case, as `--report FILE` lists it. */
export interface CaseReport extends FuzzCase {
  readonly result: 'passed' | 'failed' | 'not-interrupted';
  readonly divergence?: string;
  /** Effects started by the interrupted and resumed runs together, beyond the clean run's (repeats), by kind. */
  readonly repeats: EffectCounts;
  readonly inDoubt: number;
  readonly durationMs: number;
  /** The calls in flight where the fault struck (several workers); absent: none. */
  readonly inFlight?: readonly string[];
  /** The case started where the clean run stood after this many of its points (absent: from the start). */
  readonly startedAt?: number;
  /** Started from a stop, the run left the clean run's path before its point: run again from the start. */
  readonly fellBack?: true;
  /** A failure found by the case started from this stop, and confirmed by a run from the start (whose findings are reported). */
  readonly foundFromStop?: number;
}

export interface FuzzReport {
  readonly blueprint?: string;
  readonly request?: string;
  readonly config?: string;
  /** Occurrences enumerated by the clean run. */
  readonly enumerated: number;
  /** Cases run (fault × point, second points, random kills). */
  readonly points: number;
  readonly passed: number;
  readonly failed: FuzzFailure[];
  readonly duplicateCalls: number;
  readonly inDoubtReinvocations: number;
  readonly inDoubtByPoint: Record<string, number>;
  /**
   * With several calls in flight: the distinct sets of calls in flight the clean run
   * passed through (two or more at once, and one), and how many the struck cases covered.
   */
  readonly inFlight?: { readonly combinations: number; readonly covered: number; readonly kinds: readonly string[] };
  /** Effects started again across all cases, by kind (in-doubt re-invocations and idempotent re-verification included). */
  readonly repeatedEffects: EffectCounts;
  readonly faults: readonly string[];
  /** Cases whose fault never struck (a random kill after the build ended): not counted as passed or failed. */
  readonly notInterrupted: number;
  readonly cases: readonly CaseReport[];
  readonly seed: number;
  readonly jobs: number;
  readonly durationMs: number;
  readonly clean: {
    readonly events: number; readonly outcome: string; readonly durationMs: number; readonly plannerCalls: number; readonly workerCalls: number; readonly effects: EffectCounts;
    /** Approvals the fuzzer's operator gave the clean run (R-60: every run is driven the same way). */
    readonly approvals: number;
    /** Notifications the clean run recorded (R-61; each case's are audited against its notifiers' record). */
    readonly notifications: number;
  };
  /**
   * Where the cases started (decision 0019): the stops found by the staged run (and what it
   * cost), how many cases started from one, how many of those fell back to the start, and the
   * clean run's points the cases did not run again.
   */
  readonly starts: { readonly mode: StartFrom; readonly stops: number; readonly stagedMs: number; readonly fromStop: number; readonly fellBack: number; readonly pointsSkipped: number };
  /**
   * Whether the cases' runs (and the staged run) started from a start-up snapshot of the CLI
   * (decision 0028; the clean run never does), what building it took, or why it was not used.
   */
  readonly snapshot: { readonly mode: SnapshotMode; readonly used: boolean; readonly buildMs?: number; readonly reason?: string };
}

export const driverArgs = (d: FuzzDriver): string[] => ('blueprint' in d ? ['--blueprint', d.blueprint] : ['--request', d.request, '--config', d.config]);

/** The exact command that reproduces one case (its runs started from a start-up snapshot too, when the case's did). */
export function reproduceCommand(driver: FuzzDriver, c: FuzzCase, log?: string, fromStop = false, fromSnapshot = false): string {
  // The password of a --log URL is not printed: the command shows *** in its place.
  const logArg = log === undefined ? '' : ` --log 'postgres:${redactedUrl(log.replace(/^postgres(ql)?:/, ''))}'`;
  const base = `longbuild fuzz ${driverArgs(driver).join(' ')}${logArg}`;
  const snapshot = fromSnapshot ? ' --snapshot on' : '';
  if (c.fault === 'random-kill') return `${base} --random-kill 1 --kill-at-ms ${c.delayMs}${snapshot}`;
  const faults = c.fault === 'kill' ? '' : ` --faults ${c.fault}`;
  const second = c.second ? ` --double --only-second ${c.second.point}:${c.second.occurrence}` : '';
  return `${base}${faults} --only ${c.point}:${c.occurrence}${second}${fromStop ? ' --start-from stops' : ''}${snapshot}`;
}

export const caseName = (c: FuzzCase): string =>
  c.fault === 'random-kill' ? `random-kill after ${c.delayMs} ms` : `${c.fault}@${c.point}:${c.occurrence}${c.second ? ` then kill@${c.second.point}:${c.second.occurrence}` : ''}`;

/** Write the report of every covered case (`--report FILE`). */
export function writeReport(path: string, report: FuzzReport): void {
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
