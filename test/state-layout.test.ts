/**
 * The build state's stored layout has a version (`stateVersion`): a state of another version in
 * `projections.db` — a snapshot written by an earlier longbuild — is never restored, the
 * projection is folded again from the log. Version 5 renamed the buckets of sharded collections
 * and the keys of `revisionPositions` so that none is integer-like (decision 0017, "Bucket
 * names"); a version-4 snapshot read as version 5 would find no attempt and no revision in it.
 * Here version-4 snapshots are written from a real recorded build (the golden helios log) in the
 * old layout, and a store of the current version opened on them must hold exactly the fold of
 * the log; the same store opened as if the version had not changed shows what the test guards.
 * Version 11 keeps graph revisions' positions as a list in chunks (decision 0055): a version-10
 * snapshot (a sharded record keyed `r<revision>`, buckets as arrays) is folded again too.
 * Version 12 keeps each milestone's spend sharded, and lets an emptied leaf go (decision 0056): a
 * version-11 snapshot (spend by milestone as a record) is folded again.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { buildProjection } from '../src/projections/build-projection.js';
import { evolveBuild, initialBuildState, plainState, positionOfRevision, type BuildState } from '../src/projections/build-state.js';
import { revisionEntries, revisionPositionsFrom, type RevisionPositions } from '../src/projections/revision-positions.js';
import { snapshotProblems } from '../src/projections/snapshot-audit.js';
import { SqliteSnapshotStore } from '../src/projections/snapshot-store.js';
import Database from 'better-sqlite3';
import { ProjectionStore } from '../src/projections/engine.js';
import type { Projection } from '../src/projections/projection.js';
import { shardedOf, shardEntries, slotsOf, type Sharded } from '../src/projections/sharded.js';
import { milestoneSpent, NO_SPEND, type SpendTotals } from '../src/projections/spend-ledger.js';
import { cliJson, ROOT, runCli, twoMilestoneHelios } from './support/cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function goldenEvents(name: string): StoredEvent[] {
  return readFileSync(join(ROOT, 'test', 'fixtures', 'logs', `${name}.ndjson`), 'utf8').trim().split('\n').map((l) => {
    const e = JSON.parse(l);
    return { position: e.position, streamId: e.streamId, revision: e.revision, type: e.type, schemaVersion: e.schemaVersion, data: e.data, metadata: e.metadata, prevHash: e.prevHash, hash: e.hash } as StoredEvent;
  });
}

/** The key of a graph revision in the sharded record of state versions 5 to 10. */
const revisionKey = (revision: number): string => `r${revision}`;

/** Graph revisions' positions as state versions 5 to 10 kept them: a sharded record keyed `r<revision>`. */
const revisionsSharded = (r: RevisionPositions): Sharded<number> => shardedOf(Object.fromEntries([...revisionEntries(r)].map(([rev, p]) => [revisionKey(rev), p])));

/** Today's list of the positions a sharded record of versions 5 to 10 held. */
function revisionsFromSharded(s: Sharded<number>): RevisionPositions {
  const entries = [...shardEntries(s)].map(([k, p]) => [Number(k.slice(1)), p] as const).sort((a, b) => a[0] - b[0]);
  return revisionPositionsFrom(entries[0]?.[0] ?? 0, entries.map(([, p]) => p));
}

/** How an earlier state version laid out sharded collections and graph revisions' positions. */
interface ObjectLayout {
  readonly version: number;
  readonly what: string;
  /** A sharded collection in that layout, its keys renamed by `key`. */
  readonly sharded: <T>(s: Sharded<T>, key: (k: string) => string) => Sharded<T>;
  /** Today's layout of a sharded collection that layout kept, its keys renamed back by `key`. */
  readonly shardedBack: <T>(s: Sharded<T>, key: (k: string) => string) => Sharded<T>;
  /** A graph revision's key in that layout, from versions 5–10's. */
  readonly revisionKey: (key: string) => string;
  /** Versions 5–10's key of a graph revision, from that layout's. */
  readonly revisionKeyBack: (key: string) => string;
  /** Every top-level bucket name of `attempts` matches (null: buckets are arrays, as today). */
  readonly bucketName: RegExp | null;
}

/** Buckets as objects with these names (versions before 8). */
const objectBuckets = (bucket: (slot: number) => string) => ({
  sharded: <T>(s: Sharded<T>, key: (k: string) => string) => asObjects(s, bucket, key),
  shardedBack: <T>(s: Sharded<T>, key: (k: string) => string) => fromObjects(s, key),
});

const LAYOUTS: readonly ObjectLayout[] = [
  {
    version: 4, what: 'digit-only bucket names', ...objectBuckets((slot) => slot.toString(36)),
    revisionKey: (k) => k.replace(/^r/, ''), revisionKeyBack: (k) => `r${k}`, bucketName: /^[0-9a-z]{1,2}$/,
  },
  {
    version: 7, what: 'buckets as objects named s + digits', ...objectBuckets((slot) => `s${slot.toString(36)}`),
    revisionKey: (k) => k, revisionKeyBack: (k) => k, bucketName: /^s[0-9a-z]{1,2}$/,
  },
  {
    version: 10, what: 'graph revisions as a sharded record', sharded: (s) => s, shardedBack: (s) => s,
    revisionKey: (k) => k, revisionKeyBack: (k) => k, bucketName: null,
  },
];

/** A sharded collection in an earlier layout: buckets as objects, entry keys renamed. */
function asObjects<T>(s: Sharded<T>, bucket: (slot: number) => string, key: (k: string) => string): Sharded<T> {
  const out: Record<string, Record<string, Record<string, T>>> = {};
  s.forEach((mid, a) => mid?.forEach((leaf, b) => {
    if (leaf != null) for (const [k, v] of Object.entries(leaf)) ((out[bucket(a)] ??= {})[bucket(b)] ??= {})[key(k)] = v;
  }));
  return out as unknown as Sharded<T>;
}

/** Today's layout of a collection an earlier layout kept (see asObjects), entry keys renamed back. */
function fromObjects<T>(s: Sharded<T>, key: (k: string) => string): Sharded<T> {
  const flat: Record<string, T> = {};
  const buckets = s as unknown as Record<string, Record<string, Record<string, T>>>;
  for (const a in buckets) for (const b in buckets[a]) for (const [k, v] of Object.entries(buckets[a]![b]!)) flat[key(k)] = v;
  return shardedOf(flat);
}

const same = (k: string): string => k;

/** Each milestone's spend as state versions up to 11 kept it: a record by milestone id. */
function spendAsRecord(s: BuildState): BuildState {
  if (s.spend === undefined) return s;
  return { ...s, spend: { ...s.spend, milestones: Object.fromEntries(shardEntries(s.spend.milestones)) as unknown as Sharded<SpendTotals> } };
}

/** Today's spend of a state that kept it as versions up to 11 did. */
function spendFromRecord(s: BuildState): BuildState {
  if (s.spend === undefined) return s;
  return { ...s, spend: { ...s.spend, milestones: shardedOf(s.spend.milestones as unknown as Record<string, SpendTotals>) } };
}

/** The state in an earlier layout. */
function inLayout(l: ObjectLayout, s: BuildState): BuildState {
  const revisionPositions = l.sharded(revisionsSharded(s.revisionPositions), l.revisionKey) as unknown as RevisionPositions;
  return spendAsRecord({ ...s, attempts: l.sharded(s.attempts, same), jobs: l.sharded(s.jobs, same), revisionPositions });
}

/** Today's layout of a state kept in an earlier one. */
function fromLayout(l: ObjectLayout, s: BuildState): BuildState {
  const revisionPositions = revisionsFromSharded(l.shardedBack(s.revisionPositions as unknown as Sharded<number>, l.revisionKeyBack));
  return spendFromRecord({ ...s, attempts: l.shardedBack(s.attempts, same), jobs: l.shardedBack(s.jobs, same), revisionPositions });
}

/** A state as plain JSON (its nodes, checkpoints, summaries and planner calls are tables in memory). */
const plain = (s: BuildState): string => canonicalJson(plainState(s) as unknown as JsonValue);

/** A store of today's version opened on `path`: its tables dropped at open, then exactly the fold of `events`. The state it held. */
function foldedAgain(path: string, events: readonly StoredEvent[], fold: BuildState): BuildState {
  const current = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 20 });
  try {
    expect(current.position()).toBe(0); // tables dropped, to be rebuilt
    current.catchUp(events);
    const state = current.state<BuildState>('build');
    expect(plain(state)).toBe(plain(fold));
    return state;
  } finally {
    current.close();
  }
}

/**
 * What longbuild of state version `version` stored: today's fold, kept in that version's layout
 * (`to` makes it, `from` reads it back), under that version.
 */
const storedAs = (version: number, to: (s: BuildState) => BuildState, from: (s: BuildState) => BuildState): Projection<BuildState> => ({
  name: buildProjection.name,
  initialState: to(initialBuildState),
  evolve: (s, e) => to(evolveBuild(from(s), e)),
  tables: buildProjection.tables.map((t) => ({ ...t, entities: (s: BuildState) => t.entities(from(s)), toRow: t.toRow })),
  stateVersion: version,
});

/** What longbuild of an earlier state version stored: its fold, in its layout, under its version. */
const storedBy = (l: ObjectLayout): Projection<BuildState> => storedAs(l.version, (s) => inLayout(l, s), (s) => fromLayout(l, s));

describe('stored build state layout', () => {
  it.each(LAYOUTS)('a projections.db holding snapshots of state version $version ($what) is folded again from the log, never restored from them', (layout) => {
    const events = goldenEvents('helios');
    const fold = events.reduce(evolveBuild, initialBuildState);
    const dir = mkdtempSync(join(tmpdir(), 'lb-state-layout-'));
    dirs.push(dir);
    const path = join(dir, 'projections.db');
    const old = ProjectionStore.open(path, [storedBy(layout)], { snapshotEvery: 20 });
    old.catchUp(events);
    const oldState = old.state<BuildState>('build');
    old.close();
    // The emulated old layout is the old one: buckets as named objects (or revisions sharded), and today's accessors find nothing in it.
    expect(Array.isArray(oldState.attempts)).toBe(layout.bucketName === null);
    if (layout.bucketName !== null) expect(Object.keys(oldState.attempts).every((k) => layout.bucketName!.test(k))).toBe(true);
    expect('chunks' in oldState.revisionPositions).toBe(false);
    // A graph revision in a bucket above 9 (slots 0–9 are the same digits in version 4's layout,
    // index or name). (Not an attempt: the helios log compacts every node, and the state lets go
    // of compacted nodes' attempts, decision 0054.)
    const someRevision = [...revisionEntries(fold.revisionPositions)].map(([r]) => r).find((r) => r > 0 && slotsOf(revisionKey(r)).some((n) => n >= 10))!;
    expect(positionOfRevision(fold, someRevision)).toBeGreaterThan(0);
    expect(positionOfRevision(oldState, someRevision)).toBeUndefined();
    copyFileSync(path, join(dir, 'unversioned.db'));

    const state = foldedAgain(path, events, fold);
    expect(positionOfRevision(state, state.graphRevision)).toBe(positionOfRevision(fold, fold.graphRevision));
    for (const [r, p] of revisionEntries(fold.revisionPositions)) expect(positionOfRevision(state, r), `revision ${r}`).toBe(p);

    // Had the version stayed, the old snapshot would be restored and read in the wrong layout: revisions
    // not found, or (folding on past it) a fold that fails on a record it cannot read.
    const unversioned = ProjectionStore.open(join(dir, 'unversioned.db'), [{ ...buildProjection, stateVersion: layout.version }], { snapshotEvery: 20 });
    try {
      let misread: BuildState | null = null;
      try {
        unversioned.catchUp(events);
        misread = unversioned.state<BuildState>('build');
      } catch (err) {
        expect(String(err)).toMatch(/TypeError|CorruptLog|cannot/i);
      }
      if (misread !== null) {
        expect([...revisionEntries(fold.revisionPositions)].some(([r]) => positionOfRevision(misread, r) === undefined)).toBe(true);
        expect(plain(misread)).not.toBe(plain(fold));
      }
    } finally {
      unversioned.close();
    }
  });

  it('a projections.db holding snapshots of state version 11 (spend by milestone as a record) is folded again from the log, never restored from them (decision 0056)', () => {
    const events = goldenEvents('helios');
    const fold = events.reduce(evolveBuild, initialBuildState);
    const charged = [...shardEntries(fold.spend!.milestones)].map(([m]) => m);
    expect(charged.length).toBeGreaterThan(1);
    const dir = mkdtempSync(join(tmpdir(), 'lb-state-layout-'));
    dirs.push(dir);
    const path = join(dir, 'projections.db');
    const old = ProjectionStore.open(path, [storedAs(11, spendAsRecord, spendFromRecord)], { snapshotEvery: 20 });
    old.catchUp(events);
    const oldState = old.state<BuildState>('build');
    old.close();
    // The emulated old layout is the old one: a record by milestone id, in which today's reader finds nothing.
    expect(Array.isArray(oldState.spend!.milestones)).toBe(false);
    for (const m of charged) expect(milestoneSpent(oldState.spend, m), m).toEqual(NO_SPEND);
    copyFileSync(path, join(dir, 'unversioned.db'));

    const state = foldedAgain(path, events, fold);
    for (const m of charged) expect(milestoneSpent(state.spend, m).calls, m).toBeGreaterThan(0);

    // Had the version stayed 11, the old snapshot would be restored, and no milestone's spend found
    // in it: a milestone's budget would never be reached.
    const unversioned = ProjectionStore.open(join(dir, 'unversioned.db'), [{ ...buildProjection, stateVersion: 11 }], { snapshotEvery: 20 });
    try {
      unversioned.catchUp(events);
      const misread = unversioned.state<BuildState>('build');
      expect(charged.some((m) => milestoneSpent(misread.spend, m).calls === 0)).toBe(true);
      expect(plain(misread)).not.toBe(plain(fold));
    } finally {
      unversioned.close();
    }
  });

  it('a projections.db holding states of version 6 (every checkpoint and summary whole) is reset on open: the state is the fold of the log, and every snapshot the audit refolds is too (decision 0032)', () => {
    const events = goldenEvents('helios');
    const fold = events.reduce(evolveBuild, initialBuildState);
    const dir = mkdtempSync(join(tmpdir(), 'lb-state-layout-'));
    dirs.push(dir);
    const path = join(dir, 'projections.db');
    const audit = (file: string): { checked: number; problems: unknown[] } => {
      const db = new Database(file);
      try {
        return snapshotProblems([buildProjection], new SqliteSnapshotStore(db), events);
      } finally {
        db.close();
      }
    };
    // What version 6 kept: every checkpoint and summary whole, however long ago its window closed.
    const keepWhole = (before: BuildState, after: BuildState): BuildState => ({
      ...after,
      checkpoints: Object.fromEntries(Object.entries(after.checkpoints).map(([m, c]) => [m, before.checkpoints[m] ?? c])),
      summaries: Object.fromEntries(Object.entries(after.summaries).map(([id, r]) => [id, before.summaries[id] ? { ...r, summary: before.summaries[id]!.summary } : r])),
    });
    const version6: Projection<BuildState> = { ...buildProjection, evolve: (s, e) => keepWhole(s, evolveBuild(s, e)), evolveInPlace: undefined, stateVersion: 6 };
    const old = ProjectionStore.open(path, [version6], { snapshotEvery: 10 });
    old.catchUp(events);
    const oldState = old.state<BuildState>('build');
    old.close();
    // The emulated old state is the old one: a checkpoint whose window was renewed, still whole.
    const closed = Object.keys(fold.checkpoints).filter((m) => !('acceptedNodes' in fold.checkpoints[m]!.checkpoint));
    expect(closed.length).toBeGreaterThan(0);
    for (const m of closed) expect('acceptedNodes' in oldState.checkpoints[m]!.checkpoint, m).toBe(true);
    copyFileSync(path, join(dir, 'unversioned.db'));

    const current = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 10 });
    try {
      expect(current.position()).toBe(0); // tables dropped, to be rebuilt
      current.catchUp(events);
      expect(plain(current.state<BuildState>('build'))).toBe(plain(fold));
    } finally {
      current.close();
    }
    const checked = audit(path);
    expect(checked.checked).toBeGreaterThan(1);
    expect(checked.problems).toEqual([]);

    // Had the version stayed 6, the old state would be restored, and the audit would call its snapshots forged or stale.
    const unversioned = ProjectionStore.open(join(dir, 'unversioned.db'), [{ ...buildProjection, stateVersion: 6 }], { snapshotEvery: 10 });
    try {
      unversioned.catchUp(events);
      expect(plain(unversioned.state<BuildState>('build'))).not.toBe(plain(fold));
    } finally {
      unversioned.close();
    }
    expect(audit(join(dir, 'unversioned.db')).problems).toEqual([expect.objectContaining({ problem: expect.stringMatching(/^time-travel snapshot of build(-view)? at position \d+: differs from the fold of the log \(forged or stale\)$/) })]);
  });

  it('the first command after an upgrade that changed the projections\' layout says so in one line, with how many events it folds again; the next ones say nothing (decision 0032)', () => {
    const repo = mkdtempSync(join(tmpdir(), 'lb-state-layout-'));
    dirs.push(repo);
    cliJson(['init', '--blueprint', twoMilestoneHelios(repo)], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const head = cliJson(['status'], { cwd: repo }).position as number;
    // What an earlier longbuild left: the same tables under another layout's fingerprint.
    const db = new Database(join(repo, '.longbuild', 'projections.db'));
    db.prepare("UPDATE projection_positions SET fingerprint = 'an-earlier-layout'").run();
    db.close();
    const first = runCli(['status'], { cwd: repo });
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(new RegExp(`^longbuild: \\S*projections\\.db was written by another version of longbuild \\(build[^)]*\\): folding the log into it again, ${head} events \\(once\\)\\n$`));
    expect(runCli(['status'], { cwd: repo }).stderr).toBe('');
    const step = runCli(['step', '--json'], { cwd: repo });
    expect(step.code).toBe(0);
    expect(step.stderr).toBe('');
  });
});
