// Which modules of the CLI's bundle (dist/cli.cjs) a process evaluated, from the coverage V8 wrote
// for it (`NODE_V8_COVERAGE=DIR`). In the bundle each module of ours is evaluated by its own
// `init_…` function the first time it is imported (scripts/bundle.mjs): a module was evaluated iff
// that function ran. Decision 0022's promise (reading commands build no event schemas) is checked
// this way (decision 0033: one file, so which files a process loads says nothing).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
// The loader is CommonJS (src/adapters/cli/compile-cache.cts), which the test runner does not
// transform: its built copy is used, as bin/longbuild.js uses it.
const compileCache = createRequire(import.meta.url)('../../dist/adapters/cli/compile-cache.cjs') as typeof import('../../src/adapters/cli/compile-cache.cjs');

const { WRAPPER_HEAD } = compileCache;
import { packageFile } from '../../src/adapters/package-files.js';

export const BUNDLE = packageFile('dist', 'cli.cjs');

/** The environment for a CLI process whose coverage goes to `dir` (with no code cache: coverage changes V8's flags). */
export function coverageEnv(dir: string): Record<string, string> {
  return { NODE_V8_COVERAGE: dir, LONGBUILD_COMPILE_CACHE: 'off' };
}

interface Coverage { result: { url: string; functions: { ranges: { startOffset: number; count: number }[] }[] }[] }

/** The modules (`events/catalogue`, `adapters/cli/commands/status`, …) the bundle evaluated in the processes whose coverage is in `dir`. */
export function evaluatedModules(dir: string): Set<string> {
  const source = WRAPPER_HEAD + readFileSync(BUNDLE, 'utf8');
  const url = pathToFileURL(BUNDLE).href;
  const ran = new Set<number>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    for (const script of (JSON.parse(readFileSync(join(dir, f), 'utf8')) as Coverage).result) {
      if (script.url !== url) continue;
      for (const fn of script.functions) if (fn.ranges[0]!.count > 0) ran.add(fn.ranges[0]!.startOffset);
    }
  }
  const modules = new Set<string>();
  for (const { name, start } of initFunctions(source)) if (ran.has(start)) modules.add(name);
  return modules;
}

/** Each lazily evaluated module of `source`: its name and where its `init_…` arrow function starts. */
function initFunctions(source: string): { name: string; start: number }[] {
  const found: { name: string; start: number }[] = [];
  let module: string | undefined;
  for (const m of source.matchAll(/^\/\/ dist\/(.+)\.js$|^var init_\w+ = __esmMin\(\(\(\) => \{/gm)) {
    if (m[1] !== undefined) module = m[1];
    else if (module !== undefined) found.push({ name: module, start: m.index + m[0].indexOf('(() =>') + 1 }); // the arrow, inside the call's parenthesis
  }
  return found;
}

/** Every module the bundle evaluates lazily (the check's universe: a name missing here is a typo). */
export function lazyModules(): Set<string> {
  return new Set(initFunctions(readFileSync(BUNDLE, 'utf8')).map((f) => f.name));
}
