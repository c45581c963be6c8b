import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/adapters/cli/registry.js';
import { cliJson, HELIOS, ROOT, runCli, tempDir } from './support/cli.js';
import { editRow } from './support/rewrite-log.js';

const ANSI = /\x1b\[/;

describe('longbuild demo (issue 6)', () => {
  it('builds textkit end to end: renewal, a revised attempt, four checkpoints; two runs give the same integration tree', () => {
    const a = cliJson(['demo', join(tempDir(), 'one')], { cwd: ROOT });
    const b = cliJson(['demo', join(tempDir(), 'two')], { cwd: ROOT });
    expect(a.outcome).toBe('horizon_complete');
    expect(a.checkpoints).toEqual(['core', 'formatting', 'collections', 'release']);
    expect(a.integrationTree).toMatch(/^[0-9a-f]{40}$/);
    expect(b.integrationTree).toBe(a.integrationTree);
    expect(b.integrationHead).toBe(a.integrationHead);
    const status = cliJson(['status'], { cwd: a.dir });
    expect(status.horizon.revision).toBe(2);
    expect(status.calls.worker).toBe(16); // 13 writable + 2 read-only nodes + wrap's second attempt
    const revising = runCli(['log', '--type', 'IntegrationFailed', '--json'], { cwd: a.dir }).stdout.trim().split('\n');
    expect(revising.map((l) => JSON.parse(l).data.nodeIds)).toEqual([['wrap']]);
    // The demo's own tests pass on the integrated tree.
    expect(cliJson(['verify'], { cwd: a.dir }).ok).toBe(true);
    // Reading commands restore the view snapshotted at the head (decision 0053: under 100 events
    // too) and print, byte for byte, what folding the whole log gives.
    const reads = [['status'], ['status', '--json'], ['show'], ['show', '--json'], ['show', '--at', '50', '--json']];
    const outputs = (): string[] => reads.map((args) => runCli(args, { cwd: b.dir }).stdout);
    const db = new Database(join(b.dir, '.longbuild', 'projections.db'));
    try {
      const heads = db.prepare("SELECT position FROM snapshots WHERE projection = 'build-view'").pluck().all() as number[];
      expect(heads, 'the view at the head').toContain(cliJson(['status'], { cwd: b.dir }).position);
      const restored = outputs();
      db.prepare('DELETE FROM snapshots').run();
      expect(outputs(), 'folded from the log').toEqual(restored);
    } finally {
      db.close();
    }
  }, 240_000);

  it('prints no animation and no colour without a terminal, and the summary names the commands to explore', () => {
    // Started through npx (npm exec): the commands it names are npx's, which work where it was started.
    const r = runCli(['demo', join(tempDir(), 'd')], { cwd: ROOT, env: { NO_COLOR: '1', npm_command: 'exec' } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('npx longbuild status');
    expect(r.stdout + r.stderr).not.toMatch(ANSI);
    expect(r.stderr).not.toContain('\r');
    // `longbuild` when it is on PATH, else the exact node command that ran the demo.
    for (const cmd of ['status', 'show --revision', 'diff', 'ui', 'log', 'verify']) expect(r.stdout).toMatch(new RegExp(`longbuild(\\.js)? ${cmd}`));
  });
});

describe('CLI error paths: one clear line, the right exit code, nothing appended (R-28)', () => {
  const oneLine = (s: string) => s.trim().split('\n').filter((l) => !l.startsWith('run `longbuild --help`'));

  it('a missing blueprint file', () => {
    const r = runCli(['init', '--blueprint', 'nope.json'], { cwd: tempDir() });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/nope\.json/);
  });

  it('a blueprint that is not JSON', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'bad.json'), '{ "request": ');
    const r = runCli(['init', '--blueprint', 'bad.json'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/JSON/);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace without --verbose
  });

  it('R-8 a blueprint with an unsafe node id is refused before it reaches a path or a ref', () => {
    const dir = tempDir();
    const bp = JSON.parse(readFileSync(HELIOS, 'utf8'));
    bp.milestones[0].nodes[1].id = '../escape';
    writeFileSync(join(dir, 'bp.json'), JSON.stringify(bp));
    const r = runCli(['init', '--blueprint', 'bp.json'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unsafe id|\.\.\/escape/);
    expect(runCli(['status'], { cwd: dir }).code).toBe(1); // no build was created
  });

  it('an invalid config field is named', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'request.json'), '{"title":"x"}');
    writeFileSync(join(dir, 'cfg.json'), JSON.stringify({ planner: { command: ['node', 'p.mjs'] }, worker: { command: [] }, maxBatch: 0 }));
    const r = runCli(['init', '--request', 'request.json', '--config', 'cfg.json'], { cwd: dir });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/worker\.command/);
    expect(r.stderr).toMatch(/maxBatch/);
  });

  it('R-4 a corrupt log stops the controller with exit 1 and appends nothing', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run', '--max-steps', '3'], { cwd: repo });
    const db = new Database(join(repo, '.longbuild', 'events.db'));
    const before = (db.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n;
    db.close();
    editRow(join(repo, '.longbuild', 'events.db'), 2, (r) => {
      expect(r.data).toContain('plan.seal.0');
      return { data: r.data.replace('plan.seal.0', 'plan.seal.9') };
    });
    const v = runCli(['verify'], { cwd: repo });
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/position 2/);
    const step = runCli(['step'], { cwd: repo });
    expect(step.code).toBe(1);
    expect(oneLine(step.stderr)).toHaveLength(1);
    const after = new Database(join(repo, '.longbuild', 'events.db'));
    expect((after.prepare('SELECT COUNT(*) AS n FROM events').get() as { n: number }).n).toBe(before);
    after.close();
  });

  it('--repo without --dir finds the same build for every command (the build lives in <repo>/.longbuild)', () => {
    const elsewhere = tempDir();
    const repo = join(tempDir(), 'repo');
    cliJson(['init', '--blueprint', HELIOS, '--repo', repo], { cwd: elsewhere });
    expect(cliJson(['status', '--repo', repo], { cwd: elsewhere }).position).toBe(1);
    expect(cliJson(['verify', '--repo', repo], { cwd: elsewhere }).events).toBe(1);
    expect(runCli(['log', '--repo', repo, '--json'], { cwd: elsewhere }).stdout.trim().split('\n')).toHaveLength(1);
    // A type no event can have is a usage error naming it, not an empty listing.
    const nope = runCli(['log', '--repo', repo, '--type', 'Nope'], { cwd: elsewhere });
    expect(nope.code).toBe(2);
    expect(nope.stderr).toMatch(/^longbuild: log: unknown event type 'Nope' \(known: AcceptanceFinished, AcceptanceRequested, AcceptanceStarted, ApprovalRequested, AttemptFinished, AttemptStarted, BatchSplit/);
  });

  it('every command has --help with an example', () => {
    for (const name of Object.keys(COMMANDS)) {
      const r = runCli([name, '--help'], { cwd: ROOT });
      expect(r.code, name).toBe(0);
      expect(r.stdout, name).toMatch(/example/);
    }
  });

  it('config-schema prints the JSON Schema the committed schemas/ copy matches', () => {
    const r = runCli(['config-schema'], { cwd: ROOT });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(JSON.parse(readFileSync(join(ROOT, 'schemas', 'longbuild.config.schema.json'), 'utf8')));
  });
});
