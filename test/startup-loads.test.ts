import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELIOS, runCli, tempDir } from './support/cli.js';

/**
 * Decision 0053: the built-ins a command does not use are not loaded at its start. Which ones a
 * process loaded is Node.js's own list (`process.moduleLoadList`), printed at exit by a preload.
 */
describe('what a command loads at its start (decisions 0053, 0055)', () => {
  it('--version and log --tail load neither node:crypto nor node:fs/promises; status loads crypto (it checks its snapshot\'s SHA-256); no reading command loads node:v8 or node:module, run does', () => {
    const dir = tempDir();
    const preload = join(dir, 'loaded.cjs');
    writeFileSync(preload, "process.on('exit', () => process.stderr.write(`LOADED ${JSON.stringify(process.moduleLoadList.filter((m) => m.startsWith('NativeModule ')).map((m) => m.slice(13)))}\\n`));\n");
    const repo = join(dir, 'repo');
    const init = runCli(['init', '--blueprint', HELIOS, '--repo', repo], { cwd: dir });
    expect(init.code, init.stderr).toBe(0);
    const loaded = (args: string[]): string[] => {
      const r = runCli(args, { cwd: repo, env: { NODE_OPTIONS: `--require=${preload}` } });
      expect(r.code, r.stderr).toBe(0);
      const line = r.stderr.split('\n').find((l) => l.startsWith('LOADED '));
      expect(line, r.stderr).toBeDefined();
      return JSON.parse(line!.slice(7)) as string[];
    };
    for (const args of [['--version'], ['log', '--tail', '1'], ['log', '--tail', '1', '--type', 'BuildInitialized', '--json']]) {
      const mods = loaded(args);
      expect(mods, args.join(' ')).not.toContain('crypto');
      expect(mods, args.join(' ')).not.toContain('fs/promises');
    }
    // The list is real: a command that hashes shows crypto in it.
    const status = loaded(['status']);
    expect(status).toContain('crypto');
    // Decision 0055: the loader makes its require without node:module, and only a process started
    // with --build-snapshot asks node:v8 whether it builds a snapshot.
    for (const [args, mods] of [[['status'], status], [['--version'], loaded(['--version'])], [['show', '--json'], loaded(['show', '--json'])]] as const) {
      expect(mods, args.join(' ')).not.toContain('v8');
      expect(mods, args.join(' ')).not.toContain('module');
    }
    // The list is real: `run` bounds its heap's growth through node:v8.
    expect(loaded(['run', '--max-steps', '1'])).toContain('v8');
  });
});
