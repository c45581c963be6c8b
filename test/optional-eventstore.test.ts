/**
 * The EventStoreDB client is an optional peer dependency (issue 49): an install without it runs
 * every other backend, and an `eventstore:` log is refused in one line naming the command that
 * installs the client. The install is real: a copy of the built CLI next to a node_modules that
 * holds every package of this checkout but @eventstore/db-client, so Node's own resolution fails.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from './support/cli.js';

function installWithoutEventStore(): string {
  const dir = tempDir('longbuild-no-esdb-');
  for (const part of ['bin', 'dist', 'package.json', 'ui', 'prompts']) if (existsSync(join(ROOT, part))) cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry === '@eventstore' || entry === '.bin') continue;
    symlinkSync(join(ROOT, 'node_modules', entry), join(dir, 'node_modules', entry));
  }
  return dir;
}

describe('the EventStoreDB client is optional (issue 49)', () => {
  it('without it, SQLite builds run and an eventstore: log is refused in one line naming `npm i @eventstore/db-client`', () => {
    const install = installWithoutEventStore();
    const bin = join(install, 'bin', 'longbuild.js');
    const repo = tempDir();
    const r = runCli(['init', '--blueprint', join(ROOT, 'examples', 'blueprints', 'helios.json'), '--log', 'eventstore:esdb://127.0.0.1:1?tls=false'], { cwd: repo, bin });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('longbuild: an eventstore: log needs the EventStoreDB client, which is not installed: run `npm i @eventstore/db-client` where longbuild is installed\n');
    expect(existsSync(join(repo, '.longbuild', 'log.json'))).toBe(false);
    const other = tempDir();
    expect(runCli(['init', '--blueprint', join(ROOT, 'examples', 'blueprints', 'helios.json')], { cwd: other, bin }).code).toBe(0);
    expect(runCli(['run', '--max-steps', '3'], { cwd: other, bin }).code).toBe(0);
    // With the client installed (this checkout), the same spec gets past loading: it fails on the connection instead.
    const withClient = runCli(['init', '--blueprint', join(ROOT, 'examples', 'blueprints', 'helios.json'), '--log', 'eventstore:esdb://127.0.0.1:1?tls=false'], { cwd: tempDir(), timeoutMs: 60_000 });
    expect(withClient.stderr).not.toMatch(/not installed/);
  });
});
