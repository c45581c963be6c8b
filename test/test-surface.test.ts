/**
 * R-48, R-49: the verification surface — what is detected per ecosystem, what a change to a path
 * touches (whole files, one key of package.json, one TOML section, existing tests but never new
 * ones), the refusal's one line, the config's validation — and the report file a command writes,
 * taken out of its workspace without following what the code under test planted.
 */
import { mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectSurface, partsChanged, sectionText, surfaceMatcher, touchesOf, touchesReason } from '../src/commands/test-surface.js';
import { takeReportFile } from '../src/adapters/cache/cached-verification.js';
import { parseConfig } from '../src/adapters/config/config.js';
import { ROOT, runCli, tempDir } from './support/cli.js';

const texts = (base: string | null, candidate: string | null) => () => ({ base, candidate });

describe('the verification surface (R-48, R-49)', () => {
  it('R-48 detected from the base head\'s root files and the verification programs; the config replaces what it gives', () => {
    const npm = detectSurface(['package.json', 'README.md'], [['npm', 'test']], []);
    expect(npm).toMatchObject({ ecosystems: ['npm'], source: 'detected' });
    expect(npm.files).toContain('package.json#scripts');
    expect(npm.files).toContain('.mocharc*');
    expect(npm.tests).toContain('**/*.test.*');
    expect(detectSurface([], [['pytest', '-q']], []).ecosystems).toEqual(['python']);
    expect(detectSurface(['go.mod', 'Makefile'], [['make', 'check']], []).ecosystems).toEqual(['go', 'make']);
    expect(detectSurface(['notes.txt'], [['sh', 'check.sh']], [])).toMatchObject({ ecosystems: [], files: [], tests: [] });
    const given = detectSurface(['package.json'], [['npm', 'test']], ['reports/junit.xml'], { tests: ['checks/**'] });
    expect(given).toMatchObject({ source: 'config', tests: ['checks/**'] });
    expect(given.files).toContain('reports/junit.xml'); // a report file is always the host's
  });

  it('R-49 existing tests: modified and deleted ones touch it, new ones never do', () => {
    const m = surfaceMatcher({ files: [], tests: ['test/**', '**/*_test.go'] });
    expect(touchesOf(m, 'test/a.test.js', 'modified', texts('a', 'b'))).toEqual([{ kind: 'tests', path: 'test/a.test.js', change: 'modified' }]);
    expect(touchesOf(m, 'pkg/x_test.go', 'deleted', texts('a', null))).toEqual([{ kind: 'tests', path: 'pkg/x_test.go', change: 'deleted' }]);
    expect(touchesOf(m, 'test/new.test.js', 'added', texts(null, 'x'))).toEqual([]);
    expect(touchesOf(m, 'src/a.js', 'modified', texts('a', 'b'))).toEqual([]);
  });

  it('R-49 package.json: its protected keys by value (order and white space aside), the rest free; a file that is not JSON changes them all', () => {
    const m = surfaceMatcher({ files: ['package.json#scripts', 'package.json#devDependencies'], tests: [] });
    const pkg = (o: object) => JSON.stringify(o, null, 2);
    expect(touchesOf(m, 'package.json', 'modified', texts(pkg({ version: '1', scripts: { test: 'mocha', lint: 'x' } }), pkg({ version: '2', scripts: { lint: 'x', test: 'mocha' } })))).toEqual([]);
    expect(touchesOf(m, 'package.json', 'modified', texts(pkg({ scripts: { test: 'mocha' } }), pkg({ scripts: { test: 'echo ok' } })))).toEqual([{ kind: 'verification', path: 'package.json', part: 'scripts', change: 'modified' }]);
    expect(touchesOf(m, 'package.json', 'added', texts(null, pkg({ name: 'x' })))).toEqual([]);
    expect(touchesOf(m, 'package.json', 'added', texts(null, pkg({ devDependencies: { tape: '1' } })))[0]).toMatchObject({ part: 'devDependencies', change: 'added' });
    expect(partsChanged('{"scripts":{}}', '{broken', [{ kind: 'key', key: 'scripts' }, { kind: 'key', key: 'devDependencies' }])).toEqual(['scripts', 'devDependencies']);
  });

  it('R-49 a TOML/INI section and those under it, by their lines; other sections free', () => {
    const base = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n';
    expect(sectionText(base, 'tool.pytest')).toBe('[tool.pytest.ini_options]\naddopts = "-q"');
    expect(partsChanged(base, base.replace('name = "x"', 'name = "y"'), [{ kind: 'section', prefix: 'tool.pytest' }])).toEqual([]);
    expect(partsChanged(base, base.replace('-q', '-k nothing'), [{ kind: 'section', prefix: 'tool.pytest' }])).toEqual(['[tool.pytest]']);
  });

  it('R-49 whole files: added, modified or deleted, dot files and nested ones matched', () => {
    const m = surfaceMatcher({ files: ['.mocharc*', 'node_modules/**', '**/conftest.py'], tests: ['tests/**'] });
    expect(touchesOf(m, '.mocharc.yml', 'added', texts(null, 'grep: x'))).toMatchObject([{ kind: 'verification', change: 'added' }]);
    expect(touchesOf(m, 'node_modules/.bin/mocha', 'added', texts(null, '#!/bin/sh'))).toMatchObject([{ kind: 'verification' }]);
    // conftest.py is configuration, even where it lies among the tests.
    expect(touchesOf(m, 'tests/conftest.py', 'added', texts(null, 'x'))).toMatchObject([{ kind: 'verification' }]);
  });

  it('R-49 the refusal is one line naming the paths (first four) and what the plan may declare', () => {
    const touches = [
      { kind: 'tests' as const, path: 'test/a.js', change: 'deleted' as const },
      { kind: 'verification' as const, path: 'package.json', part: 'scripts', change: 'modified' as const },
      ...['b', 'c', 'd', 'e'].map((x) => ({ kind: 'tests' as const, path: `test/${x}.js`, change: 'modified' as const })),
    ];
    const line = touchesReason(touches);
    expect(line).toBe('the candidate deletes \'test/a.js\', changes scripts of \'package.json\', changes \'test/b.js\', changes \'test/c.js\' and 2 more: existing tests and the verification surface may change only where the node\'s plan declares it ("changes": ["tests", "verification"])');
  });

  it('R-28 the config\'s surface, tests and reports are validated, each refusal naming the field', () => {
    const base = { planner: { command: ['p'] }, worker: { command: ['w'] } };
    expect(() => parseConfig({ ...base, tests: ['../outside/**'] }, 'c.json')).toThrow(/tests\.0: .*outside the repository/);
    expect(() => parseConfig({ ...base, verificationSurface: ['package.json#'] }, 'c.json')).toThrow(/verificationSurface\.0: .*names no key/);
    expect(() => parseConfig({ ...base, verify: [{ run: ['pytest'], report: 'junit' }] }, 'c.json')).toThrow(/verify\.0\.reportFile: a junit report is read from a file/);
    expect(() => parseConfig({ ...base, verify: ['npm test'] }, 'c.json')).toThrow(/verify\.0: .*expected array/);
    expect(() => parseConfig({ ...base, testChanges: 'lenient' }, 'c.json')).toThrow(/testChanges/);
    expect(parseConfig({ ...base, verify: [['npm', 'test'], { run: ['pytest', '--junitxml=r.xml'], report: 'junit', reportFile: 'r.xml' }] }, 'c.json').verify).toHaveLength(2);
  });
});

describe('report files (R-51)', () => {
  it('R-51 a report file is read and removed; one behind a planted symlink (file or directory) is refused, and nothing outside is touched', () => {
    const ws = tempDir('lb-ws-');
    const outside = tempDir('lb-outside-');
    writeFileSync(join(outside, 'junit.xml'), 'host secret');
    mkdirSync(join(ws, 'reports'));
    writeFileSync(join(ws, 'reports', 'junit.xml'), '<testsuite/>');
    expect(takeReportFile(ws, 'reports/junit.xml')).toEqual(Buffer.from('<testsuite/>'));
    expect(existsSync(join(ws, 'reports', 'junit.xml'))).toBe(false);
    expect(takeReportFile(ws, 'reports/junit.xml')).toBeUndefined(); // none written: the caller says so
    symlinkSync(join(outside, 'junit.xml'), join(ws, 'reports', 'junit.xml'));
    expect(takeReportFile(ws, 'reports/junit.xml')).toEqual({ problem: expect.stringMatching(/symlink/) });
    symlinkSync(outside, join(ws, 'out'));
    expect(takeReportFile(ws, 'out/junit.xml')).toEqual({ problem: expect.stringMatching(/leaves the workspace/) });
    expect(existsSync(join(outside, 'junit.xml'))).toBe(true);
  });

  it('R-51 a JUnit report file written by the command (mocha xunit) is read, kept as evidence, and audited', () => {
    const dir = tempDir();
    const spec = (names: string[]) => `const assert = require('assert');\n${names.map((n) => `it(${JSON.stringify(n)}, () => assert.ok(true));\n`).join('')}`;
    writeFileSync(join(dir, 'bp.json'), JSON.stringify({
      request: { goal: 'junit' },
      verify: [{ run: ['node', join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js'), '--reporter', 'xunit', '--reporter-option', 'output=reports/junit.xml', 'test/'], report: 'junit', reportFile: 'reports/junit.xml' }],
      detailedWindow: 1,
      milestones: [{ id: 'm', title: 'M', nodes: [
        { id: 'one', kind: 'writable', deps: [], files: { 'test/one.spec.js': spec(['first', 'second']) } },
        { id: 'two', kind: 'writable', deps: ['one'], files: { 'test/two.spec.js': spec(['third']) } },
      ] }],
    }));
    expect(runCli(['init', '--blueprint', join(dir, 'bp.json')], { cwd: dir }).code).toBe(0);
    const r = runCli(['run'], { cwd: dir, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const log = runCli(['log', '--json', '--type', 'VerificationFinished'], { cwd: dir }).stdout.trim().split('\n').map((l) => JSON.parse(l).data);
    expect(log.map((v) => v.tests.passed)).toEqual([2, 3]);
    expect(log[1].evidence[0]).toMatchObject({ tests: { format: 'junit', passed: 3, failed: 0 }, reportSha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // job-2 compared with the tests job-1's receipt recorded for the head, not measured again.
    expect(log[1].tests.base).toMatchObject({ passed: 2 });
    expect(log[1].tests.base.measured).toBeUndefined();
    expect(runCli(['verify'], { cwd: dir }).code).toBe(0);
  }, 180_000);
});
