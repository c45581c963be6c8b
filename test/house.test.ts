/**
 * The house (issue 49): the command line is a door, not a room others walk through. Nothing
 * outside src/adapters/cli imports from it (static or dynamic import); the use cases in
 * src/adapters/app import no door (cli, ui, mcp); no file name appears twice in src; no file of
 * src is longer than the limit — except those listed, each to be split, which may only shrink.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';

const SRC = join(ROOT, 'src');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : /\.(ts|cts|mts)$/.test(f) ? [p] : [];
  });
}

/** Every module a file imports or loads, resolved to a path under src (relative specifiers only). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [
    ...[...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)].map((m) => m[1]!),
  ];
  return specs.filter((s) => s.startsWith('.')).map((s) => relative(SRC, resolve(dirname(file), s)));
}

const FILES = filesUnder(SRC);
const inRoom = (path: string, room: string) => path === room || path.startsWith(`${room}/`);

const LIMIT = 400;

describe('the house (issue 49)', () => {
  it('nothing outside src/adapters/cli imports from it', () => {
    const crossings = FILES.flatMap((file) => {
      const from = relative(SRC, file);
      if (inRoom(from, 'adapters/cli')) return [];
      return importsOf(file).filter((to) => inRoom(to, 'adapters/cli')).map((to) => `${from} -> ${to}`);
    });
    expect(crossings).toEqual([]);
  });

  it('the use cases (src/adapters/app) import no door: not the CLI, the viewer or the MCP server', () => {
    const doors = ['adapters/cli', 'adapters/ui', 'adapters/mcp'];
    const crossings = FILES.filter((f) => inRoom(relative(SRC, f), 'adapters/app')).flatMap((file) =>
      importsOf(file).filter((to) => doors.some((d) => inRoom(to, d))).map((to) => `${relative(SRC, file)} -> ${to}`));
    expect(crossings).toEqual([]);
  });

  it('no file name appears twice in src', () => {
    const byName = new Map<string, string[]>();
    for (const f of FILES) byName.set(basename(f), [...(byName.get(basename(f)) ?? []), relative(SRC, f)]);
    expect([...byName.values()].filter((paths) => paths.length > 1)).toEqual([]);
  });

  it('a command of the CLI parses flags and renders: at most 120 lines each, the work in a use case', () => {
    const dir = join(SRC, 'adapters', 'cli', 'commands');
    const long = readdirSync(dir).map((f) => ({ f, lines: readFileSync(join(dir, f), 'utf8').split('\n').length - 1 })).filter((x) => x.lines > 120).map((x) => `${x.f}: ${x.lines}`);
    expect(long).toEqual([]);
  });

  it('src names no tracker issue: the rule ids (docs/rules.md) and decision records (docs/decisions/) say why', () => {
    const tagged = filesUnder(SRC).concat(readdirSync(join(SRC, 'adapters', 'process')).filter((f) => f.endsWith('.js')).map((f) => join(SRC, 'adapters', 'process', f)))
      .flatMap((f) => readFileSync(f, 'utf8').split('\n').map((l, i) => [`${relative(SRC, f)}:${i + 1}`, l] as const).filter(([, l]) => /\b[Ii]ssues? \d+/.test(l)).map(([at]) => at));
    expect(tagged).toEqual([]);
  });

  it('no import names nothing (what a split left behind)', () => {
    const empty = FILES.filter((f) => /^import (type )?\{\s*\} from /m.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
    expect(empty).toEqual([]);
  });

  it(`no file is longer than ${LIMIT} lines`, () => {
    const over = FILES.map((f) => ({ file: relative(SRC, f), lines: readFileSync(f, 'utf8').split('\n').length - 1 })).filter((f) => f.lines > LIMIT);
    expect(over.map((f) => `${f.file}: ${f.lines} lines`)).toEqual([]);
  });
});
