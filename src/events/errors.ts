/** Stable error codes; the CLI maps them to exit codes in one place. */
export type LongbuildErrorCode =
  | 'CONCURRENCY'
  | 'CORRUPT_LOG'
  | 'VALIDATION'
  | 'REFUSED_TRANSITION'
  | 'NOT_FOUND'
  | 'USAGE'
  | 'EFFECT_FAILED'
  | 'STORAGE'
  | 'INTERRUPTED';

/** Base of every typed error the product raises on purpose. */
export class LongbuildError extends Error {
  readonly code: LongbuildErrorCode;
  /** The SPEC rule the failure relates to, when there is one (e.g. "R-13"). */
  readonly rule: string | undefined;
  constructor(code: LongbuildErrorCode, message: string, rule?: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.rule = rule;
  }
}

/** Another writer appended first (R-3). Nothing was written. */
export class ConcurrencyError extends LongbuildError {
  constructor(
    readonly streamId: string,
    readonly expected: string,
    readonly actual: number,
  ) {
    super('CONCURRENCY', `stream '${streamId}': expected revision ${expected}, but the stream is at ${actual < 0 ? 'no stream' : actual} (another controller appended first)`, 'R-3');
  }
}

/** The log's bytes do not verify (R-4). */
export class CorruptLogError extends LongbuildError {
  constructor(readonly position: number, problem: string) {
    super('CORRUPT_LOG', `corrupt log at position ${position}: ${problem}`, 'R-4');
  }
}

/** Input from outside the host is invalid (R-28). */
export class ValidationError extends LongbuildError {
  constructor(message: string, rule = 'R-28') {
    super('VALIDATION', message, rule);
  }
}

/** A command was refused by a decider. */
export class RefusedTransitionError extends LongbuildError {
  constructor(message: string, rule?: string) {
    super('REFUSED_TRANSITION', message, rule);
  }
}

export class NotFoundError extends LongbuildError {
  constructor(message: string) {
    super('NOT_FOUND', message);
  }
}

export class UsageError extends LongbuildError {
  constructor(message: string) {
    super('USAGE', message);
  }
}

export class EffectError extends LongbuildError {
  constructor(message: string) {
    super('EFFECT_FAILED', message);
  }
}

/**
 * The operator interrupted the controller (SIGINT, SIGTERM): the running call's process tree was
 * killed and nothing it left half-done was recorded. Exit 128 + the signal number (130, 143).
 */
export class InterruptedError extends LongbuildError {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM', readonly position?: number, resume = '`longbuild run`') {
    super('INTERRUPTED', `interrupted by ${signal}${position === undefined ? '' : ` at position ${position}`}; nothing half-done was recorded, and ${resume} resumes`);
  }

  get exitCode(): number {
    return this.signal === 'SIGINT' ? 130 : 143;
  }

  /** The same interruption, naming the log position the build stands at. */
  at(position: number): InterruptedError {
    return new InterruptedError(this.signal, position);
  }
}

/** What went wrong with a file the build keeps. */
export type StorageProblem = 'full' | 'io' | 'read-only' | 'unreachable' | 'damaged';

/**
 * A file of the build could not be read or written: the disk is full, an I/O error, a read-only
 * file or filesystem, or (for a remote log) the database is unreachable. Whatever was being
 * written was not recorded; `position`, when known, is the last event the log holds intact.
 */
export class StorageError extends LongbuildError {
  constructor(
    readonly path: string,
    readonly problem: StorageProblem,
    readonly detail: string,
    readonly position?: number,
  ) {
    super('STORAGE', storageMessage(path, problem, detail, position));
  }

  /** The same failure, naming the position the log is intact up to. */
  at(position: number): StorageError {
    return this.position === undefined ? new StorageError(this.path, this.problem, this.detail, position) : this;
  }
}

function storageMessage(path: string, problem: StorageProblem, detail: string, position: number | undefined): string {
  const intact = position === undefined ? 'nothing more was recorded' : `the log is intact up to position ${position}`;
  switch (problem) {
    case 'full':
      return `no space left for ${path} (${detail}); ${intact}; free some space, then \`longbuild run\` resumes`;
    case 'read-only':
      return `${path} cannot be written (${detail}); ${intact}; make it writable, then \`longbuild run\` resumes`;
    case 'damaged':
      // projections.db and tree.db are caches of the log: made again from it, nothing to restore.
      if (/(^|[\\/])(projections|tree)\.db$/.test(path)) return `${path} is damaged (${detail}); nothing was changed; it is a cache of the log: \`longbuild rebuild\` makes it again (the damaged file is kept beside it)`;
      return `${path} is damaged (${detail}); nothing was changed; restore it from a copy (a backup, a \`longbuild export --to sqlite:FILE\` made earlier, or the log.ndjson of an audit bundle), then \`longbuild verify\` checks it`;
    case 'unreachable':
      return `the log at ${path} is unreachable (${detail}); ${intact}; once it is back, \`longbuild run\` resumes`;
    default:
      return `I/O error on ${path} (${detail}); ${intact}; check the disk, then \`longbuild run\` resumes`;
  }
}
