/**
 * The Merkle tree cache (`tree.db`) damaged on disk (issue 45): `verify` names it, `prove` never
 * hands out a proof that does not check (it builds the cache again from the log first), and
 * `rebuild` rebuilds it. Real SQLite files, a real build through the CLI, bytes flipped in the file
 * as a failing disk or a careless hand would.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';

/** A blueprint build long enough (over 256 events) for tree.db to keep a subtree hash, not only leaves. */
function longBuild(): string {
  const dir = tempDir('longbuild-tree-');
  const nodes = Array.from({ length: 110 }, (_, i) => ({ id: `n${i}`, kind: 'writable', deps: [], files: { [`src/f${i}.txt`]: `${i}\n` } }));
  writeFileSync(join(dir, 'bp.json'), JSON.stringify({ request: { goal: 'many files' }, verify: [['true']], detailedWindow: 1, sandbox: 'off', maxBatch: 8, milestones: [{ id: 'm', title: 'm', nodes }] }));
  const repo = join(dir, 'repo');
  mkdirSync(repo);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
  execFileSync('git', ['-c', 'user.name=u', '-c', 'user.email=u@x', 'commit', '-q', '--allow-empty', '-m', 'init'], { cwd: repo });
  cliJson(['init', '--blueprint', join(dir, 'bp.json')], { cwd: repo });
  const r = runCli(['run'], { cwd: repo, timeoutMs: 300_000 });
  expect(r.code, r.stderr).toBe(0);
  return repo;
}

/** Flip the first byte of a BLOB in tree.db, as a bad sector would. */
function flip(repo: string, sql: string): void {
  const db = new Database(join(repo, '.longbuild', 'tree.db'));
  const row = db.prepare(sql).get() as { blob: Buffer };
  const bytes = Buffer.from(row.blob);
  bytes[0] = bytes[0]! ^ 0xff;
  db.prepare(sql.replace(/^SELECT .* FROM (\w+) WHERE (.*) LIMIT 1$/, 'UPDATE $1 SET hashes = ? WHERE $2')).run(bytes);
  db.close();
}

describe('the Merkle tree cache, damaged on disk (issue 45)', () => {
  let repo = '';
  let size = 0;
  let vkey = '';
  beforeAll(() => {
    repo = longBuild();
    const v = cliJson(['verify'], { cwd: repo });
    size = v.events;
    vkey = JSON.parse(runCli(['log', '--json', '--type', 'BuildInitialized'], { cwd: repo }).stdout.split('\n')[0]!).data.signing.vkey;
    expect(size).toBeGreaterThan(256 + 8);
  }, 300_000);

  it('a flipped subtree hash: verify names tree.db and the remedy; prove rebuilds it before handing out a proof that checks; rebuild restores it', () => {
    const db = new Database(join(repo, '.longbuild', 'tree.db'));
    const before = db.prepare('SELECT hash FROM nodes WHERE level = 8 AND idx = 0').pluck().get() as Buffer;
    const bad = Buffer.from(before);
    bad[0] = bad[0]! ^ 0xff;
    db.prepare('UPDATE nodes SET hash = ? WHERE level = 8 AND idx = 0').run(bad);
    db.close();
    const v = runCli(['verify'], { cwd: repo });
    expect(v.code).toBe(1);
    expect(v.stderr + v.stdout).toMatch(/the Merkle tree cache .*tree\.db disagrees with the log: its hash of leaves 0\.\.255 is not the log's/);
    expect(v.stderr + v.stdout).toMatch(/`longbuild rebuild`/);
    // A leaf whose proof needs that subtree hash (its sibling): the proof handed out checks.
    const out = join(tempDir('longbuild-proof-'), 'p.tlog-proof');
    const p = runCli(['prove', '--position', '260', '--out', out], { cwd: repo });
    expect(p.code, p.stderr).toBe(0);
    expect(p.stderr).toMatch(/tree\.db gave a proof that does not check: building it again from the log/);
    expect(cliJson(['prove', '--check', out, '--key', vkey], { cwd: repo }).result).toMatchObject({ kind: 'inclusion', position: 260 });
    // prove built it again: verify is clean.
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a flipped leaf in the last tile: verify names the leaf; rebuild builds tree.db again from the log and verify passes', () => {
    flip(repo, 'SELECT hashes AS blob FROM tiles WHERE length(hashes) > 0 LIMIT 1');
    const v = runCli(['verify'], { cwd: repo });
    expect(v.code).toBe(1);
    expect(v.stderr + v.stdout).toMatch(/tree\.db disagrees with the log: its leaf 256 is not the hash of event 257/);
    const r = cliJson(['rebuild'], { cwd: repo });
    expect(r.treeLeaves).toBe(size);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
    // And a proof from the rebuilt cache checks.
    const out = join(tempDir('longbuild-proof-'), 'q.tlog-proof');
    const p = runCli(['prove', '--position', String(size - 1), '--out', out], { cwd: repo });
    expect(p.stderr).toBe('');
    expect(cliJson(['prove', '--check', out, '--key', vkey], { cwd: repo }).result).toMatchObject({ kind: 'inclusion' });
  });
});
