// Every deliberate bug in the mutant catalogue must still apply to the code it names (issue 15):
// an edit whose text no longer occurs exactly once would make `node test/mutants/run.mjs` fail
// on a stale catalogue instead of showing that a property catches its bug.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtFile, MUTANTS, ROOT } from './mutants/catalogue.mjs';

const occurrences = (text: string, find: string): number => text.split(find).length - 1;

describe('mutant catalogue (issue 15)', () => {
  it('every edit of every mutant occurs exactly once in its source file and in the built file, and names tests that exist', () => {
    const stale: string[] = [];
    const built = existsSync(join(ROOT, 'dist', 'adapters'));
    for (const m of MUTANTS) {
      for (const e of m.edits) {
        const src = occurrences(readFileSync(join(ROOT, e.file), 'utf8'), e.find);
        if (src !== 1) stale.push(`${m.name}: ${e.file} holds its edit ${src} times`);
        if (built) {
          const js = builtFile(e.file);
          const n = occurrences(readFileSync(join(ROOT, js), 'utf8'), e.js?.find ?? e.find);
          if (n !== 1) stale.push(`${m.name}: ${js} holds its edit ${n} times (give it a \`js\` variant)`);
        }
      }
      for (const t of m.caughtBy) if (!existsSync(join(ROOT, t))) stale.push(`${m.name}: no test file ${t}`);
    }
    expect(stale).toEqual([]);
    expect(MUTANTS.length).toBeGreaterThan(20);
  });
});
