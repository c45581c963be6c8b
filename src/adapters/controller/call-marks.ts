import { closeSync, existsSync, fdatasyncSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import type { JsonValue } from '../../events/canonical.js';
import { join } from 'node:path';
import { sha256Hex } from '../../events/hash.js';
import { guarded } from '../../projections/storage-guard.js';
import { fsyncDirectory } from '../atomic-write.js';

/**
 * Durable marks of calls about to start. The controller marks each invocation of a planner or
 * worker call (by its idempotency key and invocation number) just before the process starts;
 * after a crash, an open intent whose last recorded invocation has no mark is a call that never
 * started: it is made now, and no `EffectReinvoked` is recorded for it — so a resume that fails
 * before the call starts (a full disk, another crash) records nothing, however often it is tried.
 */
export interface CallMarks {
  /** Mark invocation `invocation` (1 = the first call, 2 = its first re-invocation, ...) of the call `key` as started. */
  mark(key: string, invocation: number): void;
  started(key: string, invocation: number): boolean;
  /**
   * Keep what invocation `invocation` of `key` returned before the host acts on it: durably, or
   * with `{ flush: false }` written at once (a killed process loses nothing) and flushed by
   * `flush` — for an outcome the next commit of the log will record (decision 0017).
   */
  keep(key: string, invocation: number, outcome: JsonValue, options?: { readonly flush?: boolean }): void;
  /** Make every line written so far durable (a no-op when there is none unflushed). */
  flush(): void;
  /** What that invocation returned, if it was kept. */
  kept(key: string, invocation: number): JsonValue | null;
  /**
   * The journal the build keeps from its start is gone (deleted, emptied by hand): a call with no
   * mark may have started, so it is in doubt. Absent: never lost.
   */
  lost?(): boolean;
}

/** The first line of a journal a build keeps from its start (BuildInitialized.callJournal). */
const HEADER = '{"journal":1}\n';

/** One line of the journal: a call's invocation started, or what it returned. */
interface JournalLine {
  readonly key: string;
  readonly invocation: number;
  readonly outcome?: JsonValue;
}

/**
 * The marks as one append-only journal, `calls/journal`: a JSON line per mark and per kept
 * outcome, each written and flushed (`fdatasync`) before the call starts or the host acts on its
 * result — one flush per mark, where a file per mark took a file flush, a rename and a directory
 * flush (decision 0017). A line torn by a crash is cut off when the journal is next opened for
 * writing (it was never flushed, so nothing relied on it). The journal is read only when a resume
 * asks (`started`, `kept`); marks of builds from before it, a file per mark, are still read.
 */
export class FileCallMarks implements CallMarks {
  private fd: number | null = null;
  /** A line was written and not flushed yet (see keep's `flush: false`). */
  private unflushed = false;
  private read: { started: Set<string>; kept: Map<string, JsonValue> } | null = null;
  private readonly journal: string;

  /** The journal was expected (the build records it) and found missing or without its first line. */
  private missing = false;

  /**
   * `expected`: the build made its journal when it was initialised (BuildInitialized.callJournal),
   * so a journal that is not there, or does not start with its first line, was lost.
   */
  constructor(private readonly dir: string, private readonly expected = false, private readonly onLost?: (journal: string) => void) {
    this.journal = join(dir, 'journal');
    // Checked when opened, before this process writes to it (its first line is all that is read).
    if (expected) this.missing = !startsWithHeader(this.journal);
  }

  /** Make the journal of a new build (at init, before any call), durably. */
  static create(dir: string): void {
    const marks = new FileCallMarks(dir, true);
    guarded(marks.journal, () => marks.open());
    marks.close();
  }

  /** Asked about a call with no mark: said once (onLost) when the journal was lost. */
  lost(): boolean {
    if (this.missing && this.onLost !== undefined && !this.said) {
      this.said = true;
      this.onLost(this.journal);
    }
    return this.missing;
  }

  private said = false;

  mark(key: string, invocation: number): void {
    this.append({ key, invocation });
  }

  started(key: string, invocation: number): boolean {
    return this.index().started.has(id(key, invocation)) || existsSync(this.legacyPath(key, invocation));
  }

  keep(key: string, invocation: number, outcome: JsonValue, options: { readonly flush?: boolean } = {}): void {
    this.append({ key, invocation, outcome }, options.flush !== false);
  }

  flush(): void {
    if (this.fd === null || !this.unflushed) return;
    const fd = this.fd;
    guarded(this.journal, () => fdatasyncSync(fd));
    this.unflushed = false;
  }

  kept(key: string, invocation: number): JsonValue | null {
    const found = this.index().kept.get(id(key, invocation));
    if (found !== undefined) return found;
    try {
      const kept = JSON.parse(readFileSync(`${this.legacyPath(key, invocation)}.returned`, 'utf8')) as { key: string; invocation: number; outcome: JsonValue };
      return kept.key === key && kept.invocation === invocation ? kept.outcome : null;
    } catch {
      return null; // none kept
    }
  }

  /**
   * Empty the journal: the caller has made durable a log in which every call it marks is settled
   * (no attempt open, no planner call in doubt), so no resume will ask for any of its lines. The
   * journal would otherwise keep every outcome of the build a second time (decision 0025). A
   * crash during it leaves the journal whole or empty, both right.
   */
  forgetSettled(): void {
    if (!existsSync(this.journal)) return;
    guarded(this.journal, () => {
      const fd = this.open();
      const keep = this.expected ? HEADER.length : 0;
      if (fstatSync(fd).size <= keep) return;
      ftruncateSync(fd, keep);
      fdatasyncSync(fd);
      this.unflushed = false;
    });
    this.read = null;
  }

  /** Flush what is unflushed and close the journal's file (a later mark opens it again). */
  close(): void {
    try {
      this.flush();
    } finally {
      if (this.fd !== null) closeSync(this.fd);
      this.fd = null;
    }
  }

  private append(line: JournalLine, flush = true): void {
    guarded(this.journal, () => {
      const fd = this.open();
      writeSync(fd, `${JSON.stringify(line)}\n`);
      // One fdatasync makes every line written before it durable too.
      if (flush) fdatasyncSync(fd);
      this.unflushed = !flush;
    });
    if (this.read !== null) record(this.read, line);
  }

  /** The journal, open for appending: created (and its directory flushed) or cut to its last whole line. */
  private open(): number {
    if (this.fd !== null) return this.fd;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const existed = existsSync(this.journal);
    const fd = openSync(this.journal, 'a+', 0o600);
    if (existed && this.expected && !startsWithHeader(this.journal)) {
      // Emptied or rewritten by hand: started again with its first line (what it held is not relied on: this.missing).
      ftruncateSync(fd, 0);
      writeSync(fd, HEADER);
      fdatasyncSync(fd);
    } else if (existed) {
      const whole = wholeLinesLength(fd);
      if (whole < fstatSync(fd).size) ftruncateSync(fd, whole);
    } else {
      // A build that keeps its journal from the start writes its first line, so that an emptied
      // journal is told from a new one; the line is durable before anything relies on the file.
      if (this.expected) {
        writeSync(fd, HEADER);
        fdatasyncSync(fd);
      }
      fsyncDirectory(this.dir);
    }
    this.fd = fd;
    return fd;
  }

  private index(): { started: Set<string>; kept: Map<string, JsonValue> } {
    if (this.read !== null) return this.read;
    const index = { started: new Set<string>(), kept: new Map<string, JsonValue>() };
    let text = '';
    try {
      text = readFileSync(this.journal, 'utf8');
    } catch {
      // no journal yet
    }
    // A line is one only up to its newline: what follows the last newline is a line torn by a
    // crash (never flushed, so never relied on) — even one whole but for its newline, which the
    // next writer cuts off as torn too.
    const lines = text.split('\n');
    lines.pop();
    for (const raw of lines) {
      if (raw === '') continue;
      try {
        record(index, JSON.parse(raw) as JournalLine);
      } catch {
        // not a line this journal writes (a damaged one): nothing relies on it
      }
    }
    this.read = index;
    return index;
  }

  /** A mark from before the journal: a file named by the key's SHA-256 (and `.N` for invocation N > 1). */
  private legacyPath(key: string, invocation: number): string {
    const name = sha256Hex(Buffer.from(key));
    return join(this.dir, invocation === 1 ? name : `${name}.${invocation}`);
  }
}

const id = (key: string, invocation: number): string => `${invocation} ${key}`;

/** Bytes of a file up to and including its last newline, read backwards from the end (not the whole journal). */
function wholeLinesLength(fd: number): number {
  const chunk = Buffer.alloc(64 * 1024);
  for (let end = fstatSync(fd).size; end > 0;) {
    const start = Math.max(0, end - chunk.length);
    const n = readSync(fd, chunk, 0, end - start, start);
    const at = chunk.subarray(0, n).lastIndexOf(0x0a);
    if (at >= 0) return start + at + 1;
    end = start;
  }
  return 0;
}

function record(index: { started: Set<string>; kept: Map<string, JsonValue> }, line: JournalLine): void {
  if (typeof line.key !== 'string' || typeof line.invocation !== 'number') return;
  if (line.outcome === undefined) index.started.add(id(line.key, line.invocation));
  else index.kept.set(id(line.key, line.invocation), line.outcome);
}

/** The journal's first bytes are its first line (false when it is missing or unreadable). */
function startsWithHeader(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    const buf = Buffer.alloc(HEADER.length);
    return readSync(fd, buf, 0, buf.length, 0) === buf.length && buf.toString('utf8') === HEADER;
  } finally {
    closeSync(fd);
  }
}
