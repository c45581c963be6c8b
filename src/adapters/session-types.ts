import type { Planner, Worker } from '../commands/ports.js';
import type { OperatorVerdict } from '../commands/operator.js';
import type { ProjectionStore } from '../projections/engine.js';
import type { BuildState } from '../projections/build-state.js';
import type { BuildPaths } from './build-dir.js';
import type { Controller, StepResult } from './controller/controller.js';
import type { FaultInjector } from './faults.js';
import type { AppendFence } from './log/postgres-log.js';
import type { TransferableEventLog } from './log/verbatim.js';

export interface OpenOptions {
  readonly repo?: string;
  readonly dir?: string;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Replace the planner (tests: a planner that throws if called). */
  readonly planner?: Planner;
  readonly worker?: Worker;
  readonly faults?: FaultInjector;
  /** `init`: the log backend (default: the config's `log`, else `sqlite`). */
  readonly log?: string;
  /** Checked atomically with every append (a PostgreSQL log): the controller lease's fencing token. */
  readonly appendFence?: AppendFence;
  /** Checked before every append: the controller lease is still held (the SQLite lock file). */
  readonly beforeAppend?: () => void;
  /** Checked immediately before every ref a controller moves (the lease confirmed held). */
  readonly beforeRefMove?: () => Promise<void>;
  /** The controller lease is held while the session lives: the log's tail is read once (LogCursorDeps.soleWriter). */
  readonly soleWriter?: boolean;
  /** The signing key file (R-35; default: LONGBUILD_SIGNING_KEY, else `<config dir>/signing.key`). */
  readonly signingKey?: string;
  /** One line for the user about something that did not stop the build (default: stderr). */
  readonly warn?: (line: string) => void;
  /**
   * A reading command (status, show, diff): the state the projections folded is taken as it is,
   * its events not re-hashed again (`verify` checks every byte; a step re-hashes what it acts on).
   * Such a session refuses to step.
   */
  readonly reading?: boolean;
}

/** An open build: its log, projections and controller. Close it when done. */
export interface BuildSession {
  readonly paths: BuildPaths;
  readonly log: TransferableEventLog;
  readonly projections: ProjectionStore;
  readonly controller: Controller;
  /**
   * One controller step. Before the first, the log is checked against the chain head
   * anchor and the last signed checkpoint; a checkpoint is signed after every promotion,
   * milestone checkpoint and end of the build. With `held`, its last events may stay
   * uncommitted until the next effect starts or the build is closed (a run's steps then share
   * commits, decision 0017); without it they are durable when it returns.
   */
  advance(options?: { readonly held?: boolean }): Promise<StepResult>;
  /**
   * Run to the end (or until `stop`), with up to `concurrency` worker calls in flight,
   * reporting each step as it ends; under the same log checks, and signed at the end.
   */
  /** `stop(inFlight)`: whether to decide nothing more, given the steps started and not ended yet. */
  runAll(onStep: (r: StepResult) => void, stop?: (inFlight: number) => boolean): Promise<StepResult | null>;
  /** Record an operator's decision (`retry`), under the same log checks as a step. */
  operate(decide: (state: BuildState) => OperatorVerdict, causationId: string): Promise<StepResult>;
  /**
   * Close; a session that appended signs a checkpoint at the head first (the end of every run),
   * unless `sign` is false (after a storage failure: the log's files are not to be touched again).
   */
  close(options?: { readonly sign?: boolean }): Promise<void>;
}
