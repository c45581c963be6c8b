/**
 * Issue 3's resume property: random DAGs split into milestones, a crash (real
 * SIGKILL) at a random interruption point of the clean run's enumeration, resume: the sequence of
 * (graph revision → ready list bytes), the accepted nodes, the integration head's tree and the
 * checkpoints equal those of an uninterrupted run, and no planner or worker call whose result was
 * recorded is made twice. The machinery is `longbuild fuzz`'s runner (src/adapters/fuzz).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fuzz } from '../src/adapters/fuzz/runner.js';
import { dagArb } from './support/arbitraries.js';
import { blueprintOf } from './support/random-blueprint.js';
import { tempDir } from './support/cli.js';

const caseArb = dagArb({ minNodes: 2, maxNodes: 7, maxMilestones: 3, idPrefix: 'n' }).chain((dag) => fc.record({
  dag: fc.constant(dag),
  writable: fc.uniqueArray(fc.integer({ min: 0, max: dag.nodes.length - 1 }), { minLength: 1, maxLength: 2 }),
  detailedWindow: fc.constantFrom<1 | 2>(1, 2),
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
}));

describe('resume after a crash at a random interruption point (issue 3 property)', () => {
  it('R-19 random DAGs in milestones: a SIGKILL anywhere, then resume, gives the clean run\'s ready sequence, accepted nodes, tree, checkpoints, and no repeated recorded call', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ dag, writable, detailedWindow, seed }) => {
        const dir = tempDir('longbuild-prop-');
        const path = join(dir, 'blueprint.json');
        writeFileSync(path, JSON.stringify(blueprintOf(dag, writable, detailedWindow), null, 2));
        const report = await fuzz({ driver: { blueprint: path }, points: 1, seed, jobs: 1, env: process.env });
        expect(report.points).toBe(1);
        expect(report.failed, JSON.stringify(report.failed, null, 2)).toEqual([]);
        expect(report.duplicateCalls).toBe(0);
        expect(report.clean.outcome).toBe('completed');
      }),
      { numRuns: 6 },
    );
  }, 300_000);
});
