/**
 * The README is a first page (issue 49): at most 250 lines, the quick start still the two
 * commands, every command of the CLI in its table, and every relative link in it and in the guide
 * pointing at a file that exists (so moving a page cannot leave a dead link).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/adapters/cli/registry.js';
import { ROOT } from './support/cli.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const GUIDE = join(ROOT, 'docs', 'guide');

/** Relative link targets of a Markdown text (anchors dropped). */
function links(text: string): string[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/.test(t)).map((t) => t.split('#')[0]!).filter((t) => t !== '');
}

describe('the README as a first page (issue 49)', () => {
  it('is at most 250 lines and its quick start is the two commands', () => {
    expect(README.split('\n').length).toBeLessThanOrEqual(250);
    expect(README).toContain('```sh\nnpm ci && npm run demo\nnpm test\n```');
  });

  it('names every command in its table', () => {
    const table = README.slice(README.indexOf('## Commands'), README.indexOf('## Where to read more'));
    for (const name of Object.keys(COMMANDS).filter((n) => n !== 'config-schema')) expect(table, name).toContain(`\`${name}\``);
  });

  it('every relative link of the README and the guide names a file that exists', () => {
    const pages = [join(ROOT, 'README.md'), join(ROOT, 'docs', 'architecture.md'), ...readdirSync(GUIDE).map((f) => join(GUIDE, f))];
    for (const page of pages) {
      for (const target of links(readFileSync(page, 'utf8'))) expect(existsSync(join(dirname(page), target)), `${page}: ${target}`).toBe(true);
    }
  });
});
