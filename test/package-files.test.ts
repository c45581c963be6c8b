import { describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeFile, PACKAGE_ROOT, packageFile } from '../src/adapters/package-files.js';
import { defaultPromptPath } from '../src/adapters/agents/prompts.js';
import { ASSETS } from '../src/adapters/ui/viewer.js';
import { LONGBUILD_BIN } from '../src/adapters/fuzz/runner.js';

// Decision 0018: files are found from the package root, so the same code works from src/, from
// dist/adapters/ and from the bundle's chunks in dist/cli/ (a path relative to one module breaks
// once that module is bundled at another depth).
describe('package files (decision 0018)', () => {
  it('finds the package root and the files the CLI loads by path', () => {
    expect((JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { name: string }).name).toBe('longbuild');
    expect(LONGBUILD_BIN).toBe(join(PACKAGE_ROOT, 'bin', 'longbuild.js'));
    for (const role of ['planner', 'worker'] as const) expect(existsSync(defaultPromptPath(role)), role).toBe(true);
    expect(existsSync(join(ASSETS, 'index.html'))).toBe(true);
    // Under the test runner the helpers come from src/ (what is being tested), not a stale dist/.
    expect(codeFile('adapters', 'process', 'spawner.child.js')).toBe(join(PACKAGE_ROOT, 'src', 'adapters', 'process', 'spawner.child.js'));
    expect(existsSync(codeFile('adapters', 'log', 'sqlite-batch-writer.worker.js'))).toBe(true);
  });

  it('a package copy without its built CLI is refused in one line naming what to run, not a stack trace', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longbuild-unbuilt-'));
    try {
      mkdirSync(join(dir, 'bin'));
      copyFileSync(packageFile('bin', 'longbuild.js'), join(dir, 'bin', 'longbuild.js'));
      copyFileSync(packageFile('package.json'), join(dir, 'package.json'));
      const r = spawnSync(process.execPath, [join(dir, 'bin', 'longbuild.js'), 'status'], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^longbuild: the CLI is not built \(.*dist\/cli\/longbuild\.mjs is missing\): run `npm run build`/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the bundled entry chunk imports nothing statically, so a worker that loads a shared chunk never runs the CLI', () => {
    const dir = packageFile('dist', 'cli');
    expect(existsSync(join(dir, 'longbuild.mjs')), 'npm run build makes dist/cli').toBe(true);
    const entry = readFileSync(join(dir, 'longbuild.mjs'), 'utf8');
    expect(entry).not.toMatch(/^\s*import\s+[^(]/m);
    for (const f of readdirSync(dir)) {
      if (f === 'longbuild.mjs') continue;
      expect(readFileSync(join(dir, f), 'utf8'), f).not.toMatch(/from\s+["']\.\/longbuild\.mjs["']/);
    }
  });

  // Decision 0022: a reading command opens the log through its reading side alone.
  it('status, show and diff load no event schemas: no chunk they import statically holds zod (the run command\'s do)', () => {
    const dir = packageFile('dist', 'cli');
    const files = readdirSync(dir);
    const reached = (start: string): string[] => {
      const seen = new Set<string>();
      const walk = (f: string): void => {
        if (seen.has(f)) return;
        seen.add(f);
        for (const m of readFileSync(join(dir, f), 'utf8').matchAll(/^import\s[^;]*?from\s*"\.\/([^"]+)"|^import\s*"\.\/([^"]+)"/gm)) walk((m[1] ?? m[2])!);
      };
      walk(start);
      return [...seen];
    };
    // A command's chunk is its name and an 8-character content hash: `run-<hash>.mjs`, not `run-cli-<hash>.mjs`
    // (which `startsWith('run-')` also found, first whenever the hashes happened to sort that way).
    const chunkOf = (command: string): string => files.find((f) => new RegExp(`^${command}-[A-Za-z0-9_-]{8}\\.mjs$`).test(f))!;
    const holdsZod = (f: string): boolean => readFileSync(join(dir, f), 'utf8').includes('// node_modules/zod/');
    for (const command of ['status', 'show', 'diff']) {
      expect(chunkOf(command), `${command} chunk`).toBeDefined();
      expect(reached(chunkOf(command)).filter(holdsZod), command).toEqual([]);
    }
    expect(reached(chunkOf('run')).some(holdsZod), 'the walk finds zod where it is loaded').toBe(true);
  });
});
