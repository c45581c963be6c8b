// Decision 0033: the CLI starts from V8's code cache, kept beside the bundle (or where
// LONGBUILD_COMPILE_CACHE says). Real processes of the built CLI, each with a cache directory of
// its own; "used" is observed as "not written again" (a cache V8 refused, or one made for another
// bundle, is replaced at exit), and every run's output is checked against a run without a cache.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRequire } from 'node:module';
// The loader is CommonJS (src/adapters/cli/compile-cache.cts), which the test runner does not
// transform: its built copy is used, as bin/longbuild.js uses it.
const compileCache = createRequire(import.meta.url)('../dist/adapters/cli/compile-cache.cjs') as typeof import('../src/adapters/cli/compile-cache.cjs');
import { BIN, ROOT, runCli, tempDir } from './support/cli.js';

const { cacheKey, readCache } = compileCache;
const root = tempDir('longbuild-compile-cache-');
afterAll(() => rmSync(root, { recursive: true, force: true }));
const BUNDLE = join(ROOT, 'dist', 'cli.cjs');
const LOADER = join(ROOT, 'dist', 'adapters', 'cli', 'compile-cache.cjs');
let dirs = 0;
const cacheDir = (): string => {
  const dir = join(root, `cache-${++dirs}`);
  mkdirSync(dir);
  return dir;
};
const cli = (args: string[], dir: string) => runCli(args, { cwd: root, env: { LONGBUILD_COMPILE_CACHE: dir } });
/** What identifies one write of the file: a rename puts a new inode in its place. */
const written = (file: string): string => `${statSync(file).ino}:${statSync(file).mtimeMs}`;
const header = (file: string): { key: string; command: string | null } => JSON.parse(readFileSync(file).subarray(0, readFileSync(file).indexOf(10)).toString('utf8')) as { key: string; command: string | null };
const reference = (args: string[]) => runCli(args, { cwd: root, env: { LONGBUILD_COMPILE_CACHE: 'off' } });

describe('the CLI starts from a code cache (decision 0033)', () => {
  it('each command keeps its own cache: the first process of a command writes it, the next ones use it and write nothing', () => {
    const dir = cacheDir();
    const none = join(dir, 'cli.cjs.cache');
    const own = join(dir, 'cli.cjs.config-schema.cache');
    const version = cli(['--version'], dir);
    expect(version.code, version.stderr).toBe(0);
    expect(version.stdout).toBe(reference(['--version']).stdout);
    expect(header(none)).toEqual({ format: 'longbuild-v8-code-cache 1', key: cacheKey(readFileSync(BUNDLE, 'utf8')), command: null });
    const versionWritten = written(none);
    const schema = cli(['config-schema'], dir);
    expect(schema.code, schema.stderr).toBe(0);
    expect(schema.stdout).toBe(reference(['config-schema']).stdout);
    expect(header(own).command).toBe('config-schema');
    const schemaWritten = written(own);
    // The command after a flag's value, and the value before it: the first word with a cache of its own.
    for (const args of [['config-schema'], ['--version'], ['--repo', root, 'config-schema'], ['--dir', 'config-schema', 'config-schema']]) {
      const again = cli(args, dir);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe(reference(args).stdout);
      expect(again.stderr).toBe('');
    }
    expect(written(own), 'a process of config-schema wrote its cache again: V8 refused it, or its key did not match').toBe(schemaWritten);
    expect(written(none), '--version wrote its cache again').toBe(versionWritten);
    expect(readdirSync(dir).sort()).toEqual(['cli.cjs.cache', 'cli.cjs.config-schema.cache']);
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
    const bytes = readFileSync(join(good, 'cli.cjs.config-schema.cache'));
    const newline = bytes.indexOf(10);
    const h = header(join(good, 'cli.cjs.config-schema.cache'));
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
      const file = join(dir, 'cli.cjs.config-schema.cache');
      writeFileSync(file, content);
      const r = cli(['config-schema'], dir);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stdout, name).toBe(expected);
      expect(r.stderr, name).toBe('');
      expect(readCache(file, h.key), `${name}: replaced by a good cache`).not.toBeNull();
    }
  });

  it('processes started at once with no cache all run, and leave one whole cache that the next process uses', async () => {
    const dir = cacheDir();
    const file = join(dir, 'cli.cjs.config-schema.cache');
    const runs = await Promise.all(Array.from({ length: 4 }, () => new Promise<{ code: number | null; out: string }>((done) => {
      const child = spawn(process.execPath, [BIN, 'config-schema'], { cwd: root, env: { ...process.env, LONGBUILD_COMPILE_CACHE: dir } });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
      child.on('close', (code) => done({ code, out }));
    })));
    const expected = reference(['config-schema']).stdout;
    for (const r of runs) expect(r).toEqual({ code: 0, out: expected });
    expect(readdirSync(dir)).toEqual(['cli.cjs.config-schema.cache']);
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
    const start = () => spawnSync(process.execPath, ['-e', `require(${JSON.stringify(LOADER)}).startCli(${JSON.stringify(bundle)}, ['say'], process.env);`], { encoding: 'utf8', env: { ...process.env, LONGBUILD_COMPILE_CACHE: dir } });
    writeFileSync(bundle, source('first'));
    expect(start().stdout).toBe('first');
    expect(header(join(dir, 'cli.cjs.say.cache')).command).toBe('say');
    writeFileSync(bundle, source('later'));
    expect(source('later').length).toBe(source('first').length);
    const r = start();
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('later');
    expect(readCache(join(dir, 'cli.cjs.say.cache'), cacheKey(source('later')))).not.toBeNull();
  });

  // V8 runs the bytecode a cache holds for any source of the right length: whoever can write where
  // the loader reads a cache runs code as longbuild. It reads only beside the bundle (as trusted as
  // the code) or where LONGBUILD_COMPILE_CACHE says, never where a build or an agent writes.
  it('attack: bytecode forged under the bundle\'s key and planted in the working directory or the build directory is never run; beside the bundle it would be', () => {
    const dir = cacheDir();
    const source = (word: string) => `exports.commandOf = () => 'say';\nexports.runCli = () => { process.stdout.write(${JSON.stringify(word)}); };\n`;
    const start = (bundle: string, cwd: string, env: Record<string, string> = {}) => {
      const e: NodeJS.ProcessEnv = { ...process.env, ...env };
      if (!('LONGBUILD_COMPILE_CACHE' in env)) delete e.LONGBUILD_COMPILE_CACHE;
      return spawnSync(process.execPath, ['-e', `require(${JSON.stringify(LOADER)}).startCli(${JSON.stringify(bundle)}, ['say'], process.env);`], { cwd, encoding: 'utf8', env: e });
    };
    // The forgery: the cache of a bundle of the same length that prints "owned", its key rewritten to the real bundle's.
    const forge = join(dir, 'forge');
    mkdirSync(forge);
    writeFileSync(join(forge, 'bundle.cjs'), source('owned'));
    expect(start(join(forge, 'bundle.cjs'), forge, { LONGBUILD_COMPILE_CACHE: forge }).stdout).toBe('owned');
    const made = readFileSync(join(forge, 'cli.cjs.say.cache'));
    const real = join(dir, 'real');
    mkdirSync(real);
    writeFileSync(join(real, 'bundle.cjs'), source('first'));
    const forged = Buffer.concat([Buffer.from(`${JSON.stringify({ format: 'longbuild-v8-code-cache 1', key: cacheKey(source('first')), command: 'say' })}\n`), made.subarray(made.indexOf(10) + 1)]);
    const work = join(dir, 'work');
    mkdirSync(join(work, '.longbuild'), { recursive: true });
    for (const planted of [join(work, 'cli.cjs.say.cache'), join(work, '.longbuild', 'cli.cjs.say.cache'), join(work, 'cli.cjs.cache')]) writeFileSync(planted, forged);
    const r = start(join(real, 'bundle.cjs'), work);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('first');
    // The same bytes beside the bundle are run: the directory is the boundary, so the forgery is a real one.
    writeFileSync(join(real, 'cli.cjs.say.cache'), forged);
    expect(start(join(real, 'bundle.cjs'), work).stdout).toBe('owned');
  });

  it('a process that ran long makes its cache again, and keeps it when it compiled a tenth more; a short one never does', () => {
    const dir = cacheDir();
    const bundle = join(dir, 'bundle.cjs');
    // `more` calls 300 functions the first process never called (V8 compiles a function when first
    // called); `long` runs past the 2 s after which a process refreshes its cache.
    writeFileSync(bundle, `${Array.from({ length: 300 }, (_, i) => `function f${i}(x) { const y = x * ${i} + ${i % 7}; return y > 1000 ? y % 97 : y + ${i}; }`).join('\n')}
exports.commandOf = () => 'work';
exports.runCli = (argv) => {
  if (argv.includes('more')) { let sum = 0; ${Array.from({ length: 300 }, (_, i) => `sum += f${i}(${i});`).join(' ')} process.stdout.write(String(sum)); }
  if (argv.includes('long')) { const until = performance.now() + 2200; const wait = () => (performance.now() < until ? setTimeout(wait, 50) : undefined); wait(); }
};
`);
    const start = (...args: string[]) => spawnSync(process.execPath, ['-e', `require(${JSON.stringify(LOADER)}).startCli(${JSON.stringify(bundle)}, ${JSON.stringify(['work', ...args])}, process.env);`], { encoding: 'utf8', env: { ...process.env, LONGBUILD_COMPILE_CACHE: dir } });
    const file = join(dir, 'cli.cjs.work.cache');
    expect(start().status).toBe(0);
    const first = written(file);
    const size = statSync(file).size;
    expect(start('more').stdout).not.toBe('');
    expect(written(file), 'a short process wrote its cache again').toBe(first);
    expect(start('long').status).toBe(0);
    expect(written(file), 'a long process that compiled nothing new wrote its cache again').toBe(first);
    expect(start('long', 'more').status).toBe(0);
    expect(written(file), 'a long process that compiled more kept the cache it read').not.toBe(first);
    expect(statSync(file).size).toBeGreaterThan(size * 1.1);
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
