/**
 * A damaged events.db (issue 45): every reading command ends in one line naming the file and how
 * to recover, never "internal error", and nothing is changed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
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
});
