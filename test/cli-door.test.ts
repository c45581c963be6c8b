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

describe('rule ids (issue 49)', () => {
  it('a refusal names the rule it rests on only with --verbose', () => {
    const plain = runCli(['verify', '--sample', '0'], { cwd: repo });
    const plainShow = runCli(['show', '--checkpoint', 'nope'], { cwd: repo });
    expect(plainShow.code).toBe(1);
    expect(plainShow.stderr).not.toMatch(/\(R-\d+\)/);
    const bad = runCli(['approve', '--reason', ''], { cwd: repo });
    for (const r of [plain, bad]) expect(r.stderr).not.toMatch(/\(R-\d+\)/);
    const at = runCli(['init', '--blueprint', HELIOS, '--repo', repo], { cwd: root });
    expect(at.code).not.toBe(0);
    expect(at.stderr.split('\n')[0]).not.toMatch(/\(R-\d+\)$/);
    const verbose = runCli(['init', '--blueprint', HELIOS, '--repo', repo, '--verbose'], { cwd: root });
    expect(verbose.stderr.split('\n')[0]).toMatch(/\(R-\d+\)$/);
  });
});

describe('shell completion and opening a browser (issue 49)', () => {
  /** What bash offers for the words typed so far (the real bash, the generated script sourced). */
  const complete = (script: string, ...words: string[]) => execFileSync('bash', ['-c', `${script}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _longbuild; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' }).split('\n').filter(Boolean);

  it('longbuild completion bash completes commands, each command\'s own flags and its actions, in a real bash', () => {
    const r = runCli(['completion', 'bash'], { cwd: root });
    expect(r.code).toBe(0);
    expect(complete(r.stdout, 'longbuild', 'sta')).toEqual(['status']);
    expect(complete(r.stdout, 'longbuild', 'run', '--max')).toEqual(['--max-steps']);
    expect(complete(r.stdout, 'longbuild', '--repo', 'x', 'run', '--pro')).toEqual(['--progress']);
    expect(complete(r.stdout, 'longbuild', 'cache', 'g')).toEqual(['gc']);
    expect(complete(r.stdout, 'longbuild', 'schema', 'p').sort()).toEqual(['packet', 'planner-input', 'proposal']);
    expect(complete(r.stdout, 'longbuild', 'status', '--max')).toEqual([]); // run's flag is not status's
    const zsh = runCli(['completion', 'zsh'], { cwd: root });
    expect(zsh.stdout.startsWith('autoload -U +X bashcompinit && bashcompinit\n')).toBe(true);
    const bad = runCli(['completion', 'fish'], { cwd: root });
    expect([bad.code, bad.stderr.split('\n')[0]]).toEqual([2, "longbuild: completion: unknown shell 'fish' (expected: bash, zsh)"]);
  });

  it('ui --open runs the platform\'s opener: $BROWSER when set (a real child process receives the URL), open, start or xdg-open otherwise', async () => {
    const { browserCommand } = await import('../src/adapters/cli/commands/ui.js');
    const url = 'http://127.0.0.1:4177/?at=3&node=a';
    expect(browserCommand('linux', url, {})).toEqual(['xdg-open', url]);
    expect(browserCommand('darwin', url, {})).toEqual(['open', url]);
    expect(browserCommand('win32', url, {})).toEqual(['cmd', '/c', 'start', '""', 'http://127.0.0.1:4177/?at=3^&node=a']);
    expect(browserCommand('darwin', url, { BROWSER: 'firefox:chromium' })).toEqual(['firefox', url]);
    const seen = join(tempDir('longbuild-browser-'), 'seen');
    const opener = join(tempDir('longbuild-browser-'), 'opener.sh');
    (await import('node:fs')).writeFileSync(opener, `#!/bin/sh\necho "$1" > '${seen}'\n`, { mode: 0o755 });
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('./support/cli.js');
    const ui = spawn(process.execPath, [BIN, 'ui', '--port', '0', '--json', '--open'], { cwd: repo, env: { ...process.env, BROWSER: opener }, stdio: ['ignore', 'pipe', 'pipe'] });
    const started = await new Promise<string>((resolve) => {
      let out = '';
      ui.stdout!.on('data', (b: Buffer) => { out += b; if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0]!).url); });
    });
    const fs = await import('node:fs');
    for (let i = 0; i < 400 && !fs.existsSync(seen); i++) await new Promise((r) => setTimeout(r, 50));
    ui.kill('SIGINT');
    expect(fs.readFileSync(seen, 'utf8').trim()).toBe(started);
  }, 60_000);
});
