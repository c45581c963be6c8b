import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSafeEffectId } from '../src/adapters/git/worktrees.js';
import { validateProposal } from '../src/commands/horizon.js';
import { attemptIdOf } from '../src/commands/call-ids.js';
import { isSafeId, SafeIdSchema } from '../src/events/ids.js';
import { initialBuildState } from '../src/projections/build-state.js';
import { safeIdArb, unsafeIdArb } from './support/arbitraries.js';
import { milestone, node } from './support/given.js';

const UNSAFE = ['../x', 'a/b', 'A', 'Api', '', '..', '.', 'a..b', 'x.', '-x', 'x'.repeat(65), 'a\u0000b', 'a\nb', 'a\u001bb', 'a b', '/abs', 'a\\b', 'ﬁ'];
const SAFE = ['a', '0', 'catalog-api', 'caregiver-home', 'v1.2_rc-3', 'x'.repeat(64), '9lives'];

describe('R-8 safe ids', () => {
  it.each(UNSAFE.map((id) => [JSON.stringify(id), id]))('R-8 %s is refused by isSafeId and SafeIdSchema', (_label, id) => {
    expect(isSafeId(id)).toBe(false);
    expect(SafeIdSchema.safeParse(id).success).toBe(false);
  });

  it('R-8 ordinary ids are accepted', () => {
    for (const id of SAFE) {
      expect(isSafeId(id), id).toBe(true);
      expect(SafeIdSchema.safeParse(id).success, id).toBe(true);
    }
    expect(isSafeId(42)).toBe(false);
    expect(isSafeId(null)).toBe(false);
  });

  it('R-8 property: the schema and isSafeId agree on every string', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 70 }), safeIdArb, unsafeIdArb, fc.stringMatching(/^[a-z0-9._-]{0,66}$/)), (id) => {
        expect(SafeIdSchema.safeParse(id).success).toBe(isSafeId(id));
      }),
      { numRuns: 500 },
    );
  });

  it('R-8 property: every attempt id built from a safe node id is a safe effect id', () => {
    fc.assert(
      fc.property(fc.oneof(safeIdArb, fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,63}$/).filter(isSafeId)), fc.integer({ min: 1, max: 999 }), (id, n) => {
        expect(isSafeEffectId(attemptIdOf(id, n))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('R-8 real git accepts the attempt branch of safe ids (and refuses what isSafeId refuses)', () => {
    const refOk = (ref: string): boolean => {
      try {
        execFileSync('git', ['check-ref-format', ref], { stdio: 'ignore' });
        return true;
      } catch {
        return false;
      }
    };
    const safe = fc.sample(fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/).filter(isSafeId), { numRuns: 40, seed: 8 });
    for (const id of [...SAFE, ...safe, 'x.lock', 'a.b']) expect(refOk(`refs/heads/longbuild/attempts/${attemptIdOf(id, 1)}`), id).toBe(true);
    // What the rule adds beyond the regex is exactly what git would refuse in an attempt ref.
    for (const id of ['a..b', 'x.']) expect(refOk(`refs/heads/longbuild/attempts/${attemptIdOf(id, 1)}`), id).toBe(false);
  });

  it.each(UNSAFE.filter((id) => id !== '').map((id) => [JSON.stringify(id), id]))(
    'R-8 validateProposal refuses %s as a node, milestone, coarse or dependency id',
    (_label, id) => {
      const cases = [
        { where: 'detailed.0.nodes.0.id', p: { detailed: [milestone('m1', [node(id)])], coarse: [] } },
        { where: 'detailed.0.id', p: { detailed: [milestone(id, [node('a')])], coarse: [] } },
        { where: 'coarse.0.id', p: { detailed: [milestone('m1', [node('a')])], coarse: [{ id, title: 'later' }] } },
        { where: 'detailed.0.nodes.1.deps.0', p: { detailed: [milestone('m1', [node('a'), node('b', [id])])], coarse: [] } },
      ];
      for (const { where, p } of cases) {
        const v = validateProposal(p, initialBuildState);
        expect(v.ok, where).toBe(false);
        if (!v.ok) {
          expect(v.rule).toBe('R-28');
          expect(v.reason).toContain(where);
          expect(v.reason).toContain('unsafe id');
        }
      }
    },
  );

  it('R-8 an empty id is refused wherever it appears', () => {
    expect(validateProposal({ detailed: [milestone('m1', [node('')])], coarse: [] }, initialBuildState).ok).toBe(false);
    expect(validateProposal({ detailed: [milestone('', [])], coarse: [] }, initialBuildState).ok).toBe(false);
  });

  it('R-8 property: a proposal carrying any unsafe id is refused', () => {
    fc.assert(
      fc.property(unsafeIdArb, fc.nat(3), (id, where) => {
        const shapes = [
          { detailed: [milestone('m1', [node(id)])], coarse: [] },
          { detailed: [milestone(id)], coarse: [] },
          { detailed: [milestone('m1')], coarse: [{ id, title: 't' }] },
          { detailed: [milestone('m1', [node('a', [id])])], coarse: [] },
        ];
        expect(validateProposal(shapes[where], initialBuildState).ok).toBe(false);
      }),
      { numRuns: 200 },
    );
  });
});
