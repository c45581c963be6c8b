import { parseArgs as nodeParseArgs } from 'node:util';
import { UsageError } from '../../events/errors.js';
import type { FlagSpec, FlagValue } from './types.js';

/** Flags every command accepts. */
export const GLOBAL_FLAGS: Readonly<Record<string, FlagSpec>> = {
  dir: { type: 'string' },
  repo: { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean' },
  version: { type: 'boolean' },
};

export interface ParsedArgs {
  readonly flags: Record<string, FlagValue>;
  readonly positionals: string[];
}

/**
 * Parse `--name value`, `--name=value` and boolean `--name` against the known specs with Node's
 * own `util.parseArgs` (its tokens: the values are checked here, against the specs' types); `-h`
 * is `--help`, `--` ends flags. Unknown flags (with the closest known one named) and missing or
 * malformed values are usage errors.
 */
export function parseArgs(argv: readonly string[], specs: Readonly<Record<string, FlagSpec>>): ParsedArgs {
  const options = Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, {
    type: spec.type === 'boolean' ? 'boolean' as const : 'string' as const,
    ...(spec.repeatable === true ? { multiple: true } : {}),
    ...(name === 'help' ? { short: 'h' } : {}),
  }]));
  const { tokens } = nodeParseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const flags: Record<string, FlagValue> = {};
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') positionals.push(t.value);
    if (t.kind !== 'option') continue;
    const name = t.name;
    const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
    if (spec === undefined) throw new UsageError(t.rawName.startsWith('--') ? `unknown flag '--${name}'${didYouMean(name, Object.keys(specs), '--')}` : `unknown flag '${t.rawName}'`);
    if (spec.type === 'boolean') {
      if (t.inlineValue === true) throw new UsageError(`flag --${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const raw = t.value;
    if (raw === undefined || (t.inlineValue !== true && raw.startsWith('--'))) throw new UsageError(`flag --${name} needs a value`);
    const value = spec.type === 'int' ? parseNonNegativeInt(name, raw) : raw;
    if (spec.repeatable) {
      const prev = flags[name];
      flags[name] = [...(Array.isArray(prev) ? prev : []), String(value)];
    } else {
      if (flags[name] !== undefined) throw new UsageError(`flag --${name} given twice`);
      flags[name] = value;
    }
  }
  return { flags, positionals };
}

function parseNonNegativeInt(name: string, raw: string): number {
  if (!/^\d{1,15}$/.test(raw)) throw new UsageError(`flag --${name} needs a non-negative integer, got '${raw}'`);
  return Number(raw);
}

/** Edit distance with adjacent transpositions (optimal string alignment): `tial` is one edit from `tail`. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** ` (did you mean --json?)` for the closest known name within two edits (or one it starts), else ''. */
export function didYouMean(name: string, known: readonly string[], prefix = ''): string {
  let best: { name: string; d: number } | null = null;
  for (const k of known) {
    const d = k.startsWith(name) && name.length >= 3 ? 1 : distance(name, k);
    if (d <= Math.min(2, Math.max(1, Math.floor(k.length / 3))) && (best === null || d < best.d)) best = { name: k, d };
  }
  return best === null ? '' : ` (did you mean ${prefix}${best.name}?)`;
}
