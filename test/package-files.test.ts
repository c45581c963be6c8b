import { describe, expect, it } from 'vitest';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { codeFile, PACKAGE_ROOT, packageFile } from '../src/adapters/package-files.js';
import { defaultPromptPath } from '../src/adapters/agents/prompts.js';
import { ASSETS } from '../src/adapters/ui/viewer.js';
import { LONGBUILD_BIN } from '../src/adapters/fuzz/child.js';

// Decision 0018: files are found from the package root, so the same code works from src/, from
// dist/adapters/ and from the bundle, dist/cli.cjs (a path relative to one module breaks once that
// module is bundled at another depth).
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
      cpSync(packageFile('bin'), join(dir, 'bin'), { recursive: true });
      copyFileSync(packageFile('package.json'), join(dir, 'package.json'));
      const refused = (): void => {
        const r = spawnSync(process.execPath, [join(dir, 'bin', 'longbuild.js'), 'status'], { encoding: 'utf8' });
        expect(r.status).toBe(1);
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(/^longbuild: the CLI is not built \(.*dist\/cli\.cjs is missing\): run `npm run build`/);
      };
      refused();
      // Built with tsc alone: the loader is there, the bundle is not.
      mkdirSync(join(dir, 'dist', 'adapters', 'cli'), { recursive: true });
      copyFileSync(join(PACKAGE_ROOT, 'dist', 'adapters', 'cli', 'compile-cache.cjs'), join(dir, 'dist', 'adapters', 'cli', 'compile-cache.cjs'));
      refused();
      // A bundle that is there but cannot be read (here a directory: Node.js's EISDIR names no path).
      mkdirSync(join(dir, 'dist', 'cli.cjs'));
      const r = spawnSync(process.execPath, [join(dir, 'bin', 'longbuild.js'), 'status'], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/^longbuild: cannot read the CLI bundle .*dist\/cli\.cjs \(EISDIR\): the install is damaged; reinstall longbuild, or run `npm run build` in the package$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('decision 0053: the bundle carries better-sqlite3\'s JavaScript and finds its addon in the package (build/Release, else where `bindings` looks); none says so in one line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longbuild-addon-'));
    try {
      // A package whose better-sqlite3 has no JavaScript at all (the bundle brings it) and its addon in build/Debug.
      cpSync(packageFile('bin'), join(dir, 'bin'), { recursive: true });
      cpSync(join(PACKAGE_ROOT, 'dist'), join(dir, 'dist'), { recursive: true, filter: (f) => !f.endsWith('.cache') });
      for (const f of ['package.json', 'schemas', 'prompts', 'ui', 'examples']) cpSync(packageFile(f), join(dir, f), { recursive: true });
      const sqlite = join(dir, 'node_modules', 'better-sqlite3');
      mkdirSync(join(sqlite, 'build', 'Debug'), { recursive: true });
      copyFileSync(join(PACKAGE_ROOT, 'node_modules', 'better-sqlite3', 'package.json'), join(sqlite, 'package.json'));
      for (const p of ['bindings', 'file-uri-to-path']) cpSync(join(PACKAGE_ROOT, 'node_modules', p), join(dir, 'node_modules', p), { recursive: true });
      const addon = join(sqlite, 'build', 'Debug', 'better_sqlite3.node');
      copyFileSync(join(PACKAGE_ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'), addon);
      const init = (repo: string) => spawnSync(process.execPath, [join(dir, 'bin', 'longbuild.js'), 'init', '--blueprint', join(dir, 'examples', 'blueprints', 'helios.json'), '--repo', join(dir, repo)], { encoding: 'utf8', env: { ...process.env, LONGBUILD_COMPILE_CACHE: 'off' } });
      const found = init('one');
      expect(found.status, found.stderr).toBe(0);
      expect(existsSync(join(dir, 'one', '.longbuild', 'events.db')), 'the log was made through the addon bindings found').toBe(true);
      rmSync(addon);
      const none = init('two');
      expect(none.status).toBe(1);
      expect(none.stderr.trim().split('\n')).toHaveLength(1);
      expect(none.stderr).toMatch(/^longbuild: better-sqlite3's native addon is not built \(no better_sqlite3\.node under .*node_modules\/better-sqlite3\): the install is damaged; run `npm rebuild better-sqlite3` where longbuild is installed$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
