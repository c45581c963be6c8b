// What a command prints reaches a pipe whole. Writes to a pipe are asynchronous in Node.js: what
// the pipe cannot take yet is queued, and a process that exits at once drops it. `longbuild log
// --json | jq` on any real build read the first 65,536 bytes and a cut line.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cliJson, runCli, tempDir } from './support/cli.js';
import { chainBlueprint } from './support/random-blueprint.js';

const root = tempDir('longbuild-output-');
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('command output through a pipe', () => {
  it('log --json and show --json reach a pipe whole, however long; a reader that stops early ends the command quietly', () => {
    const file = join(root, 'bp.json');
    writeFileSync(file, JSON.stringify(chainBlueprint(100, 'output')));
    const repo = join(root, 'repo');
    expect(runCli(['init', '--repo', repo, '--blueprint', file], { cwd: root }).code).toBe(0);
    const run = runCli(['run', '--repo', repo], { cwd: root });
    expect(run.code, run.stderr).toBe(0);
    const head = (cliJson<{ position: number }>(['status', '--repo', repo], { cwd: root })).position;
    // Through a shell's pipe (64 KiB), as a user's `| jq` reads it: a child's stdout that a test
    // runner reads directly is a socket pair with a buffer several times that size.
    const piped = (args: string): string => {
      const r = spawnSync('bash', ['-c', `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} ${args} --repo ${JSON.stringify(repo)} --json | cat; exit "\${PIPESTATUS[0]}"`], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout;
    };
    const log = piped('log');
    expect(log.length, 'the log is longer than a pipe holds').toBeGreaterThan(2 * 65_536);
    const lines = log.trimEnd().split('\n').map((l) => JSON.parse(l) as { position: number });
    expect(lines.map((e) => e.position)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect((JSON.parse(piped('show')) as { position: number }).position).toBe(head);
    // `longbuild log --json | head -c 100`: the pipe closes under the writer.
    const early = spawnSync('bash', ['-c', `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} log --repo ${JSON.stringify(repo)} --json | head -c 100 >/dev/null; echo "\${PIPESTATUS[0]}"`], { cwd: root, encoding: 'utf8' });
    expect(early.stdout.trim()).toBe('0');
    expect(early.stderr).toBe('');
  });
});
