import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import { computeEventHash } from '../src/events/envelope.js';
import { hashLeaves, eventLeafHash } from '../src/events/merkle.js';
import { checkpointText, formatVerifierKey, ED25519, rawPublicKey, signNote } from '../src/events/signed-note.js';
import { runCli } from './support/cli.js';
import { coverageEnv, evaluatedModules, lazyModules } from './support/bundle-coverage.js';
import { hashAt, rewrite, rows } from './support/rewrite-log.js';
import { chainBlueprint } from './support/random-blueprint.js';
import { generateSigningKey } from '../src/adapters/transparency/keys.js';
import { signedHeadPath } from '../src/adapters/transparency/keys.js';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { buildProjection } from '../src/projections/build-projection.js';
import { buildView, type BuildState } from '../src/projections/build-state.js';
import { makeSnapshot } from '../src/projections/snapshots.js';
import { stateAt } from '../src/projections/time-travel.js';

// The tampers of issue 13, each done as an attacker with write access to the build directory
// would (raw SQL on events.db, files rewritten), and each caught: by `verify` (naming the
// position), by the controller before its first append (exit 1, nothing appended), by `rebuild`.

const root = mkdtempSync(join(tmpdir(), 'lb-audit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
let n = 0;

/** A build of the orbit blueprint, run for `steps` steps (all: to the end). */
/** A blueprint of `count` read-only nodes in milestones of 20 (each node ~2 events: more than a tile of 256 leaves from 130 on). */
function readOnlyBlueprint(count: number): string {
  const path = join(root, `wide${count}.json`);
  writeFileSync(path, JSON.stringify(chainBlueprint(count, 'wide')));
  return path;
}

function build(steps?: number, blueprint = ORBIT): { repo: string; db: string; dir: string } {
  const repo = join(root, `b${n++}`);
  const init = runCli(['init', '--blueprint', blueprint, '--repo', repo], { cwd: root });
  expect(init.code, init.stderr).toBe(0);
  const run = runCli(['run', '--repo', repo, ...(steps === undefined ? [] : ['--max-steps', String(steps)])], { cwd: root });
  expect(run.code, run.stderr).toBe(0);
  return { repo, dir: join(repo, '.longbuild'), db: join(repo, '.longbuild', 'events.db') };
}

/** Append one event chained properly to the head; the anchor moved too unless `keepAnchor`. */
function appendForged(db: string, type: string, data: unknown, keepAnchor = false): number {
  const all = rows(db);
  const last = all[all.length - 1]!;
  const position = last.position + 1;
  const metadata = JSON.parse(last.metadata);
  const e = { position, streamId: last.stream_id, revision: last.revision + 1, type, schemaVersion: 1, data: data as JsonValue, metadata, prevHash: last.hash };
  const hash = computeEventHash(e);
  const d = new Database(db);
  try {
    d.prepare('INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)').run(position, last.stream_id, last.revision + 1, type, 1, canonicalJson(data), canonicalJson(metadata), last.hash, hash);
    if (!keepAnchor) d.prepare('UPDATE chain_head SET position = ?, hash = ?').run(position, hash);
  } finally {
    d.close();
  }
  return position;
}

const count = (db: string): number => rows(db).length;

/** Cut the log after `keep` and move the anchor back with it, as an attacker hiding events would. */
function cutLog(db: string, keep: number): void {
  const d = new Database(db);
  const h = hashAt(db, keep);
  d.prepare('DELETE FROM events WHERE position > ?').run(keep);
  d.prepare('UPDATE chain_head SET position = ?, hash = ?').run(keep, h);
  d.close();
}
const verify = (repo: string, ...args: string[]) => runCli(['verify', '--repo', repo, ...args], { cwd: root });
const step = (repo: string) => runCli(['step', '--repo', repo], { cwd: root });


/** A CLI run whose V8 coverage goes to its own directory, `name` (test/support/bundle-coverage.ts). */
const recording = (name: string): Record<string, string> => {
  const dir = join(root, `coverage-${name}`);
  rmSync(dir, { recursive: true, force: true });
  return coverageEnv(dir);
};

/** Whether the recorded run evaluated the event schemas (the catalogue's zod schemas and what builds them). */
const builtSchemas = (name: string): boolean => {
  expect(lazyModules().has('events/catalogue'), 'the bundle evaluates the catalogue lazily').toBe(true);
  return evaluatedModules(join(root, `coverage-${name}`)).has('events/catalogue');
};

describe('R-36 nobody builds on a bad log; verify names the position', () => {
  it('R-36 a consistent rewrite from position 1 (verify command replaced by `true`, projections deleted): verify names position 1, step and rebuild refuse, nothing is appended', () => {
    const b = build(6);
    rewrite(b.db, (r) => r.map((row) => (row.position === 1 ? { ...row, data: canonicalJson({ ...JSON.parse(row.data), verify: [['true']] }) } : row)));
    rmSync(join(b.dir, 'projections.db'));
    const before = count(b.db);
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/verify failed at position 1: the log is not the one .*1\.checkpoint signed at size 1/);
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr.trim().split('\n')).toHaveLength(1);
    expect(s.stderr).toMatch(/not the one the checkpoint at size \d+ signed \(rewritten\?\); refusing to append/);
    expect(runCli(['rebuild', '--repo', b.repo], { cwd: root }).stderr).toMatch(/refusing to rebuild/);
    expect(count(b.db)).toBe(before);
  });

  it('R-36 a consistent rewrite re-signed under the attacker\'s own key passes a naive verify, but not --key, not --since an earlier checkpoint, and the controller refuses it', () => {
    const b = build(6);
    const held = join(root, `held-${n}.checkpoint`);
    const files = readdirSync(join(b.dir, 'checkpoints')).filter((f) => f.endsWith('.checkpoint')).sort((x, y) => parseInt(x) - parseInt(y));
    copyFileSync(join(b.dir, 'checkpoints', files[files.length - 1]!), held); // what an auditor kept
    const genuineVkey = JSON.parse(rows(b.db)[0]!.data).signing.vkey as string;
    const attacker = generateSigningKey();
    let origin = '';
    rewrite(b.db, (r) => r.map((row) => {
      if (row.position !== 1) return row;
      const data = JSON.parse(row.data);
      origin = data.buildId;
      return { ...row, data: canonicalJson({ ...data, verify: [['true']], signing: { vkey: formatVerifierKey(origin, ED25519, rawPublicKey(attacker)) } }) };
    }));
    // Re-sign every checkpoint with the attacker's key over the rewritten tree.
    const leaves = rows(b.db).map((row) => eventLeafHash(row.hash));
    for (const f of files) {
      const size = parseInt(f);
      writeFileSync(join(b.dir, 'checkpoints', f), signNote(checkpointText(origin, size, hashLeaves(leaves.slice(0, size))), origin, attacker));
    }
    rmSync(join(b.dir, 'tree.db'));
    rmSync(join(b.dir, 'projections.db'));
    const naive = verify(b.repo);
    expect(naive.code, naive.stdout).toBe(0); // nothing in the build directory can tell
    const withKey = verify(b.repo, '--key', genuineVkey);
    expect(withKey.code).toBe(1);
    expect(withKey.stderr).toMatch(/position 1: the log records the signing key .* not the key given with --key/);
    const since = verify(b.repo, '--since', held);
    expect(since.code).toBe(1);
    expect(since.stderr).toMatch(/does not verify|not the one/);
    const before = count(b.db);
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/is not this build's key/);
    expect(count(b.db)).toBe(before);
  });

  it('R-36 a forged event appended with the anchor left alone: verify names it, step refuses and appends nothing, and verify still fails afterwards', () => {
    const b = build(6);
    const at = appendForged(b.db, 'BuildCompleted', { graphRevision: 1, integrationHead: 'a'.repeat(40) }, true);
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`position ${at}: chain head anchor .* does not match the last event`));
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(new RegExp(`corrupt log at position ${at}: events after position ${at - 1} were not appended by longbuild`));
    expect(count(b.db)).toBe(at);
    expect(verify(b.repo).code).toBe(1);
  });

  it('R-36 a truncated log with its anchor moved back: verify says truncated, rebuild and step refuse', () => {
    const b = build(8);
    const total = count(b.db);
    const keep = total - 3;
    cutLog(b.db, keep);
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`position ${keep + 1}: log truncated`));
    const r = runCli(['rebuild', '--repo', b.repo], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/log truncated.*refusing to rebuild/);
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(new RegExp(`corrupt log at position ${keep + 1}: log truncated`));
    // With the projections gone too, the signed checkpoint still remembers the length.
    rmSync(join(b.dir, 'projections.db'));
    const again = step(b.repo);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/log truncated: (a checkpoint was signed|this machine signed a checkpoint) at size \d+/);
    expect(count(b.db)).toBe(keep);
  });

  it('R-36 a log cut back together with its later checkpoint files (projections gone, anchor moved): step refuses from the copy of the last checkpoint kept outside the build directory', () => {
    const b = build(8);
    const total = count(b.db);
    const keep = total - 4;
    cutLog(b.db, keep);
    for (const f of readdirSync(join(b.dir, 'checkpoints'))) if (parseInt(f) > keep) rmSync(join(b.dir, 'checkpoints', f));
    rmSync(join(b.dir, 'projections.db'));
    rmSync(join(b.dir, 'tree.db'));
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`verify failed at position ${keep + 1}: log truncated: .*heads/.*\\.checkpoint was signed at size ${total}`));
    expect(runCli(['rebuild', '--repo', b.repo], { cwd: root }).stderr).toMatch(/log truncated.*refusing to rebuild/);
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(new RegExp(`corrupt log at position ${keep + 1}: log truncated: this machine signed a checkpoint at size ${total} \\(kept in .*heads/.*\\.checkpoint\\), but the log ends at ${keep}`));
    expect(count(b.db)).toBe(keep);
  });

  it('R-36 events that fail the catalogue (a bogus BuildCompleted, an unknown type), properly chained and anchored: verify names them, step refuses', () => {
    for (const [type, data] of [['BuildCompleted', { bogus: true }], ['Nope', { x: 1 }]] as const) {
      const b = build(6);
      const at = appendForged(b.db, type, data);
      const v = verify(b.repo);
      expect(v.code).toBe(1);
      expect(v.stderr).toMatch(new RegExp(`position ${at}: event fails the catalogue`));
      const s = step(b.repo);
      expect(s.code).toBe(1);
      expect(s.stderr).toMatch(new RegExp(`position ${at}: an event after the last signed checkpoint fails the catalogue`));
      expect(count(b.db)).toBe(at);
    }
  });

  it('decision 0051: a row of the stored event index (the viewer\'s list) changed on disk is named by verify, and rebuild writes it again from the log', () => {
    const b = build(6);
    const d = new Database(join(b.dir, 'projections.db'));
    expect(d.prepare('SELECT count(*) FROM event_index').pluck().get()).toBe(count(b.db));
    d.prepare("UPDATE event_index SET text = 'nothing happened' WHERE position = 3").run();
    d.close();
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/the stored event index \(the viewer's list\) differs from a rebuild: stored event_index \{"position":3,.*"text":"nothing happened"\}/);
    expect(runCli(['rebuild', '--repo', b.repo], { cwd: root }).code).toBe(0);
    expect(verify(b.repo).code).toBe(0);
  });

  it('decision 0051: projections.db of an earlier longbuild (no event index) gets one at the next run, from the whole log, which it says once', () => {
    const b = build(6);
    const d = new Database(join(b.dir, 'projections.db'));
    for (const t of ['event_index', 'event_marks', 'event_spend', 'event_types']) d.exec(`DROP TABLE ${t}`);
    d.prepare("DELETE FROM projection_positions WHERE name = 'event-index'").run();
    d.close();
    const first = runCli(['run', '--repo', b.repo], { cwd: root });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/was written by another version of longbuild \(event-index\): folding the log into it again, \d+ events \(once\)/);
    const again = runCli(['run', '--repo', b.repo], { cwd: root });
    expect(again.stderr).not.toMatch(/another version/);
    const e = new Database(join(b.dir, 'projections.db'), { readonly: true });
    expect(e.prepare('SELECT count(*) FROM event_index').pluck().get()).toBe(count(b.db));
    e.close();
    expect(verify(b.repo).code).toBe(0);
  });

  it('R-36 with no signed checkpoint left (deleted), step refuses; a stored-projections mismatch on a sound log advises rebuild, on a bad one it does not', () => {
    const b = build(6);
    const p = new Database(join(b.dir, 'projections.db'));
    const table = (p.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%node%'").pluck().get() as string | undefined);
    p.close();
    expect(table).toBeDefined();
    const d = new Database(join(b.dir, 'projections.db'));
    d.prepare(`DELETE FROM "${table}"`).run();
    d.close();
    const sound = verify(b.repo);
    expect(sound.code).toBe(1);
    expect(sound.stderr).toMatch(/stored projections differ.*the log checks out, so `longbuild rebuild`/);
    rmSync(join(b.dir, 'checkpoints'), { recursive: true });
    rmSync(signedHeadPath(process.env, b.dir)); // and the copy outside the build directory
    const bad = verify(b.repo);
    expect(bad.stdout + bad.stderr).not.toMatch(/longbuild rebuild/);
    expect(bad.stdout).toMatch(/no signed checkpoint/);
    const s = step(b.repo);
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/no signed checkpoint in .* refusing to append/);
    expect(existsSync(join(b.dir, 'checkpoints'))).toBe(false);
  });

  it.each([['a partial tile', () => build(6), false], ['complete tiles kept in the log (decision 0034)', () => build(180, readOnlyBlueprint(130)), true]] as const)('R-35 a forged tree store (every stored leaf replaced, %s given forged leaves) never gets a wrong root signed: the next step rebuilds it from the log and its checkpoint matches the log', (_, made, keptInLog) => {
    const b = made();
    const t = new Database(join(b.dir, 'tree.db'));
    const tiles = t.prepare('SELECT idx, length(hashes) AS n FROM tiles').all() as { idx: number; n: number }[];
    for (const row of tiles) {
      // A complete tile whose leaves are the log's holds none (an empty BLOB): the forger writes a whole tile of leaves into it.
      t.prepare('UPDATE tiles SET hashes = ? WHERE idx = ?').run(Buffer.alloc(row.n === 0 ? 256 * 32 : row.n, 0xab), row.idx);
    }
    t.close();
    expect(tiles.some((row) => row.n === 0)).toBe(keptInLog);
    const s = step(b.repo);
    expect(s.code, s.stderr).toBe(0);
    const v = verify(b.repo);
    expect(v.code, v.stdout + v.stderr).toBe(0);
    const leaves = rows(b.db).map((r) => eventLeafHash(r.hash));
    const newest = readdirSync(join(b.dir, 'checkpoints')).map((f) => parseInt(f)).sort((x, y) => y - x)[0]!;
    const note = readFileSync(join(b.dir, 'checkpoints', `${newest}.checkpoint`), 'utf8');
    expect(note.split('\n')[2]).toBe(hashLeaves(leaves.slice(0, newest)).toString('base64'));
  });

  it.each([['build', (s: BuildState) => s], ['build-view', buildView]] as const)('R-6 a forged time-travel snapshot of %s (its SHA recomputed) does not change what show prints, and verify (all, and a seeded sample) names its position', (name, of) => {
    const b = build();
    const at = 12;
    const before = runCli(['show', '--repo', b.repo, '--at', String(at), '--json'], { cwd: root });
    expect(before.code, before.stderr).toBe(0);
    const log = new SqliteEventLog({ path: b.db, readonly: true });
    const truth = stateAt((from, to) => log.readAllSync({ from, limit: to - from + 1 }), buildProjection, at).state;
    const hash = log.readAllSync({ from: at, limit: 1 })[0]!.hash;
    void log.close();
    const forged = structuredClone(truth);
    const victim = Object.keys(forged.nodes)[0]!;
    const node = forged.nodes[victim] as { state: string };
    node.state = node.state === 'accepted' ? 'blocked' : 'accepted';
    const snap = makeSnapshot(name, at, hash, of(forged));
    const p = new Database(join(b.dir, 'projections.db'));
    p.prepare('INSERT OR REPLACE INTO snapshots (projection, position, event_hash, state_json, sha256) VALUES (?,?,?,?,?)').run(snap.projection, snap.position, snap.eventHash, snap.stateJson, snap.sha256);
    p.close();
    const after = runCli(['show', '--repo', b.repo, '--at', String(at), '--json'], { cwd: root });
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toBe(before.stdout);
    const v = verify(b.repo);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(new RegExp(`verify failed at position ${at}: time-travel snapshot of ${name} at position ${at}: differs from the fold of the log`));
    const sampled = verify(b.repo, '--sample', '1', '--seed', '7');
    expect(sampled.code).toBe(1);
    // One of each kind that has snapshots (the view's head is one since decision 0053), and the forged one among them.
    expect(sampled.stdout).toMatch(/[12] time-travel snapshots refolded \(sample, --seed 7\)/);
    expect(sampled.stdout).toMatch(new RegExp(`problem at position ${at}: time-travel snapshot of ${name} at position ${at}`));
  });

  it('R-6 R-37 reading commands fold from the view and write nothing: a forged view at the head (its SHA recomputed) does not change what status and show print; show --revision reads the whole state, and so does status without projections', () => {
    const b = build();
    const status0 = runCli(['status', '--repo', b.repo, '--json'], { cwd: root, env: recording('status0') });
    const show0 = runCli(['show', '--repo', b.repo, '--json'], { cwd: root, env: recording('show0') });
    expect(status0.code, status0.stderr).toBe(0);
    expect(show0.code, show0.stderr).toBe(0);
    // Decision 0022: folding from the view, they open the log's reading side and build no event schemas.
    expect(builtSchemas('status0'), 'status built the event schemas').toBe(false);
    expect(builtSchemas('show0'), 'show built the event schemas').toBe(false);
    const diff0 = runCli(['diff', '--repo', b.repo, '1', '5', '--json'], { cwd: root, env: recording('diff0') });
    expect(diff0.code, diff0.stderr).toBe(0);
    expect(builtSchemas('diff0'), 'diff built the event schemas').toBe(false);
    // Decision 0053: nor does `log`, --type checked against the schema versions alone.
    const log0 = runCli(['log', '--repo', b.repo, '--tail', '2', '--type', 'AttemptStarted', '--json'], { cwd: root, env: recording('log0') });
    expect(log0.code, log0.stderr).toBe(0);
    expect(log0.stdout.trim().split('\n').map((l) => JSON.parse(l).type)).toEqual(['AttemptStarted', 'AttemptStarted']);
    expect(builtSchemas('log0'), 'log built the event schemas').toBe(false);
    const log = new SqliteEventLog({ path: b.db, readonly: true });
    const head = count(b.db);
    const truth = stateAt((from, to) => log.readAllSync({ from, limit: to - from + 1 }), buildProjection, head).state;
    const hash = log.readAllSync({ from: head, limit: 1 })[0]!.hash;
    void log.close();
    const forged = structuredClone(truth);
    const victim = Object.keys(forged.nodes)[0]!;
    (forged.nodes[victim] as { state: string }).state = 'blocked';
    const snap = makeSnapshot('build-view', head, hash, buildView(forged));
    const p = new Database(join(b.dir, 'projections.db'));
    p.prepare('INSERT OR REPLACE INTO snapshots (projection, position, event_hash, state_json, sha256) VALUES (?,?,?,?,?)').run(snap.projection, snap.position, snap.eventHash, snap.stateJson, snap.sha256);
    p.pragma('wal_checkpoint(TRUNCATE)');
    p.close();
    const bytes = (): string => ['projections.db', 'projections.db-wal'].map((f) => (existsSync(join(b.dir, f)) ? readFileSync(join(b.dir, f)).toString('base64') : '-')).join('|');
    const before = bytes();
    const status1 = runCli(['status', '--repo', b.repo, '--json'], { cwd: root });
    const show1 = runCli(['show', '--repo', b.repo, '--json'], { cwd: root });
    expect(status1.stdout).toBe(status0.stdout);
    expect(show1.stdout).toBe(show0.stdout);
    expect(bytes(), 'a reading command wrote to projections.db').toBe(before);
    // A past revision's position is in the whole state only: show --revision opens it.
    const revision = (JSON.parse(show0.stdout) as { graphRevision: number }).graphRevision - 1;
    const past = runCli(['show', '--repo', b.repo, '--revision', String(revision), '--json'], { cwd: root });
    expect(past.code, past.stderr).toBe(0);
    expect((JSON.parse(past.stdout) as { graphRevision: number }).graphRevision).toBe(revision);
    // Without projections there is no view to start from: the build is opened whole (and they are rebuilt).
    for (const f of ['projections.db', 'projections.db-wal', 'projections.db-shm']) rmSync(join(b.dir, f), { force: true });
    const status2 = runCli(['status', '--repo', b.repo, '--json'], { cwd: root, env: recording('status2') });
    expect(status2.stdout).toBe(status0.stdout);
    expect(existsSync(join(b.dir, 'projections.db'))).toBe(true);
    expect(builtSchemas('status2'), 'opened whole, the build is opened as for a step (the schemas built)').toBe(true);
  });

  it('R-35 a finished build has a signed checkpoint at its head whose root verify recomputes, and --expect-head accepts it and refuses another root', () => {
    const b = build();
    const total = count(b.db);
    const note = readFileSync(join(b.dir, 'checkpoints', `${total}.checkpoint`), 'utf8');
    const rootLine = note.split('\n')[2]!;
    expect(verify(b.repo, '--expect-head', `${total}:${rootLine}`).code).toBe(0);
    const wrong = verify(b.repo, '--expect-head', `${total}:${Buffer.alloc(32, 1).toString('base64')}`);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/Merkle root at size/);
    expect(verify(b.repo, '--expect-head', 'nonsense').stderr.trim()).toMatch(/^longbuild: verify: --expect-head must be SIZE:ROOT/);
  });
});
