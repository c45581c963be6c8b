/**
 * A damaged events.db (issue 45): every reading command ends in one line naming the file and how
 * to recover, never "internal error", and nothing is changed. A damaged cache of the log
 * (projections.db, tree.db) says `longbuild rebuild` instead, which makes it again from the log.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELIOS, cliJson, runCli, tempDir } from './support/cli.js';

describe('a damaged log file', () => {
  it('R-40 status, log, show and verify on an events.db with damaged pages: one line naming the file and the way back, the file left as it was', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const db = join(repo, '.longbuild', 'events.db');
    const bytes = readFileSync(db);
    bytes.fill(0xff, 4096, bytes.length); // every page but the header
    writeFileSync(db, bytes);
    for (const command of ['status', 'log', 'show', 'verify']) {
      const r = runCli([command], { cwd: repo });
      expect(r.code, command).toBe(1);
      expect(r.stderr.trim().split('\n'), command).toHaveLength(1);
      expect(r.stderr, command).not.toMatch(/internal error/);
      expect(r.stderr, command).toContain(`${db} is damaged (SQLITE_CORRUPT`);
      expect(r.stderr, command).toMatch(/restore it from a copy .*longbuild export --to sqlite:FILE/);
    }
    expect(readFileSync(db).equals(bytes)).toBe(true);
  });

  it('a projections.db or tree.db that is not a database any more: one line naming `longbuild rebuild`, which moves it aside and makes it again, the same as before', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(cliJson(['run'], { cwd: repo }).outcome).toBe('horizon_complete');
    const before = runCli(['verify'], { cwd: repo });
    expect(before.code, before.stderr).toBe(0);
    const sha = /projections sha256 ([0-9a-f]{64})/.exec(before.stdout)![1]!;
    for (const name of ['projections.db', 'tree.db']) {
      const file = join(repo, '.longbuild', name);
      const bytes = readFileSync(file);
      bytes.fill(0x5a, 0, 4096); // the header page: not a database any more
      writeFileSync(file, bytes);
      const refused = runCli([name === 'tree.db' ? 'verify' : 'status'], { cwd: repo });
      expect(refused.code, name).toBe(1);
      expect(refused.stderr, name).not.toMatch(/internal error|restore it from a copy/);
      expect(refused.stderr, name).toContain(`${file} is damaged (SQLITE_NOTADB`);
      expect(refused.stderr, name).toContain('it is a cache of the log: `longbuild rebuild` makes it again');
      const rebuilt = runCli(['rebuild'], { cwd: repo });
      expect(rebuilt.code, rebuilt.stderr).toBe(0);
      expect(rebuilt.stderr.trim().split('\n')).toEqual([`longbuild: ${file} was damaged (SQLITE_NOTADB: file is not a database): moved aside to ${file}.damaged, made again from the log`]);
      expect(readFileSync(`${file}.damaged`).equals(bytes), name).toBe(true);
      expect(existsSync(file), name).toBe(true);
      const after = runCli(['verify'], { cwd: repo });
      expect(after.code, after.stderr).toBe(0);
      expect(after.stdout).toContain(`projections sha256 ${sha}`);
    }
  });
});
