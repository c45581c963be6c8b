/**
 * The door (issue 49, part 4): a build is found from any subdirectory of its repository, as git
 * finds a repository (never past the repository's top); unknown commands and flags get a
 * did-you-mean; `log --limit N` / `--tail N` page the log. Real CLI, git and SQLite.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HELIOS, cliJson, runCli, tempDir } from './support/cli.js';

const root = tempDir('longbuild-door-');
const repo = join(root, 'repo');

beforeAll(() => {
  cliJson(['init', '--blueprint', HELIOS, '--repo', repo], { cwd: root });
  expect(runCli(['run', '--max-steps', '6'], { cwd: repo }).code).toBe(0);
}, 120_000);

describe('the door (issue 49)', () => {
  it('a command run in a subdirectory finds the build at the repository\'s top; not past a nested repository\'s top, nor where there is none', () => {
    const deep = join(repo, 'src', 'deeper');
    mkdirSync(deep, { recursive: true });
    expect(cliJson(['status'], { cwd: deep })).toEqual(cliJson(['status'], { cwd: repo }));
    expect(runCli(['log', '--json'], { cwd: deep }).stdout).toBe(runCli(['log', '--json'], { cwd: repo }).stdout);
    // A repository of its own inside the build's: its top is where the search stops.
    const nested = join(repo, 'vendor', 'lib');
    mkdirSync(nested, { recursive: true });
    execFileSync('git', ['init', '-q', nested]);
    const inNested = runCli(['status'], { cwd: nested });
    expect(inNested.code).not.toBe(0);
    expect(inNested.stderr).toMatch(/no build/);
    // Outside any build: as before.
    const elsewhere = tempDir('longbuild-door-none-');
    expect(runCli(['status'], { cwd: elsewhere }).stderr).toMatch(/no build/);
  });

  it('unknown commands and flags name the closest one', () => {
    for (const [args, line] of [
      [['statsu'], "longbuild: unknown command 'statsu' (did you mean status?)"],
      [['provenace', 'x'], "longbuild: unknown command 'provenace' (did you mean provenance?)"],
      [['status', '--jsn'], "longbuild: unknown flag '--jsn' (did you mean --json?)"],
      [['log', '--tial', '3'], "longbuild: unknown flag '--tial' (did you mean --tail?)"],
    ] as const) {
      const r = runCli([...args], { cwd: repo });
      expect([r.code, r.stderr.split('\n')[0]]).toEqual([2, line]);
    }
    // Nothing close: the list of commands, no guess.
    expect(runCli(['frobnicate'], { cwd: repo }).stderr).toMatch(/unknown command 'frobnicate' \(commands: .*status/);
  });

  it('log --limit N gives the first N events, --tail N the last N (with --from and --type too); both, or with --follow, is refused', () => {
    const all = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n');
    const lines = (args: string[]): string[] => runCli(['log', '--json', ...args], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '');
    expect(lines(['--limit', '3'])).toEqual(all.slice(0, 3));
    expect(lines(['--tail', '4'])).toEqual(all.slice(-4));
    expect(lines(['--from', '5', '--limit', '2'])).toEqual(all.slice(4, 6));
    const attempts = all.filter((l) => JSON.parse(l).type === 'AttemptStarted');
    expect(lines(['--type', 'AttemptStarted', '--tail', '1'])).toEqual(attempts.slice(-1));
    expect(lines(['--limit', '0'])).toEqual([]);
    expect(runCli(['log', '--limit', '1', '--tail', '1'], { cwd: repo }).stderr.split('\n')[0]).toBe('longbuild: log: give --limit N (the first N) or --tail N (the last N), not both');
    expect(runCli(['log', '--follow', '--tail', '1'], { cwd: repo }).code).toBe(2);
  });
});
