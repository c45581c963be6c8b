import type { Projection } from './projection.js';
import { makeSnapshot, type SnapshotStore } from './snapshots.js';

/** Older snapshots are kept every SNAPSHOT_STRIDE × snapshotEvery events (time travel replays at most that many). */
const SNAPSHOT_STRIDE = 4;

/** Full snapshots kept of a projection that has a view (see putSnapshot). */
const FULL_SNAPSHOTS_KEPT = 1;

/** A snapshot of this many bytes or fewer is taken every interval; a larger one proportionally less often. */
const SNAPSHOT_BYTES = 1 << 20;
/**
 * At close, a projection whose newest snapshot is this many events behind its head, and no bigger
 * than SNAPSHOT_BYTES, is snapshotted at the head: the next open restores it instead of folding
 * those events again (decision 0023). A view is, once this many events per SNAPSHOT_BYTES of its
 * newest snapshot behind, whatever its size (decision 0032).
 */
const HEAD_SNAPSHOT_EVENTS = 100;
/**
 * A view of SNAPSHOT_BYTES or less (what reading commands restore) is snapshotted at the head once
 * this many events behind (decision 0053): folding 99 events cost a reading command ~6 ms of its
 * ~45, writing a small view at close well under one. A larger view keeps decision 0032's
 * HEAD_SNAPSHOT_EVENTS per MiB, so a build driven one `step` at a time does not write its
 * several-MiB view every few events.
 */
const VIEW_HEAD_EVENTS = 16;

/** What the keeper reads of a projection's runtime in the store (engine.ts) to snapshot its head. */
export interface HeadRuntime {
  readonly projection: Projection<unknown>;
  readonly state: unknown;
  readonly memPosition: number;
  readonly memHash: string;
  readonly storedPosition: number;
  readonly storedHash: string;
}

/** Which snapshots the projection store writes and keeps (R-6; decisions 0017, 0023, 0032). */
export class SnapshotKeeper {
  private readonly lastSnapshot = new Map<string, { position: number; bytes: number }>();
  private readonly newest = new Map<string, { position: number; bytes: number }>();

  constructor(private readonly snapshots: SnapshotStore, private readonly snapshotEvery: number) {}

  /** A snapshot the store restored: the newest of `name`, of `bytes` bytes. */
  restored(name: string, position: number, bytes: number): void {
    this.newest.set(name, { position, bytes });
  }

  /**
   * Write a snapshot and thin the older ones: the newest two stay, older ones every SNAPSHOT_STRIDE
   * intervals. A state that grows with the build's history is snapshotted less often (one interval
   * per SNAPSHOT_BYTES of its last snapshot), so serialising it stays a constant cost per event.
   * A projection's view (small by design) is snapshotted at every boundary. A projection with a
   * view keeps only its newest full snapshot: time travel starts from the view's, and the full
   * state is restored only by the next open, from the newest (one that fails its hash is folded
   * again from the log, like any bad snapshot); older ones grew with the build and were never read
   * (decision 0017, "Only the newest full snapshot").
   */
  put(projection: Projection<unknown>, position: number, hash: string, state: unknown): void {
    if (projection.view) this.putOne(projection.view.name, position, hash, projection.view.of(state));
    this.putOne(projection.name, position, hash, state, projection.view !== undefined);
  }

  private putOne(name: string, position: number, hash: string, state: unknown, newestOnly = false): void {
    const last = this.lastSnapshot.get(name);
    if (last !== undefined && position > last.position) {
      const spacing = this.snapshotEvery * Math.max(1, Math.ceil(last.bytes / SNAPSHOT_BYTES));
      if (position - last.position < spacing) return;
    }
    const bytes = this.writeSnapshot(name, position, hash, state);
    this.thin(name, position - this.snapshotEvery, this.snapshotEvery * SNAPSHOT_STRIDE, newestOnly);
    this.lastSnapshot.set(name, { position, bytes });
  }

  /** Drop the snapshots of `name` a new one made unneeded: all but the newest (`newestOnly`), else those below `keepFrom` off the stride. */
  private thin(name: string, keepFrom: number, stride: number, newestOnly: boolean): void {
    if (newestOnly && this.snapshots.keepNewest !== undefined) this.snapshots.keepNewest(name, FULL_SNAPSHOTS_KEPT);
    else this.snapshots.thin?.(name, keepFrom, stride);
  }

  /** Write one snapshot; returns its size (bytes of JSON). */
  private writeSnapshot(name: string, position: number, hash: string, state: unknown): number {
    const snapshot = makeSnapshot(name, position, hash, state);
    this.snapshots.put(snapshot);
    this.newest.set(name, { position, bytes: snapshot.stateJson.length });
    return snapshot.stateJson.length;
  }

  /**
   * At close: snapshot each projection at its head when a next open would otherwise fold
   * HEAD_SNAPSHOT_EVENTS or more events to get there and its state is small (a state that grows
   * with the build's history keeps its spacing, see putSnapshot: restoring it costs about what
   * folding those events in place does). Its view, which reading commands restore, is snapshotted
   * once VIEW_HEAD_EVENTS behind while it is small, HEAD_SNAPSHOT_EVENTS per MiB of its newest
   * snapshot once larger: at most once per that many
   * events, so serialising it stays a constant cost per event (decision 0032). Only a head the
   * tables have reached: a snapshot is never ahead of what is written.
   */
  heads(runtimes: readonly HeadRuntime[]): void {
    if (this.snapshotEvery <= 0) return;
    for (const r of runtimes) {
      if (r.memPosition === 0 || r.memPosition !== r.storedPosition || r.memHash !== r.storedHash) continue;
      const due = (name: string, view: boolean): boolean => {
        // What this store restored or wrote, else the newest on disk (a view's: never restored by a step).
        const newest = this.newest.get(name) ?? { position: this.snapshots.newestPosition?.(name) ?? 0, bytes: 0 };
        const behind = r.memPosition - newest.position;
        return view ? behind >= (newest.bytes <= SNAPSHOT_BYTES ? VIEW_HEAD_EVENTS : HEAD_SNAPSHOT_EVENTS * Math.ceil(newest.bytes / SNAPSHOT_BYTES)) : behind >= HEAD_SNAPSHOT_EVENTS && newest.bytes <= SNAPSHOT_BYTES;
      };
      const head = (name: string, state: unknown, newestOnly = false): void => {
        this.writeSnapshot(name, r.memPosition, r.memHash, state);
        // The head snapshot replaces an earlier one; snapshots on boundaries stay (time travel starts from them).
        this.thin(name, r.memPosition, this.snapshotEvery, newestOnly);
      };
      if (due(r.projection.name, false)) head(r.projection.name, r.state, r.projection.view !== undefined);
      const view = r.projection.view;
      if (view && due(view.name, true)) head(view.name, view.of(r.state));
    }
  }
}
