import { existsSync } from 'node:fs';
import type { StoredEvent } from '../../events/envelope.js';
import { marksOf, nodesOf, spendOf, textOf, type IndexRow, type Mark, type SpendPoint } from '../../projections/event-index-rows.js';
import { EventIndexReader, passes, type IndexFilter } from '../../projections/event-index-table.js';
import { closeDatabase, openDatabaseToRead } from '../../projections/storage-guard.js';
import { bucketWidth, sampleMarks, sampleSpend } from './event-index.js';

/** The stored index of a build's projections database, opened read-only; null when it has none. */
export function openStoredIndex(path: string): { readonly reader: EventIndexReader; close(): void } | null {
  if (!existsSync(path)) return null;
  const db = openDatabaseToRead(path);
  db.pragma('busy_timeout = 10000');
  const reader = EventIndexReader.of(db);
  if (reader === null) {
    closeDatabase(db);
    return null;
  }
  return { reader, close: () => closeDatabase(db) };
}

/**
 * What the viewer lists: the stored event index (projections.db, kept by the projection store) up
 * to a position whose event hash the log confirmed, and the events after it read from the log
 * into memory (`tail`). As the stored index moves on (a run writes its projections), the tail's
 * events it now holds are dropped, so memory holds what the projections have not written yet —
 * not the build's history. Without a stored index, everything is the tail (as before decision 0051).
 */
export class EventList {
  private readonly tail: (IndexRow & { readonly hash: string })[] = [];
  private readonly tailMarks: Mark[] = [];
  private readonly tailSpend: SpendPoint[] = [];
  private readonly tailTypes = new Set<string>();
  private tailCompleted = false;
  /** The last position the stored index answers for (0: none). */
  private upTo = 0;
  /** The cumulative spend at `upTo` (the tail's line continues from it). */
  private spentBefore = { usd: 0, tokens: 0 };
  /** The stored part of the timeline as last sampled (key: the position and the bucket width). */
  private sampled: { readonly key: string; readonly counts: { marks: number; spend: number }; readonly marks: Mark[]; readonly spend: SpendPoint[] } | null = null;

  constructor(private readonly stored: EventIndexReader | null) {}

  /**
   * Take the stored index as far as it goes when the log holds the same event there (`hashAt`:
   * the log's hash at a position, or null when the log does not reach it). Returns the position.
   */
  async adopt(hashAt: (position: number) => Promise<string | null>): Promise<number> {
    if (this.stored === null) return this.upTo;
    const at = this.stored.position();
    if (at.position <= this.upTo) return this.upTo;
    const own = this.tail.find((r) => r.position === at.position);
    const hash = own !== undefined ? own.hash : this.tail.length === 0 ? await hashAt(at.position) : null;
    // The tail must run on from the index without a gap, and the index must be of this log.
    if (hash !== at.hash || (this.tail.length > 0 && this.tail[0]!.position > this.upTo + 1)) return this.upTo;
    this.upTo = at.position;
    this.spentBefore = this.stored.spentAt(this.upTo);
    const drop = <T extends { position: number }>(xs: T[]): void => {
      const n = xs.findIndex((x) => x.position > this.upTo);
      xs.splice(0, n < 0 ? xs.length : n);
    };
    drop(this.tail);
    drop(this.tailMarks);
    drop(this.tailSpend);
    return this.upTo;
  }

  /** The position the list reaches. */
  get head(): number {
    return this.tail.at(-1)?.position ?? this.upTo;
  }

  /** Add an event read from the log (the next one after `head`). */
  add(e: StoredEvent): void {
    const nodes = nodesOf(e);
    this.tail.push({ position: e.position, type: e.type, at: e.metadata.recordedAt, nodes, text: textOf(e, nodes), hash: e.hash });
    this.tailTypes.add(e.type);
    this.tailMarks.push(...marksOf(e));
    if (e.type === 'BuildCompleted') this.tailCompleted = true;
    const s = spendOf(e);
    if (s !== null) {
      const last = this.tailSpend.at(-1) ?? this.spentBefore;
      this.tailSpend.push({ position: e.position, usd: last.usd + s.usd, tokens: last.tokens + s.tokens });
    }
  }

  /** A page of the rows that pass `filter`, in position order, and how many pass. */
  rows(filter: IndexFilter, offset: number, limit: number): { total: number; rows: IndexRow[] } {
    const stored = this.stored !== null && this.upTo > 0 ? this.stored.rows(filter, this.upTo, offset, limit) : { total: 0, rows: [] };
    const tail = filter.type === null && filter.node === null && filter.q === '' ? this.tail : this.tail.filter((r) => passes(r, filter));
    const from = Math.max(0, offset - stored.total);
    const more = tail.slice(from, from + limit - stored.rows.length).map(({ hash: _, ...row }) => row);
    return { total: stored.total + tail.length, rows: [...stored.rows, ...more] };
  }

  /**
   * The timeline's marks and spend line, sampled to `buckets` over `head` positions (sampleMarks,
   * sampleSpend): the stored part sampled in SQL when there is more than `buckets` of it in all,
   * once per position and width.
   */
  timeline(head: number, buckets: number): { marks: Mark[]; spend: SpendPoint[] } {
    if (this.stored === null || this.upTo === 0) return { marks: sampleMarks(this.tailMarks, head, buckets), spend: sampleSpend(this.tailSpend, head, buckets) };
    const width = bucketWidth(head, buckets);
    // Stored marks kept whole stay right as the tail grows (sampleMarks samples them then): the key is the position and width alone.
    const key = `${this.upTo}|${width}`;
    if (this.sampled?.key !== key) {
      const stored = this.stored;
      const counts = stored.counts(this.upTo);
      const marks = counts.marks + this.tailMarks.length > buckets ? stored.sampledMarks(this.upTo, width) : stored.marks(this.upTo);
      const spend = counts.spend + this.tailSpend.length > buckets ? stored.sampledSpend(this.upTo, width) : stored.spend(this.upTo);
      this.sampled = { key, counts, marks, spend };
    }
    const s = this.sampled;
    return {
      marks: sampleMarks([...s.marks, ...this.tailMarks], head, buckets, s.counts.marks + this.tailMarks.length),
      spend: sampleSpend([...s.spend, ...this.tailSpend], head, buckets, s.counts.spend + this.tailSpend.length),
    };
  }

  marks(): Mark[] {
    return [...(this.stored !== null && this.upTo > 0 ? this.stored.marks(this.upTo) : []), ...this.tailMarks];
  }

  spend(): SpendPoint[] {
    return [...(this.stored !== null && this.upTo > 0 ? this.stored.spend(this.upTo) : []), ...this.tailSpend];
  }

  types(): string[] {
    return [...new Set([...(this.stored !== null && this.upTo > 0 ? this.stored.types() : []), ...this.tailTypes])].sort();
  }

  get completed(): boolean {
    return this.tailCompleted || (this.stored !== null && this.upTo > 0 && this.stored.completed(this.upTo));
  }
}
