/**
 * The CLI's flags (issue 49): Node's util.parseArgs reads them, the specs' types check them. Each
 * case below is what a person types and what the command receives, or the one line it is refused with.
 */
import { describe, expect, it } from 'vitest';
import { GLOBAL_FLAGS, parseArgs } from '../src/adapters/cli/args.js';
import type { FlagSpec } from '../src/adapters/cli/types.js';

const SPECS: Record<string, FlagSpec> = { ...GLOBAL_FLAGS, 'max-steps': { type: 'int' }, progress: { type: 'string' }, witness: { type: 'string', repeatable: true }, standby: { type: 'boolean' } };
const parse = (...argv: string[]) => parseArgs(argv, SPECS);
const refusal = (...argv: string[]) => {
  try {
    parse(...argv);
  } catch (err) {
    return (err as Error).message;
  }
  return 'accepted';
};

describe('the CLI\'s flags (issue 49)', () => {
  it('reads values, booleans, ints, repeated flags, -h, and positionals around them; -- ends flags', () => {
    expect(parse('--max-steps', '5', 'a', '--progress=lines', '--json', 'b')).toEqual({ flags: { 'max-steps': 5, progress: 'lines', json: true }, positionals: ['a', 'b'] });
    expect(parse('--witness', 'w1', '--witness=w2')).toEqual({ flags: { witness: ['w1', 'w2'] }, positionals: [] });
    expect(parse('-h')).toEqual({ flags: { help: true }, positionals: [] });
    expect(parse('x', '--', '--json', '-h')).toEqual({ flags: {}, positionals: ['x', '--json', '-h'] });
    expect(parse('-')).toEqual({ flags: {}, positionals: ['-'] });
    expect(parse('--progress', '-5')).toEqual({ flags: { progress: '-5' }, positionals: [] });
  });

  it('refuses in one line: an unknown flag (naming the closest), a missing or malformed value, a value on a boolean, a flag given twice', () => {
    expect(refusal('--jsn')).toBe("unknown flag '--jsn' (did you mean --json?)");
    expect(refusal('--frobnicate')).toBe("unknown flag '--frobnicate'");
    expect(refusal('-x')).toBe("unknown flag '-x'");
    expect(refusal('--max-steps')).toBe('flag --max-steps needs a value');
    expect(refusal('--progress', '--json')).toBe('flag --progress needs a value');
    expect(refusal('--max-steps', 'ten')).toBe("flag --max-steps needs a non-negative integer, got 'ten'");
    expect(refusal('--max-steps=-1')).toBe("flag --max-steps needs a non-negative integer, got '-1'");
    expect(refusal('--json=yes')).toBe('flag --json takes no value');
    expect(refusal('--progress', 'a', '--progress', 'b')).toBe('flag --progress given twice');
    expect(refusal('--constructor')).toBe("unknown flag '--constructor'");
  });
});
