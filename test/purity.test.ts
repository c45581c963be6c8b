/**
 * Issue 15: the pure core stays pure. Every file of `src/events`, `src/commands` and the folds of
 * `src/projections` — and everything they import, transitively — uses no I/O module (fs,
 * child_process, net, SQLite, PostgreSQL, anything under src/adapters), no clock and no
 * randomness. The SQLite read-model writer of src/projections (engine and the runtime of one projection's
 * fold, tables, the snapshot store and its read-only opening, the event index table, the
 * storage guard and its error naming) is the one place there allowed to touch files; no pure file may import it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';

const SRC = join(ROOT, 'src');
/** src/projections files that write the read model to SQLite (ARCHITECTURE: "SQLite read-model writer"). */
const WRITERS = new Set(['projections/engine.ts', 'projections/projection-runtime.ts', 'projections/tables.ts', 'projections/snapshot-store.ts', 'projections/stored-snapshots.ts', 'projections/event-index-table.ts', 'projections/storage-guard.ts', 'projections/storage-errors.ts']);
// picomatch (glob matching) and saxes (an XML parser) are pure functions of their input too.
const ALLOWED_MODULES = new Set(['node:crypto', 'zod', 'immer', 'picomatch/posix.js', 'saxes']);
/** Randomness and clocks, whatever module they come from. */
const IMPURE_CALLS = /\bDate\.now\(|new Date\(\)|Math\.random\(|performance\.now\(|\brandomBytes\(|\brandomUUID\(|\bgenerateKeyPairSync\(|process\.(env|hrtime|argv|cwd)\b/;

const pureRoots = (): string[] => ['events', 'commands', 'projections'].flatMap((d) =>
  readdirSync(join(SRC, d)).filter((f) => f.endsWith('.ts')).map((f) => `${d}/${f}`)).filter((f) => !WRITERS.has(f));

function importsOf(file: string): string[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!);
}

/** Code without comments (a comment may name an adapter file). */
const code = (file: string): string => readFileSync(join(SRC, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:])\/\/.*$/gm, '$1');

describe('the pure core (issue 15)', () => {
  it('imports nothing that does I/O, directly or through what it imports, and reads no clock and no randomness', () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    const visit = (file: string, via: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      if (WRITERS.has(file) || file.startsWith('adapters/')) {
        problems.push(`${via} imports ${file} (I/O)`);
        return;
      }
      const impure = IMPURE_CALLS.exec(code(file));
      if (impure) problems.push(`${file} calls ${impure[0]}`);
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.')) {
          visit(relative(SRC, resolve(dirname(join(SRC, file)), spec)).replace(/\.js$/, '.ts'), file);
        } else if (!ALLOWED_MODULES.has(spec)) {
          // Type-only imports (`import type Database`) carry no code: allowed.
          const typeOnly = new RegExp(`^\\s*import\\s+type\\s[^'"]*from\\s+'${spec.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}'`, 'm').test(readFileSync(join(SRC, file), 'utf8'));
          if (!typeOnly) problems.push(`${file} imports ${spec}`);
        }
      }
    };
    for (const f of pureRoots()) visit(f, f);
    expect(problems).toEqual([]);
    expect(seen.size).toBeGreaterThan(30); // the walk did cover the core
  });

  it('the check catches an impure import and a clock read (it can fail)', () => {
    const sample = "import { readFileSync } from 'node:fs';\nconst t = Date.now();\n";
    expect(IMPURE_CALLS.test(sample)).toBe(true);
    expect([...sample.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1])).toEqual(['node:fs']);
    expect(ALLOWED_MODULES.has('node:fs')).toBe(false);
  });
});
