// Decision 0033: the CLI starts from V8's code cache, kept beside the bundle (or where
// LONGBUILD_COMPILE_CACHE says). Real processes of the built CLI, each with a cache directory of
// its own; "used" is observed as "not written again" (a cache V8 refused, or one made for another
// bundle, is replaced at exit), and every run's output is checked against a run without a cache.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheKey, readCache } from '../src/adapters/cli/compile-cache.js';
import { BIN, ROOT, runCli, tempDir } from './support/cli.js';

const root = tempDir('longbuild-compile-cache-');
afterAll(() => rmSync(root, { recursive: true, force: true }));
const BUNDLE = join(ROOT, 'dist', 'cli.cjs');
const LOADER = pathToFileURL(join(ROOT, 'dist', 'adapters', 'cli', 'compile-cache.js')).href;
let dirs = 0;
const cacheDir = (): string => {
  const dir = join(root, `cache-${++dirs}`);
  mkdirSync(dir);
  return dir;
};
const cli = (args: string[], dir: string) => runCli(args, { cwd: root, env: { LONGBUILD_COMPILE_CACHE: dir } });
/** What identifies one write of the file: a rename puts a new inode in its place. */
const written = (file: string): string => `${statSync(file).ino}:${statSync(file).mtimeMs}`;
const header = (file: string): { key: string; labels: string[] } => JSON.parse(readFileSync(file).subarray(0, readFileSync(file).indexOf(10)).toString('utf8')) as { key: string; labels: string[] };
const reference = (args: string[]) => runCli(args, { cwd: root, env: { LONGBUILD_COMPILE_CACHE: 'off' } });

describe('the CLI starts from a code cache (decision 0033)', () => {
  it('the first process writes the cache, a process of another command adds it, and a process of a command it has seen uses it and writes nothing', () => {
    const dir = cacheDir();
    const file = join(dir, 'cli.cjs.cache');
    const version = cli(['--version'], dir);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toBe(reference(['--version']).stdout);
    expect(header(file)).toEqual({ format: 'longbuild-v8-code-cache 1', key: cacheKey(readFileSync(BUNDLE, 'utf8')), labels: [] });
    const first = written(file);
    const schema = cli(['config-schema'], dir);
    expect(schema.code, schema.stderr).toBe(0);
    expect(schema.stdout).toBe(reference(['config-schema']).stdout);
    expect(header(file).labels).toEqual(['config-schema']);
    const second = written(file);
    expect(second).not.toBe(first);
    for (const args of [['config-schema'], ['--version'], ['--repo', root, 'config-schema']]) {
      const again = cli(args, dir);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe(reference(args).stdout);
      expect(again.stderr).toBe('');
      expect(written(file), `${args.join(' ')} wrote the cache again: V8 refused it, or its key did not match`).toBe(second);
    }
    expect(readdirSync(dir)).toEqual(['cli.cjs.cache']);
  });

  it('LONGBUILD_COMPILE_CACHE=off neither reads nor writes a cache, and a directory that cannot be written leaves the command as it is, silently', () => {
    const dir = cacheDir();
    writeFileSync(join(dir, 'blocker'), 'a file where the cache directory would be');
    const blocked = cli(['config-schema'], join(dir, 'blocker'));
    expect(blocked.code).toBe(0);
    expect(blocked.stderr).toBe('');
    expect(blocked.stdout).toBe(reference(['config-schema']).stdout);
    const off = runCli(['config-schema'], { cwd: root, env: { LONGBUILD_COMPILE_CACHE: 'off' } });
    expect(off.code).toBe(0);
    expect(readdirSync(dir)).toEqual(['blocker']);
    expect(existsSync(join(root, 'off')), '"off" taken for a directory').toBe(false);
  });

  it('a damaged, foreign or stale cache is not used: the command runs as without one and the file is replaced by a good one', () => {
    const good = cacheDir();
    cli(['config-schema'], good);
    const bytes = readFileSync(join(good, 'cli.cjs.cache'));
    const newline = bytes.indexOf(10);
    const h = header(join(good, 'cli.cjs.cache'));
    const variants: Record<string, Buffer> = {
      'V8 data cut short': bytes.subarray(0, newline + 1 + Math.floor((bytes.length - newline) / 2)),
      'V8 data overwritten': Buffer.concat([bytes.subarray(0, newline + 1), Buffer.alloc(bytes.length - newline - 1, 0x5a)]),
      'no header': bytes.subarray(newline + 1),
      'header not JSON': Buffer.concat([Buffer.from('{not json\n'), bytes.subarray(newline + 1)]),
      'another bundle': Buffer.concat([Buffer.from(`${JSON.stringify({ ...h, key: h.key.replace(/^[0-9a-f]{8}/, '00000000') })}\n`), bytes.subarray(newline + 1)]),
      'another Node.js': Buffer.concat([Buffer.from(`${JSON.stringify({ ...h, key: h.key.replace(/ node v\S+/, ' node v0.0.1') })}\n`), bytes.subarray(newline + 1)]),
      empty: Buffer.alloc(0),
    };
    const expected = reference(['config-schema']).stdout;
    for (const [name, content] of Object.entries(variants)) {
      const dir = cacheDir();
      const file = join(dir, 'cli.cjs.cache');
      writeFileSync(file, content);
      const r = cli(['config-schema'], dir);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stdout, name).toBe(expected);
      expect(r.stderr, name).toBe('');
      expect(readCache(file, h.key)?.labels, `${name}: replaced by a good cache`).toEqual(['config-schema']);
    }
  });

  it('processes started at once with no cache all run, and leave one whole cache that the next process uses', async () => {
    const dir = cacheDir();
    const file = join(dir, 'cli.cjs.cache');
    const runs = await Promise.all(Array.from({ length: 4 }, () => new Promise<{ code: number | null; out: string }>((done) => {
      const child = spawn(process.execPath, [BIN, 'config-schema'], { cwd: root, env: { ...process.env, LONGBUILD_COMPILE_CACHE: dir } });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
      child.on('close', (code) => done({ code, out }));
    })));
    const expected = reference(['config-schema']).stdout;
    for (const r of runs) expect(r).toEqual({ code: 0, out: expected });
    expect(readdirSync(dir)).toEqual(['cli.cjs.cache']);
    const before = written(file);
    expect(cli(['config-schema'], dir).stdout).toBe(expected);
    expect(written(file)).toBe(before);
  });

  // V8 checks of a cache's source only its length: the key's SHA-256 is what keeps a rebuilt bundle
  // from running the bytecode of the one before it.
  it('a bundle rebuilt to the same length runs its own code, not the bytecode cached for the one before', () => {
    const dir = cacheDir();
    const bundle = join(dir, 'bundle.cjs');
    const source = (word: string) => `exports.commandOf = () => 'say';\nexports.runCli = () => { process.stdout.write(${JSON.stringify(word)}); };\n`;
    const start = () => spawnSync(process.execPath, ['--input-type=module', '-e', `import { startCli } from ${JSON.stringify(LOADER)}; startCli(${JSON.stringify(bundle)}, ['say'], process.env);`], { encoding: 'utf8', env: { ...process.env, LONGBUILD_COMPILE_CACHE: dir } });
    writeFileSync(bundle, source('first'));
    expect(start().stdout).toBe('first');
    expect(header(join(dir, 'cli.cjs.cache')).labels).toEqual(['say']);
    writeFileSync(bundle, source('later'));
    expect(source('later').length).toBe(source('first').length);
    const r = start();
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('later');
    expect(readCache(join(dir, 'cli.cjs.cache'), cacheKey(source('later')))?.labels).toEqual(['say']);
  });

  it('the published package holds no cache, even one left in dist/ when it is packed', () => {
    const file = join(ROOT, 'dist', 'cli.cjs.cache');
    const planted = !existsSync(file);
    if (planted) writeFileSync(file, 'left behind by a run');
    try {
      const r = spawnSync('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], { cwd: ROOT, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const paths = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
      expect(paths).toContain('dist/cli.cjs');
      expect(paths.filter((p) => p.includes('.cache'))).toEqual([]);
    } finally {
      if (planted) rmSync(file, { force: true });
    }
  });
});
