/**
 * The build state's stored layout has a version (`stateVersion`): a state of another version in
 * `projections.db` — a snapshot written by an earlier longbuild — is never restored, the
 * projection is folded again from the log. Version 5 renamed the buckets of sharded collections
 * and the keys of `revisionPositions` so that none is integer-like (decision 0017, "Bucket
 * names"); a version-4 snapshot read as version 5 would find no attempt and no revision in it.
 * Here version-4 snapshots are written from a real recorded build (the golden helios log) in the
 * old layout, and a store of the current version opened on them must hold exactly the fold of
 * the log; the same store opened as if the version had not changed shows what the test guards.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import type { StoredEvent } from '../src/events/envelope.js';
import { buildProjection } from '../src/projections/build-projection.js';
import { attemptOf, evolveBuild, initialBuildState, positionOfRevision, type BuildState } from '../src/projections/build-state.js';
import { snapshotProblems } from '../src/projections/snapshot-audit.js';
import { SqliteSnapshotStore } from '../src/projections/snapshot-store.js';
import Database from 'better-sqlite3';
import { ProjectionStore } from '../src/projections/engine.js';
import { plainNodes } from '../src/projections/node-table.js';
import type { Projection } from '../src/projections/projection.js';
import { shardEntries, type Sharded } from '../src/projections/sharded.js';
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

/** A sharded collection with its bucket and entry keys renamed (between the two layouts). */
function renamed<T>(s: Sharded<T>, bucket: (name: string) => string, key: (k: string) => string): Sharded<T> {
  const out: Record<string, Record<string, Record<string, T>>> = {};
  for (const a in s) for (const b in s[a]) for (const [k, v] of Object.entries(s[a]![b]!)) ((out[bucket(a)] ??= {})[bucket(b)] ??= {})[key(k)] = v;
  return out;
}

/** The state in the layout of state version 4: bucket names and revision keys were bare digits. */
function version4(s: BuildState): BuildState {
  const bare = (name: string): string => name.replace(/^s/, '');
  const same = (k: string): string => k;
  return { ...s, attempts: renamed(s.attempts, bare, same), jobs: renamed(s.jobs, bare, same), revisionPositions: renamed(s.revisionPositions, bare, (k) => k.replace(/^r/, '')) };
}

function version5(s: BuildState): BuildState {
  const named = (name: string): string => `s${name}`;
  const same = (k: string): string => k;
  return { ...s, attempts: renamed(s.attempts, named, same), jobs: renamed(s.jobs, named, same), revisionPositions: renamed(s.revisionPositions, named, (k) => `r${k}`) };
}

/** A state as plain JSON (its nodes are a persistent table in memory). */
const plain = (s: BuildState): string => canonicalJson({ ...s, nodes: plainNodes(s.nodes) } as unknown as JsonValue);

/** What longbuild of state version 4 stored: its fold, in its layout, under its version. */
const storedByVersion4: Projection<BuildState> = {
  name: buildProjection.name,
  initialState: version4(initialBuildState),
  evolve: (s, e) => version4(evolveBuild(version5(s), e)),
  tables: buildProjection.tables.map((t) => ({ ...t, entities: (s: BuildState) => t.entities(version5(s)), toRow: t.toRow })),
  stateVersion: 4,
};

describe('stored build state layout', () => {
  it('a projections.db holding snapshots of state version 4 (digit-only bucket names) is folded again from the log, never restored from them', () => {
    const events = goldenEvents('helios');
    const fold = events.reduce(evolveBuild, initialBuildState);
    const dir = mkdtempSync(join(tmpdir(), 'lb-state-layout-'));
    dirs.push(dir);
    const path = join(dir, 'projections.db');
    const old = ProjectionStore.open(path, [storedByVersion4], { snapshotEvery: 20 });
    old.catchUp(events);
    const oldState = old.state<BuildState>('build');
    old.close();
    // The emulated old layout is the old one: digit-only buckets, and the current accessors find nothing in it.
    expect(Object.keys(oldState.attempts).every((k) => /^[0-9a-z]{1,2}$/.test(k) && !k.startsWith('s'))).toBe(true);
    const someAttempt = [...shardEntries(fold.attempts)][0]![0];
    expect(attemptOf(oldState, someAttempt)).toBeUndefined();
    copyFileSync(path, join(dir, 'unversioned.db'));

    const current = ProjectionStore.open(path, [buildProjection], { snapshotEvery: 20 });
    try {
      expect(current.position()).toBe(0); // tables dropped, to be rebuilt
      current.catchUp(events);
      const state = current.state<BuildState>('build');
      expect(plain(state)).toBe(plain(fold));
      expect(positionOfRevision(state, state.graphRevision)).toBe(positionOfRevision(fold, fold.graphRevision));
      for (const [id] of shardEntries(fold.attempts)) expect(attemptOf(state, id), id).toBeDefined();
    } finally {
      current.close();
    }

    // Had the version stayed 4, the old snapshot would be restored and read in the wrong layout.
    const unversioned = ProjectionStore.open(join(dir, 'unversioned.db'), [{ ...buildProjection, stateVersion: 4 }], { snapshotEvery: 20 });
    try {
      unversioned.catchUp(events);
      const misread = unversioned.state<BuildState>('build');
      expect(attemptOf(misread, someAttempt)).toBeUndefined();
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
