/**
 * test runners' reports read into passed, failed and skipped tests by id. Real runners'
 * output (node:test, mocha) is read against what the test files define; a property checks the TAP
 * reader against an independent model of the tree of tests it prints; a report that cannot be
 * read is never a pass.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countsOf, idsFile, idsOf, mergeReports, readReport, testId } from '../src/commands/test-report.js';
import { ROOT, tempDir } from './support/cli.js';

const MOCHA = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
const bytes = (s: string) => Buffer.from(s, 'utf8');

/** A project with one test file of node:test and mocha style each. */
function suite(): string {
  const dir = tempDir('lb-reports-');
  mkdirSync(join(dir, 'test'));
  // A project's tests, as runner input: its skipped test (test.it.skip) is what the report must name as skipped.
  writeFileSync(join(dir, 'test', 'a.test.js'), [
    "const test = require('node:test'); const assert = require('node:assert');",
    "test('adds', () => assert.strictEqual(1 + 1, 2));",
    "test.describe('parser', () => { test.it('parses numbers', () => {}); test.it.skip('parses dates', () => {}); test.it('rejects junk', () => { assert.ok(false); }); });",
    "test('later', { todo: true }, () => {});",
    '',
  ].join('\n'));
  // The same for mocha: it.skip('three') is the skipped test the reports must name.
  writeFileSync(join(dir, 'm.spec.js'), [
    "const assert = require('assert');",
    "describe('grp', () => { it('two', () => {}); it.skip('three', () => {}); it('four', () => { assert.ok(false); }); describe('inner', () => { it('five', () => {}); }); });",
    "it('top', () => { console.log('looks like a mark: ok 1 - fake'); });",
    '',
  ].join('\n'));
  return dir;
}

const out = (dir: string, argv: string[]) => spawnSync(argv[0]!, argv.slice(1), { cwd: dir, encoding: 'utf8' }).stdout;

describe('test reports (R-51)', () => {
  it('R-51 node --test TAP: leaves by suite path; skip and todo are not passes; a failing test fails', () => {
    const dir = suite();
    const r = readReport('tap', bytes(out(dir, [process.execPath, '--test', 'test/'])));
    expect(r).toMatchObject({ ok: true });
    if (!r.ok) return;
    expect(r.report).toEqual({
      format: 'tap',
      passed: ['adds', 'parser > parses numbers'],
      failed: ['parser > rejects junk'],
      skipped: ['later', 'parser > parses dates'],
    });
    expect(readReport('auto', bytes(out(dir, [process.execPath, '--test', 'test/'])))).toEqual(r);
  });

  it('R-51 mocha: its spec output and its JSON name the same tests; output of the tests themselves does not count', () => {
    const dir = suite();
    const spec = readReport('mocha-spec', bytes(out(dir, [process.execPath, MOCHA, 'm.spec.js'])));
    const json = readReport('mocha-json', bytes(out(dir, [process.execPath, MOCHA, '--reporter', 'json', 'm.spec.js'])));
    expect(spec).toMatchObject({ ok: true });
    expect(json).toMatchObject({ ok: true });
    if (!spec.ok || !json.ok) return;
    expect(spec.report.passed).toEqual(['grp > inner > five', 'grp > two', 'top']);
    expect(spec.report.failed).toEqual(['grp > four']);
    expect(spec.report.skipped).toEqual(['grp > three']);
    // mocha's JSON names a test by its full title (suites and name joined by spaces).
    expect(json.report.passed).toEqual(['grp inner five', 'grp two', 'top']);
    expect(json.report.failed).toEqual(['grp four']);
    expect(readReport('auto', bytes(out(dir, [process.execPath, MOCHA, 'm.spec.js'])))).toEqual(spec);
  });

  it('R-51 JUnit XML (mocha xunit, pytest shape): classname > name; failure and error fail, skipped skips', () => {
    const dir = suite();
    const xml = out(dir, [process.execPath, MOCHA, '--reporter', 'xunit', 'm.spec.js']).replace(/^.*?(?=<testsuite)/s, '');
    const r = readReport('junit', bytes(xml));
    expect(r).toMatchObject({ ok: true, report: { passed: ['grp > two', 'grp inner > five', 'top'], skipped: ['grp > three'] } });
    const pytest = '<?xml version="1.0"?><testsuites><testsuite name="pytest"><testcase classname="tests.test_a" name="test_ok"/>'
      + '<testcase classname="tests.test_a" name="test_bad"><failure message="x">boom</failure></testcase>'
      + '<testcase classname="tests.test_a" name="test_err"><error/></testcase><testcase classname="tests.test_a" name="test_skip"><skipped/></testcase></testsuite></testsuites>';
    expect(readReport('junit', bytes(pytest))).toEqual({
      ok: true, report: { format: 'junit', passed: ['tests.test_a > test_ok'], failed: ['tests.test_a > test_bad', 'tests.test_a > test_err'], skipped: ['tests.test_a > test_skip'] },
    });
  });

  it('R-51 a report that cannot be read says why, in one line, and is never a pass', () => {
    const cases: [Parameters<typeof readReport>[0], string, RegExp][] = [
      ['tap', 'TAP version 13\nok 1 - a\nok 2 - b\n1..3\n', /plan is 1\.\.3.*2 top-level/],
      ['tap', 'TAP version 13\nok 1 - a\n', /no plan/],
      ['tap', 'TAP version 13\n1..2\nok 1 - a\nBail out! database down\n', /bailed out/],
      ['tap', 'all good\n', /no TAP report/],
      ['mocha-json', 'nothing here', /no mocha JSON/],
      ['mocha-json', '{\n  "stats": {"passes": 1}, "passes": [], "failures": [], "pending": []}', /stats .* do not match/],
      ['mocha-spec', '  ✔ a\n  ✔ b\n\n  1 passing (2ms)\n', /marks 2 passing.*summary says 1/],
      ['junit', '<testsuite><testcase name="a">', /not well-formed/],
      ['junit', '<html/>', /root element is <html>/],
      ['auto', 'plain output, no report', /no test report/],
    ];
    for (const [format, text, why] of cases) {
      const r = readReport(format, bytes(text));
      expect(r.ok, `${format}: ${text}`).toBe(false);
      if (!r.ok) {
        expect(r.reason).toMatch(why);
        expect(r.reason).not.toContain('\n');
      }
    }
  });

  it('R-51 test ids are one line: control characters (terminal escapes) replaced, long ids cut with a digest, repeats numbered', () => {
    expect(testId(['a\u001b[2Jb', 'c\nd', '  e   f '])).toBe('a\ufffd[2Jb > c\ufffdd > e f');
    // A test file named by its path in a job's own workspace: the same id in every job.
    expect(testId(['/repo/.longbuild/workspaces/job-3/test/a.test.js'])).toBe('test/a.test.js');
    expect(testId(['/x/workspaces/job-12-holdout/test/a.test.js'])).toBe('test/a.test.js');
    const long = testId(['x'.repeat(400)]);
    expect(long.length).toBeLessThanOrEqual(300);
    expect(long).not.toBe(testId(['x'.repeat(399) + 'y']));
    const r = readReport('tap', bytes('TAP version 13\nok 1 - same\nok 2 - same\nnot ok 3 - same\n1..3\n'));
    expect(r).toMatchObject({ ok: true, report: { passed: ['same', 'same #2'], failed: ['same #3'] } });
  });

  it('R-51 ids files round-trip, and a job\'s reports merge: a test fails when any command fails it', () => {
    const ids = ['b', 'a', 'c > d'];
    expect(idsOf(idsFile(ids))).toEqual(['a', 'b', 'c > d']);
    expect(idsOf(idsFile([]))).toEqual([]);
    const merged = mergeReports([{ passed: ['a', 'b'], failed: [], skipped: ['c'] }, { passed: ['c'], failed: ['b'], skipped: [] }]);
    expect(merged).toEqual({ passed: ['a', 'c'], failed: ['b'], skipped: [] });
    expect(countsOf(merged)).toMatchObject({ passed: 2, failed: 1, skipped: 0 });
  });
});

/** A tree of tests as Node.js's TAP reporter prints it (the model the property compares with). */
type Node = { name: string; outcome: 'pass' | 'fail' | 'skip' | 'todo' } | { name: string; children: Node[] };

const name = fc.stringMatching(/^[a-z]{1,4}( [a-z]{1,4}){0,2}$/);
const tree: fc.Arbitrary<Node[]> = fc.letrec((tie) => ({
  leaf: fc.record({ name, outcome: fc.constantFrom('pass', 'fail', 'skip', 'todo') as fc.Arbitrary<'pass' | 'fail' | 'skip' | 'todo'> }),
  suite: fc.record({ name, children: fc.array(tie('node') as fc.Arbitrary<Node>, { minLength: 1, maxLength: 3 }) }),
  node: fc.oneof({ depthSize: 'small' }, tie('leaf'), tie('suite')),
  nodes: fc.array(tie('node') as fc.Arbitrary<Node>, { maxLength: 5 }),
})).nodes as fc.Arbitrary<Node[]>;

/** TAP as `node --test` prints it: subtests indented four spaces and before their parent, YAML blocks after each point. */
function printTap(nodes: readonly Node[], indent = ''): string {
  let s = '';
  nodes.forEach((n, i) => {
    s += `${indent}# Subtest: ${n.name}\n`;
    if ('children' in n) s += printTap(n.children, indent + '    ');
    const ok = 'children' in n ? !hasFailure(n) : n.outcome !== 'fail';
    const directive = 'outcome' in n && n.outcome === 'skip' ? ' # SKIP' : 'outcome' in n && n.outcome === 'todo' ? ' # TODO' : '';
    s += `${indent}${ok ? 'ok' : 'not ok'} ${i + 1} - ${n.name}${directive}\n${indent}  ---\n${indent}  duration_ms: 1\n${indent}  ...\n`;
  });
  return `${s}${indent}1..${nodes.length}\n`;
}
const hasFailure = (n: Node): boolean => ('children' in n ? n.children.some(hasFailure) : n.outcome === 'fail');

/** The model: every leaf under its path, duplicates numbered in the order printed. */
function expected(nodes: readonly Node[]): { passed: string[]; failed: string[]; skipped: string[] } {
  const out = { passed: [] as string[], failed: [] as string[], skipped: [] as string[] };
  const seen = new Map<string, number>();
  const walk = (ns: readonly Node[], path: string[]) => {
    for (const n of ns) {
      if ('children' in n) {
        walk(n.children, [...path, n.name]);
        continue;
      }
      const id = [...path, n.name].join(' > ');
      const k = (seen.get(id) ?? 0) + 1;
      seen.set(id, k);
      const named = k === 1 ? id : `${id} #${k}`;
      (n.outcome === 'pass' ? out.passed : n.outcome === 'fail' ? out.failed : out.skipped).push(named);
    }
  };
  walk(nodes, []);
  const sort = (xs: string[]) => xs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { passed: sort(out.passed), failed: sort(out.failed), skipped: sort(out.skipped) };
}

describe('the TAP reader against a model of the tests it prints (R-51)', () => {
  it('R-51 for all trees of tests, the TAP reader finds exactly the leaves, each under its path, with its outcome', () => {
    fc.assert(fc.property(tree, (nodes) => {
      const r = readReport('tap', bytes(`TAP version 13\n${printTap(nodes)}# tests ${nodes.length}\n# pass 0\n`));
      expect(r).toEqual({ ok: true, report: { format: 'tap', ...expected(nodes) } });
    }), { numRuns: 300 });
  });

  it('R-51 for all trees cut short (a test process killed mid-run), the TAP reader refuses the report or reads only what was printed whole', () => {
    fc.assert(fc.property(tree.filter((n) => n.length > 0), fc.nat(), (nodes, cut) => {
      const text = `TAP version 13\n${printTap(nodes)}`;
      const lines = text.split('\n');
      const at = 1 + (cut % (lines.length - 2)); // at least the version line, never the whole stream
      const r = readReport('tap', bytes(lines.slice(0, at).join('\n')));
      // Without the top-level plan it cannot be complete: never read as a report at all.
      expect(r.ok).toBe(false);
    }), { numRuns: 300 });
  });

  it('the real runner agrees with the model: node --test on a generated suite', () => {
    const dir = tempDir('lb-tap-real-');
    const nodes: Node[] = [
      { name: 'alpha', outcome: 'pass' },
      { name: 'group', children: [{ name: 'beta', outcome: 'fail' }, { name: 'inner', children: [{ name: 'gamma', outcome: 'pass' }, { name: 'delta', outcome: 'skip' }] }] },
      { name: 'alpha', outcome: 'todo' },
    ];
    const code = (ns: readonly Node[]): string => ns.map((n) => ('children' in n
      ? `t.describe(${JSON.stringify(n.name)}, () => {${code(n.children)}});`
      : `t.it(${JSON.stringify(n.name)}, ${n.outcome === 'skip' ? '{ skip: true }' : n.outcome === 'todo' ? '{ todo: true }' : '{}'}, () => { ${n.outcome === 'fail' ? 'throw new Error("x");' : ''} });`)).join('\n');
    writeFileSync(join(dir, 'gen.test.js'), `const t = require('node:test');\n${code(nodes)}\n`);
    const text = spawnSync(process.execPath, ['-e', "require('./gen.test.js')"], { cwd: dir, encoding: 'utf8' }).stdout;
    expect(readReport('tap', bytes(text))).toEqual({ ok: true, report: { format: 'tap', ...expected(nodes) } });
  });
});
