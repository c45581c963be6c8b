import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELIOS, runCli, tempDir } from './support/cli.js';

/**
 * Decision 0053: the built-ins a command does not use are not loaded at its start. Which ones a
 * process loaded is Node.js's own list (`process.moduleLoadList`), printed at exit by a preload.
 */
describe('what a command loads at its start (decision 0053)', () => {
  it('--version and log --tail load neither node:crypto nor node:fs/promises; status loads crypto (it checks its snapshot\'s SHA-256)', () => {
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
    expect(loaded(['status'])).toContain('crypto');
  });
});
