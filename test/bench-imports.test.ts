// The benchmarks under bench/ are run on demand, not by the suite, so nothing else notices when
// a module they import from the build moves: every name they import from dist/ must exist there.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';

/** Every bench script of the project (bench/peers has its own package and imports none of dist). */
function benchFiles(): string[] {
  const out: string[] = [];
  for (const dir of ['bench', join('bench', 'lib')]) {
    for (const name of readdirSync(join(ROOT, dir))) if (name.endsWith('.mjs')) out.push(join(ROOT, dir, name));
  }
  return out;
}

/** `import { a, b as c } from './x.js'` statements (static, possibly over several lines) whose module is inside dist/. */
function distImports(file: string): { module: string; names: string[] }[] {
  const text = readFileSync(file, 'utf8');
  const out: { module: string; names: string[] }[] = [];
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
    const module = resolve(dirname(file), m[2]!);
    if (!module.startsWith(join(ROOT, 'dist') + '/')) continue;
    out.push({ module, names: m[1]!.split(',').map((s) => s.trim().split(/\s+as\s+/)[0]!).filter(Boolean) });
  }
  return out;
}

describe('bench scripts', () => {
  it('every name a bench script imports from the build exists there (the benches cannot rot unseen)', async () => {
    const missing: string[] = [];
    let checked = 0;
    for (const file of benchFiles()) {
      for (const { module, names } of distImports(file)) {
        let exported: Record<string, unknown>;
        try {
          exported = await import(pathToFileURL(module).href) as Record<string, unknown>;
        } catch (err) {
          missing.push(`${file.slice(ROOT.length + 1)}: ${module.slice(ROOT.length + 1)} does not load (${(err as Error).message.split('\n')[0]})`);
          continue;
        }
        for (const n of names) {
          checked += 1;
          if (!(n in exported)) missing.push(`${file.slice(ROOT.length + 1)}: ${module.slice(ROOT.length + 1)} exports no ${n}`);
        }
      }
    }
    expect(missing).toEqual([]);
    expect(checked).toBeGreaterThan(50);
  });
});
