import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../src/adapters/log/sqlite-log.js';
import { exitCodeFor, main } from '../src/adapters/cli/main.js';
import { ConcurrencyError, CorruptLogError, NotFoundError, UsageError, ValidationError } from '../src/events/errors.js';
import { editRow, hashAt } from './support/rewrite-log.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A build directory whose log holds `n` valid domain events (BuildBlocked is self-contained). */
function buildWithEvents(n: number): { cwd: string; dir: string; events: string; projections: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'lb-cli-'));
  dirs.push(cwd);
  const dir = join(cwd, 'b');
  const events = join(dir, 'events.db');
  const log = new SqliteEventLog({ path: (mkdir(dir), events), synchronous: 'NORMAL' });
  for (let i = 0; i < n; i++) {
    log.appendSync('build', [{ type: 'BuildBlocked', data: { reason: `reason ${i}`, nodeIds: i % 2 ? ['node-a'] : [], graphRevision: i }, metadata: { recordedAt: `t${i}` } }], i === 0 ? 'no-stream' : i - 1);
  }
  void log.close();
  return { cwd, dir, events, projections: join(dir, 'projections.db') };
}
function mkdir(d: string): void {
  spawnSync('mkdir', ['-p', d]);
}

async function cli(argv: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(argv, { cwd, env: {}, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

function rawDb(path: string, sql: string): void {
  const db = new Database(path);
  db.exec(sql);
  db.close();
}

describe('CLI: log, verify, rebuild', () => {
  it('log --json prints one canonical object per event; --from and --type filter', async () => {
    const b = buildWithEvents(4);
    const all = await cli(['log', '--dir', 'b', '--json'], b.cwd);
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.position)).toEqual([1, 2, 3, 4]);
    expect(Object.keys(lines[0]!).sort()).toEqual(['data', 'hash', 'metadata', 'position', 'prevHash', 'revision', 'schemaVersion', 'streamId', 'type']);
    expect(lines[1]).toMatchObject({ type: 'BuildBlocked', revision: 1, data: { reason: 'reason 1', nodeIds: ['node-a'], graphRevision: 1 }, prevHash: lines[0]!.hash });
    const from = await cli(['--json', 'log', '--from=3', '--dir', 'b'], b.cwd);
    expect(from.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as { position: number }).position)).toEqual([3, 4]);
    const none = await cli(['log', '--dir', 'b', '--type', 'BuildCompleted', '--json'], b.cwd);
    expect(none).toMatchObject({ code: 0, stdout: '' });
    const human = await cli(['log', '--dir', 'b'], b.cwd);
    expect(human.stdout.split('\n')[0]).toMatch(/^\s+1 {2}[0-9a-f]{12} {2}build@0 {2}BuildBlocked {2}\{"graphRevision":0/);
  });

  it('R-5 rebuild and verify agree on the projections SHA-256', async () => {
    const b = buildWithEvents(5);
    const rebuilt = await cli(['rebuild', '--dir', 'b', '--json'], b.cwd);
    expect(rebuilt.code).toBe(0);
    const r = JSON.parse(rebuilt.stdout) as { events: number; projectionsSha256: string };
    expect(r.events).toBe(5);
    const verified = await cli(['verify', '--dir', 'b', '--json'], b.cwd);
    expect(verified.code).toBe(0);
    const v = JSON.parse(verified.stdout) as Record<string, unknown>;
    expect(v).toMatchObject({ ok: true, events: 5, projectionsSha256: r.projectionsSha256, problems: [] });
    expect(v.headHash).toMatch(/^[0-9a-f]{64}$/);
    expect((await cli(['verify', '--dir', 'b'], b.cwd)).stdout).toMatch(/^ok: 5 events/);
  });

  it('R-4 verify fails with exit 1 naming the first bad position of an edited event', async () => {
    const b = buildWithEvents(6);
    editRow(b.events, 4, (r) => ({ data: r.data.replace('reason 3', 'reason 9') }));
    const v = await cli(['verify', '--dir', 'b', '--json'], b.cwd);
    expect(v.code).toBe(1);
    const out = JSON.parse(v.stdout) as { ok: boolean; problems: { position: number }[]; projectionsSha256: string | null };
    expect(out.ok).toBe(false);
    expect(out.problems[0]?.position).toBe(4);
    expect(v.stderr.trim().split('\n')).toHaveLength(1);
    expect(v.stderr).toMatch(/verify failed at position 4/);
    const rebuild = await cli(['rebuild', '--dir', 'b'], b.cwd);
    expect(rebuild.code).toBe(1);
    expect(rebuild.stderr).toMatch(/corrupt log at position 4/);
  });

  it('R-4 verify detects a truncated tail even when the chain head anchor was rewritten, because projections saw more', async () => {
    const b = buildWithEvents(6);
    expect((await cli(['rebuild', '--dir', 'b'], b.cwd)).code).toBe(0); // projections now at 6
    rawDb(b.events, `DELETE FROM events WHERE position > 4; UPDATE chain_head SET position = 4, hash = '${hashAt(b.events, 4)}'`);
    const v = await cli(['verify', '--dir', 'b', '--json'], b.cwd);
    expect(v.code).toBe(1);
    const out = JSON.parse(v.stdout) as { problems: { position: number; problem: string }[] };
    expect(out.problems[0]).toMatchObject({ position: 5 });
    expect(out.problems[0]?.problem).toMatch(/truncated/);
  });

  it('R-4 verify detects a truncated tail through the anchor', async () => {
    const b = buildWithEvents(3);
    rawDb(b.events, 'DELETE FROM events WHERE position = 3');
    const v = await cli(['verify', '--dir', 'b', '--json'], b.cwd);
    expect(v.code).toBe(1);
    expect((JSON.parse(v.stdout) as { problems: { position: number }[] }).problems[0]?.position).toBe(3);
  });

  it('R-5 verify detects stored projection rows that differ from a rebuild', async () => {
    const b = buildWithEvents(4);
    expect((await cli(['rebuild', '--dir', 'b'], b.cwd)).code).toBe(0);
    const db = new Database(b.projections);
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('projection_positions', 'snapshots') AND name NOT LIKE 'event\\_%' ESCAPE '\\'`).pluck().all() as string[])
      .filter((t) => (db.prepare(`SELECT COUNT(*) FROM "${t}"`).pluck().get() as number) > 0);
    expect(tables.length).toBeGreaterThan(0);
    db.exec(`DELETE FROM "${tables[0]}"`);
    db.close();
    const v = await cli(['verify', '--dir', 'b', '--json'], b.cwd);
    expect(v.code).toBe(1);
    expect((JSON.parse(v.stdout) as { problems: { problem: string }[] }).problems[0]?.problem).toMatch(/differ from a rebuild/);
    expect((await cli(['rebuild', '--dir', 'b'], b.cwd)).code).toBe(0);
    expect((await cli(['verify', '--dir', 'b'], b.cwd)).code).toBe(0);
  });
});

describe('CLI: usage and exit codes', () => {
  it('maps typed errors to the exit codes of docs/cli.md in one place', () => {
    expect(exitCodeFor(new ConcurrencyError('s', '1', 2))).toBe(3);
    expect(exitCodeFor(new UsageError('x'))).toBe(2);
    expect(exitCodeFor(new CorruptLogError(1, 'x'))).toBe(1);
    expect(exitCodeFor(new ValidationError('x'))).toBe(1);
    expect(exitCodeFor(new NotFoundError('x'))).toBe(1);
    expect(exitCodeFor(new Error('boom'))).toBe(1);
  });

  it('unknown commands and flags, bad values and extra arguments are usage errors (exit 2)', async () => {
    const b = buildWithEvents(1);
    for (const argv of [['frobnicate'], ['log', '--frob'], ['log', '--from', 'abc'], ['log', '--from'], ['verify', 'extra'], ['--json', '-x', 'log'], []]) {
      const r = await cli(argv, b.cwd);
      expect(r.code, argv.join(' ')).toBe(2);
      if (argv.length > 0) expect(r.stderr, argv.join(' ')).toMatch(/^longbuild: /);
    }
  });

  it('a missing build is one clear line and exit 1; --verbose adds the stack', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lb-cli-'));
    dirs.push(cwd);
    const r = await cli(['verify'], cwd);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/no build in .*\.longbuild/);
    expect(existsSync(join(cwd, '.longbuild'))).toBe(false);
    expect((await cli(['verify', '--verbose'], cwd)).stderr).toMatch(/\n\s+at /);
  });

  it('help lists every command and a command help shows an example', async () => {
    const top = await cli(['--help'], '/');
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/\n {2}log +print the events/);
    expect(top.stdout).toMatch(/\n {2}verify /);
    const one = await cli(['log', '--help'], '/');
    expect(one).toMatchObject({ code: 0 });
    expect(one.stdout).toMatch(/example: longbuild log/);
    expect((await cli(['help', 'rebuild'], '/')).stdout).toMatch(/example: longbuild rebuild/);
  });

  it('the compiled bin prints the version quickly', () => {
    const bin = join(root, 'bin/longbuild.js');
    expect(existsSync(join(root, 'dist/adapters/cli/main.js')), 'run `npm run build` first (npm test does)').toBe(true);
    const started = performance.now();
    const r = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8' });
    const ms = performance.now() - started;
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version);
    expect(ms).toBeLessThan(2000); // generous for a loaded CI box; the figure itself is in docs/guide/09-benchmarks.md
    const bad = spawnSync(process.execPath, [bin, 'nope'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
  });

  it('a reader that stops early (`log --json | head -c 10`) ends the command quietly, exit 0', () => {
    const b = buildWithEvents(3000); // ~400 KB of output: far past a pipe's buffer
    const bin = join(root, 'bin/longbuild.js');
    const r = spawnSync('bash', ['-c', 'set -o pipefail; "$0" "$1" log --json --dir "$2" | head -c 10 >/dev/null', process.execPath, bin, b.dir], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});
