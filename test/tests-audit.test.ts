/**
 * R-52: the audit reads every test summary of the log again from the evidence it names, and holds
 * every promotion to the ratchet. A real build's log (two nodes whose tests node:test reports as
 * TAP; the second retires a test by plan) passes; the same log with one summary or one promotion
 * changed the way a wrong or lying host would record it fails, naming the position.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../src/events/envelope.js';
import { auditTests } from '../src/adapters/audit/tests-audit.js';
import { runCli, tempDir } from './support/cli.js';

let events: StoredEvent[] = [];
let evidenceDir = '';

const tests = (names: string[]) => `const test = require('node:test');\n${names.map((n) => `test(${JSON.stringify(n)}, () => {});\n`).join('')}`;

beforeAll(() => {
  const dir = tempDir();
  writeFileSync(join(dir, 'bp.json'), JSON.stringify({
    request: { goal: 'two nodes, one retiring a test' },
    verify: [['node', '-e', "const fs = require('fs'); for (const f of fs.existsSync('test') ? fs.readdirSync('test') : []) require('./test/' + f);"]],
    detailedWindow: 1,
    milestones: [{ id: 'm', title: 'M', nodes: [
      { id: 'first', kind: 'writable', deps: [], files: { 'test/a.test.js': tests(['one', 'two']) } },
      { id: 'second', kind: 'writable', deps: ['first'], changes: ['tests'], retires: ['two'], files: { 'test/a.test.js': tests(['one']) } },
    ] }],
  }));
  expect(runCli(['init', '--blueprint', join(dir, 'bp.json')], { cwd: dir }).code).toBe(0);
  const run = runCli(['run'], { cwd: dir, timeoutMs: 120_000 });
  expect(run.code, run.stderr).toBe(0);
  events = runCli(['log', '--json'], { cwd: dir }).stdout.trim().split('\n').map((l) => JSON.parse(l) as StoredEvent);
  evidenceDir = join(dir, '.longbuild', 'evidence');
}, 180_000);

const read = (sha: string): Uint8Array | null => {
  try {
    return readFileSync(join(evidenceDir, sha));
  } catch {
    return null;
  }
};
/** The log with one event's data changed (the audit of tests reads data, not hashes: those are the chain's check). */
const edited = (at: (e: StoredEvent) => boolean, change: (d: any) => void): { log: StoredEvent[]; position: number } => {
  const log = structuredClone(events);
  const e = log.find(at)!;
  change(e.data);
  return { log, position: e.position };
};
const verifications = () => events.filter((e) => e.type === 'VerificationFinished' && (e.data as { tests?: unknown }).tests !== undefined);

describe('the audit of tests (R-52)', () => {
  it('R-52 a real build passes: every summary reads again from its evidence, every promotion keeps the ratchet', () => {
    const r = auditTests(events, read);
    expect(r).toEqual({ problem: null, jobs: 2, promotions: 2, retired: 1 });
  });

  it('R-52 a summary that does not match its report (one more test passing) is named at its position', () => {
    const target = verifications().at(-1)!;
    const { log, position } = edited((e) => e.position === target.position, (d) => { d.evidence[0].tests.passed += 1; });
    expect(auditTests(log, read).problem).toMatchObject({ position, message: expect.stringMatching(/records \d+ passed.*its report says/) });
  });

  it('R-52 lost tests recorded that the evidence does not show are named at the verification', () => {
    const target = verifications().at(0)!;
    const { log, position } = edited((e) => e.position === target.position, (d) => { d.tests.lost = ['a test that passed']; d.tests.lostCount = 1; });
    expect(auditTests(log, read).problem).toMatchObject({ position, message: expect.stringMatching(/records 1 base tests no longer passing, its evidence gives 0/) });
  });

  it('R-52 a promotion whose receipt does not retire a test its job stopped passing is named: the ratchet was not held', () => {
    const { log, position } = edited((e) => e.type === 'IntegrationPromoted' && (e.data as any).receipt.tests?.retired !== undefined, (d) => { delete d.receipt.tests.retired; });
    expect(auditTests(log, read).problem).toMatchObject({ position, message: expect.stringMatching(/promoted though 1 test\(s\) of its base stopped passing.*"two".*ratchet was not held/) });
  });

  it('R-52 an evidence file a summary names that is missing is named', () => {
    const target = verifications().at(-1)!;
    const sha = (target.data as any).tests.passingSha256;
    expect(auditTests(events, (s) => (s === sha ? null : read(s))).problem).toMatchObject({ position: target.position, message: expect.stringMatching(/is missing/) });
  });
});
