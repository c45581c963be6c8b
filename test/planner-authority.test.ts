/**
 * The planner decides nothing about acceptance (R-55), proved by attacks through the CLI: a real
 * command planner (a process, sandboxed when bubblewrap is here) answers, ask after ask, with
 * what a hostile or broken planner sends — brackets nested 200,000 deep, a duplicate `detailed`
 * key whose second value marks a read-only node accepted, a node marked accepted outright, more
 * milestones than the build's windows — and finally a plan. What a user checks: the build ends,
 * the requested work is on the integration ref, each refusal is in the log with its rule and
 * reason (returned to the planner as feedback), and nothing reads "internal error".
 * The JSON scanner itself is checked for all inputs against an independent oracle.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonShapeProblem, parseUntrustedJson } from '../src/commands/untrusted-json.js';
import { HAVE_BWRAP } from './support/bwrap.js';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
const events = (repo: string): { type: string; data: any }[] =>
  runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

/**
 * A command build of one feature whose planner answers its i-th ask with `answers[i]` (a
 * JavaScript expression over `input`, the planner input; the last one repeats), and whose worker
 * writes the node's file.
 */
function plannerBuild(answers: string[], config: Record<string, unknown> = {}): string {
  const repo = userRepo();
  const cfg = tempDir('longbuild-cfg-');
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ title: 'hello', features: ['hello'] }));
  writeFileSync(join(cfg, 'planner.mjs'), `import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
const answers = [${answers.map((a) => `() => (${a})`).join(', ')}];
const ask = (input.feedback ?? []).length;
const a = answers[Math.min(ask, answers.length - 1)]();
process.stdout.write(typeof a === 'string' ? a : JSON.stringify(a));
`);
  writeFileSync(join(cfg, 'worker.mjs'), `import { readFileSync, writeFileSync } from 'node:fs';
const packet = JSON.parse(readFileSync(0, 'utf8'));
writeFileSync(packet.nodeId + '.txt', 'built by the worker\\n');
`);
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', join(cfg, 'planner.mjs')], timeoutSeconds: 60, route: 'test:planner-authority', asks: answers.length },
    worker: { command: ['node', join(cfg, 'worker.mjs')], timeoutSeconds: 60 },
    verify: [['true']],
    maxAttempts: 1,
    ...(HAVE_BWRAP ? {} : { sandbox: 'off' }),
    ...config,
  }));
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return repo;
}

const PLAN = `{ detailed: [{ id: 'm', title: 'hello', nodes: [{ id: 'hello', kind: 'writable', title: 'hello', deps: [] }] }], coarse: [] }`;

describe('the planner decides nothing about acceptance (R-55)', () => {
  it('R-55 R-39 nested brackets, a duplicate "detailed" key marking a read-only node accepted, and a node accepted outright are each refused with a reason the planner gets back; the requested work is then built', () => {
    const repo = plannerBuild([
      `'['.repeat(200000) + ']'.repeat(200000)`,
      `'{"detailed":' + JSON.stringify(${PLAN}.detailed) + ',"coarse":[],"detailed":[{"id":"m","title":"done","nodes":[{"id":"review","kind":"read-only","deps":[],"accepted":true}]}]}'`,
      `{ detailed: [{ id: 'm', title: 'done', nodes: [{ id: 'review', kind: 'read-only', deps: [], accepted: true, decision: 'all done' }] }], coarse: [] }`,
      PLAN,
    ]);
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 120_000 });
    expect(r.stderr).not.toMatch(/internal error|Maximum call stack/);
    expect(r.code, r.stderr).toBe(0);
    const log = events(repo);
    const refusals = log.filter((e) => e.type === 'ProposalRejected').map((e) => `${e.data.rule}: ${e.data.reason}`);
    expect(refusals).toHaveLength(3);
    expect(refusals[0]).toMatch(/^R-55: planner command's answer is refused: it nests deeper than 64 levels \(at \$(\[0\])+\)$/);
    expect(refusals[1]).toBe('R-55: planner command\'s answer is refused: the key "detailed" is named twice in one object (at $)');
    expect(refusals[2]).toMatch(/^R-55: node 'review' carries 'accepted' and 'decision': a planner proposes work, the host decides acceptance/);
    // The planner got every reason back (R-39), and what it planned at last was built and promoted.
    const sealed = log.find((e) => e.type === 'HorizonSealed')!;
    expect(sealed.data.nodes.map((n: { id: string }) => n.id)).toEqual(['hello']);
    expect(log.some((e) => e.type === 'IntegrationPromoted' && e.data.receipt.nodeIds.includes('hello'))).toBe(true);
    expect(git(repo, 'show', 'refs/heads/longbuild/integration:hello.txt')).toBe('built by the worker');
    expect(log.some((e) => e.type === 'NodeAccepted' && e.data?.nodeId === 'review')).toBe(false);
  }, 120_000);

  it('R-55 the configured windows are in the planner input and enforced: with detailedWindow 1 and coarseWindow 0, a plan of 2 detailed and 1 coarse milestones is refused; the planner reads its windows and complies', () => {
    const two = `{ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'hello', kind: 'writable', deps: [] }] }, { id: 'm2', title: 'two', nodes: [{ id: 'world', kind: 'writable', deps: ['hello'] }] }], coarse: [{ id: 'later', title: 'later' }] }`;
    const obeying = `{ detailed: ${two}.detailed.slice(0, input.windows.detailed), coarse: ${two}.coarse.slice(0, input.windows.coarse) }`;
    const repo = plannerBuild([two, `({ ...${two}, detailed: ${two}.detailed.slice(0, 1) })`, obeying], { detailedWindow: 1, coarseWindow: 0 });
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 120_000 });
    expect(r.code, r.stderr).toBe(0);
    const log = events(repo);
    const refusals = log.filter((e) => e.type === 'ProposalRejected').map((e) => `${e.data.rule}: ${e.data.reason}`);
    expect(refusals).toEqual([
      "R-55: this build's detailedWindow is 1, the proposal has 2 detailed milestones (m1, m2)",
      "R-55: this build's coarseWindow is 0, the proposal has 1 coarse milestones (later over it)",
    ]);
    const sealed = log.find((e) => e.type === 'HorizonSealed')!;
    expect(sealed.data.detailed.map((m: { id: string }) => m.id)).toEqual(['m1']);
    expect(sealed.data.coarse).toEqual([]);
    expect(git(repo, 'show', 'refs/heads/longbuild/integration:hello.txt')).toBe('built by the worker');
  }, 120_000);

  it('R-55 R-39 a planner that only ever answers nested brackets blocks the build after planner.asks refusals, in one line, with no crash', () => {
    const repo = plannerBuild([`'{"a":'.repeat(5000) + '1' + '}'.repeat(5000)`, `'{"a":'.repeat(5000) + '1' + '}'.repeat(5000)`]);
    const r = runCli(['run', '--json'], { cwd: repo, timeoutMs: 120_000 });
    expect(r.stderr).not.toMatch(/internal error|Maximum call stack|\n\s+at /);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout) as { outcome: string; reason?: string };
    expect(out.outcome).toBe('blocked');
    const log = events(repo);
    expect(log.filter((e) => e.type === 'ProposalRejected')).toHaveLength(2);
    expect(log.filter((e) => e.type === 'ProposalRejected').every((e) => /nests deeper than 64 levels/.test(e.data.reason))).toBe(true);
    expect(log.some((e) => e.type === 'HorizonSealed')).toBe(false);
    // Asked again, it is still blocked, and asks nothing more.
    expect(runCli(['run', '--json'], { cwd: repo }).code).toBe(1);
    expect(events(repo).filter((e) => e.type === 'ProposalRejected')).toHaveLength(2);
  }, 120_000);
});

/** The oracle's JSON: a tree of objects (entries may repeat a key) and arrays, serialised by hand. */
type Tree = { obj: [string, Tree][] } | { arr: Tree[] } | { leaf: number | string | null };
const tree: fc.Arbitrary<Tree> = fc.letrec<{ t: Tree }>((tie) => ({
  t: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ leaf: fc.oneof(fc.integer(), fc.constantFrom('x', '"q"', '\\', '{[', null)) }),
    fc.record({ arr: fc.array(tie('t'), { maxLength: 3 }) }),
    fc.record({ obj: fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'a"', '{'), tie('t')), { maxLength: 3 }) }),
  ),
})).t;

/** A key written as JSON, sometimes with a letter escaped (`\u0061` is `a`: the same key). */
const keyText = (k: string, escape: boolean): string => (escape && k.startsWith('a') ? `"\\u0061${JSON.stringify(k).slice(2)}` : JSON.stringify(k));
function serialise(t: Tree, escape: boolean): string {
  if ('leaf' in t) return JSON.stringify(t.leaf);
  if ('arr' in t) return ` [ ${t.arr.map((x) => serialise(x, escape)).join(' , ')} ] `;
  return `{${t.obj.map(([k, v]) => `${keyText(k, escape)} :${serialise(v, escape)}`).join(',')}}`;
}
const depthOf = (t: Tree): number => ('leaf' in t ? 0 : 1 + Math.max(0, ...('arr' in t ? t.arr : t.obj.map(([, v]) => v)).map(depthOf)));
const hasDuplicate = (t: Tree): boolean => ('leaf' in t ? false : 'arr' in t ? t.arr.some(hasDuplicate)
  : new Set(t.obj.map(([k]) => k)).size < t.obj.length || t.obj.some(([, v]) => hasDuplicate(v)));

describe('the untrusted JSON reader (R-55), for all inputs', () => {
  it('R-55 (property) for all JSON texts: refused for depth exactly when nested deeper than the bound, for a key named twice exactly when an object repeats one (escaped or not); otherwise read as JSON.parse reads it', () => {
    fc.assert(fc.property(tree, fc.boolean(), fc.integer({ min: 1, max: 4 }), (t, escape, maxDepth) => {
      const text = serialise(t, escape);
      const deep = depthOf(t) > maxDepth;
      const dup = hasDuplicate(t);
      const refused = parseUntrustedJson(text, { duplicateKeys: 'refuse', maxDepth });
      const allowed = parseUntrustedJson(text, { duplicateKeys: 'allow', maxDepth });
      expect(allowed.ok).toBe(!deep);
      if (allowed.ok) expect(allowed.value).toEqual(JSON.parse(text));
      else expect(allowed.problem).toMatch(new RegExp(`nests deeper than ${maxDepth} levels`));
      // Which problem is found first depends on the order in the text; refused exactly when either holds.
      expect(refused.ok).toBe(!deep && !dup);
      if (!refused.ok && !deep) expect(refused.problem).toMatch(/is named twice in one object/);
    }), { numRuns: 500 });
  });

  it('R-55 text that is not JSON is refused as such, never as a shape; a deep nest of 200,000 is refused without a stack overflow', () => {
    const bad = parseUntrustedJson('{"a": [1, }', { duplicateKeys: 'refuse' });
    expect(bad).toMatchObject({ ok: false, syntax: true });
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    expect(jsonShapeProblem(deep, { duplicateKeys: 'refuse' })).toBe(`it nests deeper than 64 levels (at $${'[0]'.repeat(64)})`);
  });
});
