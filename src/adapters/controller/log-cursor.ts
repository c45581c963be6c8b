/**
 * The controller's view of the log: the folded state and the chain position it
 * extends. Every event it takes is linked and re-hashed (an edited event is never silently acted
 * on); appends go through the fault points, the lease check and the interrupt check, with the
 * graph records R-37 asks for.
 */
import type { JsonValue } from '../../events/canonical.js';
import { CorruptLogError } from '../../events/errors.js';
import { computeEventHash, storedBytesHash, type StoredEvent } from '../../events/envelope.js';
import type { EventLog, RawStoredEvent } from '../../events/event-log.js';
import { rawRowToEvent } from '../log/verbatim.js';
import type { DomainEvent } from '../../events/catalogue.js';
import { evolveBuild, initialBuildState, type BuildState } from '../../projections/build-state.js';
import { graphRecords } from '../../projections/graph-record.js';
import type { Clock } from '../clock.js';
import type { FaultInjector } from '../faults.js';
import { throwIfInterrupted } from '../interrupt.js';

export interface LogCursorDeps {
  readonly log: EventLog;
  readonly clock: Clock;
  readonly faults: FaultInjector;
  /** Checked before every append: the controller still holds its lease (throws ConcurrencyError). */
  readonly beforeAppend?: () => void;
  /** Called once appended events are durable, with them and the state after them (projections catch up here). */
  readonly onAppended?: (events: readonly StoredEvent[], state: BuildState) => void;
  /**
   * Awaited after every append, before the next decision is made (the log's checkpoint is signed
   * here after a promotion or a milestone checkpoint, R-35, however many calls are in flight);
   * `durable` makes everything appended so far durable first (a signature covers only that).
   */
  readonly afterAppend?: (events: readonly StoredEvent[], durable: () => Promise<void>) => Promise<void>;
  /**
   * This controller holds the build's lease for as long as the cursor lives, so no one else
   * appends (R-3: an operator's command takes the lease too; a controller that lost it is stopped
   * by `beforeAppend` or the log's fence at its next append, before any effect). The log's tail is
   * then read once, when the cursor opens, instead of before every step: on PostgreSQL that read
   * was a round trip per step (decision 0017, "One writer reads its tail once").
   */
  readonly soleWriter?: boolean;
}

export class LogCursor {
  state: BuildState = initialBuildState;
  private streamId = '';
  private streamRevision = -1;
  private prevHash: string | null = null;
  /** Appended, folded, not yet durable (see sync). */
  private held: StoredEvent[] = [];
  /** A sole writer has read the log's tail: every later event is one it appends. */
  private caughtUp = false;
  /** Why this cursor can append no more: a commit failed after its events were folded. */
  broken: Error | null = null;

  constructor(private readonly deps: LogCursorDeps) {}

  /**
   * Start from a state the projection store already folded (restored from a snapshot and caught
   * up): the events up to its position are re-hashed and linked, not folded again (`trusted`: a
   * reading command's, not re-hashed either). When it does not fit the log, the cursor stays at
   * the start (and `catchUp` folds everything).
   */
  async startFrom(from: BuildState, trusted = false): Promise<void> {
    if (from.position <= 0) return;
    if (trusted) {
      // A reader takes the folded state as it is: only its last event is read, to link what follows.
      const [at] = await this.deps.log.readAll({ from: from.position, limit: 1 });
      if (at?.position !== from.position) return; // the log ends before it: fold from the start
      this.streamId = at.streamId;
      this.streamRevision = at.revision;
      this.prevHash = at.hash;
      this.state = from;
      return;
    }
    let last: { readonly position: number } | undefined;
    for (let next = 1; next <= from.position;) {
      const limit = Math.min(5000, from.position - next + 1);
      const log = this.deps.log;
      // Checked from the stored bytes where the log gives them (no parse; the same hash, decision 0017).
      const batch = log.readStoredRows !== undefined ? await log.readStoredRows(next, limit) : await log.readAll({ from: next, limit });
      if (batch.length === 0) break;
      for (const e of batch) this.check(e);
      last = batch[batch.length - 1]!;
      next = last.position + 1;
    }
    if (last?.position === from.position) {
      this.state = from;
    } else {
      // The log ends before it (the store will say why): fold from the start instead.
      this.streamId = '';
      this.streamRevision = -1;
      this.prevHash = null;
    }
  }

  /**
   * Fold events appended since we last looked (another controller, or a crashed run): once for a
   * sole writer (see `soleWriter`), whose later appends are all its own.
   */
  async catchUp(): Promise<void> {
    if (this.caughtUp) return;
    for (;;) {
      const batch = await this.deps.log.readAll({ from: this.state.position + 1, limit: 5000 });
      if (batch.length === 0) break;
      for (const e of batch) this.fold(e);
    }
    this.caughtUp = this.deps.soleWriter === true;
  }

  private fold(e: StoredEvent, folded?: BuildState, sealedHere = false): void {
    this.check(e, sealedHere);
    this.state = folded ?? evolveBuild(this.state, e);
  }

  /**
   * Link and re-hash one event of the log, in order, and take its stream position. An event this
   * cursor's own append just sealed is linked, not hashed again: its hash was made in this process
   * from these very objects, a moment ago (decision 0017).
   */
  private check(e: StoredEvent | RawStoredEvent, sealedHere = false): void {
    if (this.prevHash !== null && e.prevHash !== this.prevHash) {
      throw new CorruptLogError(e.position, 'previous-hash link broken while reading the log (run `longbuild verify`)');
    }
    // Every event the controller reads from the log and folds is re-hashed: an edited event is never silently acted on.
    if (!sealedHere && !hashMatches(e)) throw new CorruptLogError(e.position, 'hash mismatch (event edited); run `longbuild verify`');
    if (this.streamId === '') this.streamId = e.streamId;
    if (e.streamId === this.streamId) this.streamRevision = e.revision;
    this.prevHash = e.hash;
  }

  /**
   * Append a decision's events and fold them. On a log that holds appends (group commit, decision
   * 0017) they become durable at the next `sync()` — which the controller calls before any effect
   * starts, before a step's result is returned and before a checkpoint is signed — together with
   * whatever else was appended since: the result of one call and the intent of the next in one
   * commit. `after-append:TYPE` points are reached once the event is durable.
   */
  async append(events: readonly DomainEvent[], causationId: string): Promise<void> {
    if (this.broken !== null) throw this.broken;
    for (const e of events) this.deps.faults.reach(`before-append:${e.type}`);
    this.deps.beforeAppend?.();
    throwIfInterrupted(); // an interrupted controller records nothing more (interrupt.ts)
    this.deps.log.hold?.();
    const position = this.state.position + 1;
    const recordedAt = this.now(position);
    // an event that changes the graph records the revision it makes and that graph's SHA-256.
    const { records: graphs, states } = graphRecords(this.state, events, recordedAt);
    const result = await this.deps.log.append(
      this.streamId,
      events.map((e, i) => ({
        type: e.type, data: e.data as JsonValue,
        metadata: { recordedAt, causationId, correlationId: this.state.build!.buildId, ...(graphs[i] ? { graph: { ...graphs[i] } } : {}) },
      })),
      this.streamRevision,
    );
    // The states folded for the graph records are the fold of these events: adopt them (each
    // event still linked; its hash was made here) instead of folding again.
    result.events.forEach((e, i) => this.fold(e, e.position === position + i ? states[i] : undefined, true));
    this.held.push(...result.events);
    if (this.deps.log.hold === undefined) await this.sync();
    await this.deps.afterAppend?.(result.events, () => this.sync());
  }

  /**
   * Make every event appended so far durable (one commit), then hand them to `onAppended` and
   * reach their `after-append` points. A failed commit leaves this cursor ahead of the log: it
   * refuses every later append (the session ends; the next open folds the log as it is).
   */
  async sync(): Promise<void> {
    if (this.broken !== null) throw this.broken;
    if (this.held.length === 0) return;
    const events = this.held;
    this.held = [];
    try {
      await this.deps.log.sync?.();
    } catch (err) {
      this.broken = err instanceof Error ? err : new Error(String(err));
      throw err;
    }
    this.deps.onAppended?.(events, this.state);
    for (const e of events) this.deps.faults.reach(`after-append:${e.type}`);
  }

  /**
   * The clock's time for the event at `position`, on a tick that skips recovery-only events: with
   * the logical clock a resumed build then records the same times, commit dates and so commit SHAs
   * and checkpoint bytes as an uninterrupted one, even after an in-doubt re-invocation.
   */
  now(position: number): string {
    return this.deps.clock.now(position - this.state.recoveries);
  }
}

/**
 * Whether an event hashes to its recorded hash: from its stored bytes when the log gave them
 * (parsed and re-encoded only when those differ, decision 0017), else from the parsed event.
 */
function hashMatches(e: StoredEvent | RawStoredEvent): boolean {
  if ('dataJson' in e) return storedBytesHash(e) === e.hash || computeEventHash(rawRowToEvent(e)) === e.hash;
  return computeEventHash(e) === e.hash;
}
