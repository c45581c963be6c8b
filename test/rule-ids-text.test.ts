import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { withoutRuleIds } from '../src/adapters/cli/terminal-text.js';

describe('rule ids in what a person reads (only with --verbose)', () => {
  it.each([
    ['proposal refused (R-28): proposal is malformed', 'proposal refused: proposal is malformed'],
    ["R-55: planner command's answer is refused", "planner command's answer is refused"],
    ['no sandbox may see it (R-53); expose a narrower path', 'no sandbox may see it; expose a narrower path'],
    ['tests (R-52): a summary differs', 'tests: a summary differs'],
    ['the ref moved (R-33; the next `longbuild run` resets it)', 'the ref moved (the next `longbuild run` resets it)'],
    ['invalid command (R-26: a command is an argv array, no shell)', 'invalid command (a command is an argv array, no shell)'],
    ['its tests (R-50, R-51) fail', 'its tests fail'],
    ['node a: R-49: the candidate adds x', 'node a: the candidate adds x'],
  ])('%s', (recorded, shown) => {
    expect(withoutRuleIds(recorded)).toBe(shown);
  });

  it('(property) for all texts without a rule id, nothing changes; with ids inserted as the host writes them, none is left and the rest reads as before', () => {
    const word = fc.stringMatching(/^[a-z][a-z ,.;:'`-]{0,20}$/).filter((w) => !/R-\d/.test(w));
    fc.assert(fc.property(word, word, fc.integer({ min: 1, max: 99 }), (a, b, n) => {
      expect(withoutRuleIds(`${a} ${b}`)).toBe(`${a} ${b}`);
      // Oracle: the sentence as written without its citation.
      expect(withoutRuleIds(`${a} refused (R-${n}): ${b}`)).toBe(`${a} refused: ${b}`);
      expect(withoutRuleIds(`${a} (R-${n})`)).toBe(a);
      expect(withoutRuleIds(`R-${n}: ${b}`)).toBe(b);
    }), { verbose: true });
  });
});
