/**
 * A real npm registry in a child process (npm-registry.mjs) serving packages the test writes, so
 * `npm ci` runs for real, through the sandbox's network, without the internet. A child process,
 * because the CLI under test is run synchronously: a server in the test's own event loop would
 * never answer.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './cli.js';

export interface LocalRegistry {
  readonly url: string;
  /** Every path requested so far, in order. */
  requests(): string[];
  stop(): void;
}

export interface LocalPackage {
  readonly name: string;
  readonly version: string;
  /** Files of the package (package.json is written from `manifest`). */
  readonly files: Record<string, string>;
  readonly manifest: Record<string, unknown>;
}

export function startRegistry(packages: readonly LocalPackage[]): LocalRegistry {
  const dir = tempDir('longbuild-registry-');
  for (const p of packages) {
    const src = tempDir('longbuild-pkg-');
    mkdirSync(join(src, 'package'));
    const manifest = { name: p.name, version: p.version, ...p.manifest };
    writeFileSync(join(src, 'package', 'package.json'), JSON.stringify(manifest, null, 2));
    for (const [f, text] of Object.entries(p.files)) writeFileSync(join(src, 'package', f), text);
    execFileSync('tar', ['-czf', join(dir, `${p.name}-${p.version}.tgz`), '-C', src, 'package']);
    writeFileSync(join(dir, `${p.name}-${p.version}.json`), JSON.stringify(manifest));
  }
  const child = spawn(process.execPath, [join(import.meta.dirname, 'npm-registry.mjs'), dir], { stdio: 'ignore', detached: true });
  child.unref();
  const portFile = join(dir, 'port');
  const deadline = Date.now() + 30_000;
  while (!existsSync(portFile) || readFileSync(portFile, 'utf8') === '') {
    if (Date.now() > deadline) throw new Error('the local npm registry did not start within 30 s');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  const port = Number(readFileSync(portFile, 'utf8'));
  return {
    url: `http://127.0.0.1:${port}/`,
    requests: () => (existsSync(join(dir, 'requests.log')) ? readFileSync(join(dir, 'requests.log'), 'utf8').trim().split('\n').filter((l) => l !== '') : []),
    stop: () => {
      try {
        process.kill(child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    },
  };
}
