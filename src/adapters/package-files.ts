import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Files of the longbuild package found from its root, wherever the running code sits: the
 * compiled modules (dist/adapters/…), the bundled CLI (dist/cli.cjs) or the sources under the
 * test runner (src/adapters/…). A path relative to one module's own location breaks once that
 * module is bundled at another depth; the root does not move.
 */
const HERE = fileURLToPath(import.meta.url);

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin', 'longbuild.js'))) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the longbuild package (package.json and bin/longbuild.js) above ${from}: reinstall it`);
  }
}

/** The package's root directory (it holds package.json, bin/, prompts/, ui/). */
export const PACKAGE_ROOT = findRoot(dirname(HERE));

/** A file at the package's root: `packageFile('prompts', 'worker.md')`. */
export function packageFile(...parts: string[]): string {
  return join(PACKAGE_ROOT, ...parts);
}

/**
 * A plain-JavaScript helper of the module tree that is running (src under the test runner, else
 * dist), for threads and child processes that load it by path: `codeFile('adapters', 'process', 'spawner.child.js')`.
 */
export function codeFile(...parts: string[]): string {
  return join(PACKAGE_ROOT, HERE.endsWith('.ts') ? 'src' : 'dist', ...parts);
}

/** The installed package's version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version: string }).version;
}
