import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  attemptBranch,
  candidateProblem,
  verifyNamedPaths,
  changedPaths,
  commitAttempt,
  commitParents,
  ensureRepo,
  findAttemptCommit,
  git,
  integrateCandidates,
  isPromoted,
  prepareAttemptWorktree,
  promote,
  readRef,
  removeWorkspace,
} from '../src/adapters/git/git.js';
import { verifyWithCache } from '../src/adapters/cache/cached-verification.js';
import { attemptCommit, commitOpts, newRepo } from './support/git-fixture.js';
import { runProcess } from '../src/adapters/process/run-process.js';
import { ValidationError } from '../src/events/errors.js';

const DATE = '2025-01-01T00:00:00Z';
const DATE2 = '2025-01-02T00:00:00Z';
const PATH = process.env['PATH'] ?? '/usr/bin:/bin';

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'lb-git-'));
}

const attempt = attemptCommit;

describe('git adapter (R-24, R-18, R-29)', () => {
  it('R-24 the same inputs give the same commit SHAs in different repositories', async () => {
    const a = await newRepo();
    const b = await newRepo();
    expect(a.head).toBe(b.head);
    expect(a.head).toMatch(/^[0-9a-f]{40}$/);
    const ca = await attempt(a.repo, a.wt, 'catalog-api.1', a.head, { 'src/a.js': 'x\n' });
    const cb = await attempt(b.repo, b.wt, 'catalog-api.1', b.head, { 'src/a.js': 'x\n' });
    expect(ca).toEqual(cb);
    const log = (await git(a.repo, ['log', '-1', '--format=%an <%ae> %ad | %cn <%ce> %cd', '--date=iso-strict', ca.commit])).stdout.trim();
    expect(log).toBe('longbuild <longbuild@localhost> 2025-01-01T00:00:00+00:00 | longbuild <longbuild@localhost> 2025-01-01T00:00:00+00:00');
    // ensureRepo is idempotent and hides the build dir.
    expect(await ensureRepo(a.user, DATE2)).toBe(a.head);
    expect(readFileSync(join(a.user, '.git', 'info', 'exclude'), 'utf8').split('\n').filter((l) => l === '/.longbuild/')).toHaveLength(1);
    expect((await git(a.user, ['status', '--porcelain'])).stdout).toBe('');
  });

  it('R-24 ensureRepo never sweeps a user\'s staged files into the initial commit', async () => {
    const repo = tmp();
    await git(repo, ['init', '-q', '-b', 'main']);
    writeFileSync(join(repo, 'user.txt'), 'mine');
    await git(repo, ['add', 'user.txt']);
    const head = await ensureRepo(repo, DATE);
    expect((await git(repo, ['ls-tree', '-r', '--name-only', head])).stdout).toBe('');
    expect((await newRepo()).head).toBe(head);
  });

  it('R-24 commitAttempt reports an unchanged clone, and refuses special and oversized files (R-31)', async () => {
    const { repo, head, wt } = await newRepo();
    const p = await prepareAttemptWorktree(repo, wt, 'n.1', attemptBranch('n.1'), head);
    expect(await commitAttempt(repo, p.worktree, p.branch, head, 'msg', DATE, commitOpts())).toEqual({ kind: 'unchanged' });
    writeFileSync(join(p.worktree, 'big.bin'), Buffer.alloc(2 * 1024 * 1024));
    expect(await commitAttempt(repo, p.worktree, p.branch, head, 'msg', DATE, commitOpts())).toMatchObject({ kind: 'refused', rule: 'R-31', reason: expect.stringMatching(/big\.bin is 2097152 bytes, over the limit/) });
    rmSync(join(p.worktree, 'big.bin'));
    execFileSync('mkfifo', [join(p.worktree, 'pipe')]);
    expect(await commitAttempt(repo, p.worktree, p.branch, head, 'msg', DATE, commitOpts())).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/pipe is not a regular file/) });
    expect(await readRef(repo, p.branch)).toBeNull();
  });

  it('R-24 promote is one compare-and-set: a stale old value is refused', async () => {
    const { repo, head, wt } = await newRepo();
    const c1 = await attempt(repo, wt, 'a.1', head, { 'a.txt': '1' });
    const c2 = await attempt(repo, wt, 'b.1', head, { 'b.txt': '2' });
    expect(await promote(repo, 'refs/heads/main', c1.commit, head)).toBe('promoted');
    expect(await readRef(repo, 'refs/heads/main')).toBe(c1.commit);
    // A second controller still believing main is at `head` loses.
    expect(await promote(repo, 'refs/heads/main', c2.commit, head)).toEqual({ conflict: c1.commit });
    expect(await readRef(repo, 'refs/heads/main')).toBe(c1.commit);
    expect(await promote(repo, 'refs/heads/new', c2.commit, null)).toBe('promoted');
    expect(await promote(repo, 'refs/heads/new', c1.commit, null)).toEqual({ conflict: c2.commit });
    expect(await isPromoted(repo, 'refs/heads/main', c1.commit)).toBe(true);
    expect(await isPromoted(repo, 'refs/heads/main', head)).toBe(true); // main moved past it
    expect(await isPromoted(repo, 'refs/heads/main', c2.commit)).toBe(false);
    await expect(promote(repo, 'main', c1.commit, head)).rejects.toThrow(ValidationError);
    await expect(promote(repo, 'refs/heads/main', 'HEAD', head)).rejects.toThrow(/object id/);
  });

  it('R-24 an attempt clone holds baseHead and its whole history: copied as loose objects when the integrator\'s are loose, fetched when they are packed; the same commits, tree and files either way, and git fsck finds nothing wrong', async () => {
    const { repo, head, wt } = await newRepo();
    const c1 = await attemptCommit(repo, wt, 'a.1', head, { 'a.txt': 'one\n', 'lib/deep/x.js': 'x\n' });
    const c2 = await attemptCommit(repo, wt, 'b.1', c1.commit, { 'b.txt': 'two\n', 'lib/deep/y.js': 'y\n' });
    const c3 = await attemptCommit(repo, wt, 'c.1', c2.commit, { 'a.txt': 'one, changed\n' });
    const history = (await git(repo, ['log', '--format=%H %T', c3.commit])).stdout;
    const files = (dir: string): string => execFileSync('git', ['-C', dir, 'ls-files', '-s'], { encoding: 'utf8' });
    const expected = execFileSync('git', ['-C', repo, 'ls-tree', '-r', c3.commit], { encoding: 'utf8' }).split('\n').filter(Boolean).map((l) => { const [meta, path] = l.split('\t'); const [mode, , sha] = meta!.split(' '); return `${mode} ${sha} 0\t${path}`; }).join('\n') + '\n';
    const check = async (id: string): Promise<string> => {
      const p = await prepareAttemptWorktree(repo, wt, id, attemptBranch(id), c3.commit);
      expect((await git(p.worktree, ['rev-parse', 'main'])).stdout.trim()).toBe(c3.commit);
      expect((await git(p.worktree, ['log', '--format=%H %T', 'main'])).stdout).toBe(history);
      expect(files(p.worktree)).toBe(expected);
      expect(readFileSync(join(p.worktree, 'a.txt'), 'utf8')).toBe('one, changed\n');
      expect(readFileSync(join(p.worktree, 'lib', 'deep', 'y.js'), 'utf8')).toBe('y\n');
      expect((await git(p.worktree, ['status', '--porcelain', '--untracked-files=all'])).stdout).toBe('');
      expect((await git(p.worktree, ['fsck', '--full', '--strict', '--no-dangling'], { allowFail: true })).code).toBe(0);
      return p.worktree;
    };
    // Every object the host wrote is loose: the clone copies them (no fetch, so no FETCH_HEAD).
    expect(existsSync(join(await check('d.1'), '.git', 'FETCH_HEAD'))).toBe(false);
    // Packed (a user's `git gc` in the integrator's repository): the clone fetches.
    await git(repo, ['repack', '-a', '-d', '-q']);
    expect(existsSync(join(await check('e.1'), '.git', 'FETCH_HEAD'))).toBe(true);
  });

  it('R-24 a hostile worker that rewrites the object files its clone was given (the copies of the host\'s own) changes nothing in the integrator\'s repository', async () => {
    const { repo, head, wt } = await newRepo();
    const c1 = await attemptCommit(repo, wt, 'a.1', head, { 'a.txt': 'one\n' });
    const p = await prepareAttemptWorktree(repo, wt, 'b.1', attemptBranch('b.1'), c1.commit);
    expect(existsSync(join(p.worktree, '.git', 'FETCH_HEAD'))).toBe(false); // copied, not fetched
    const objects = join(p.worktree, '.git', 'objects');
    let rewritten = 0;
    for (const dir of readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d))) {
      for (const f of readdirSync(join(objects, dir))) {
        chmodSync(join(objects, dir, f), 0o644);
        writeFileSync(join(objects, dir, f), 'forged by the worker');
        rewritten += 1;
      }
    }
    expect(rewritten).toBeGreaterThan(3);
    expect((await git(repo, ['fsck', '--full', '--strict', '--no-dangling'], { allowFail: true })).code).toBe(0);
    expect((await git(repo, ['show', `${c1.commit}:a.txt`])).stdout).toBe('one\n');
  });

  it('R-18 a half-created clone (stray files + stale index.lock) is recovered', async () => {
    const { repo, head, wt } = await newRepo();
    const p1 = await prepareAttemptWorktree(repo, wt, 'node-x.1', attemptBranch('node-x.1'), head);
    writeFileSync(join(p1.worktree, 'half-written.js'), 'partial');
    writeFileSync(join(p1.worktree, '.git', 'index.lock'), '');
    const p2 = await prepareAttemptWorktree(repo, wt, 'node-x.1', attemptBranch('node-x.1'), head);
    expect(p2.adoptable).toBeNull();
    expect(existsSync(join(p2.worktree, 'half-written.js'))).toBe(false);
    expect(existsSync(join(p2.worktree, '.git', 'index.lock'))).toBe(false);
    expect(await commitAttempt(repo, p2.worktree, p2.branch, head, 'ok', DATE, commitOpts())).toEqual({ kind: 'unchanged' });
    // A directory that was never registered (killed before `worktree add` finished).
    const stray = join(wt, 'node-y.1');
    mkdirSync(stray, { recursive: true });
    writeFileSync(join(stray, 'junk'), 'x');
    const p3 = await prepareAttemptWorktree(repo, wt, 'node-y.1', 'longbuild/attempts/node-y.1', head);
    expect(existsSync(join(p3.worktree, 'junk'))).toBe(false);
    expect(await readRef(p3.worktree, 'HEAD')).toBe(head);
  });

  it('R-18 a committed attempt branch is adopted, not deleted', async () => {
    const { repo, head, wt } = await newRepo();
    const c = await attempt(repo, wt, 'catalog-api.1', head, { 'src/c.js': 'c' });
    expect(await findAttemptCommit(repo, attemptBranch('catalog-api.1'), head)).toEqual(c);
    const p = await prepareAttemptWorktree(repo, wt, 'catalog-api.1', attemptBranch('catalog-api.1'), head);
    expect(p.adoptable).toEqual(c);
    expect(await readRef(repo, attemptBranch('catalog-api.1'))).toBe(c.commit);
    expect(await findAttemptCommit(repo, attemptBranch('other.1'), head)).toBeNull();
    // Wrong base: not this attempt's result.
    expect(await findAttemptCommit(repo, attemptBranch('catalog-api.1'), c.commit)).toBeNull();
  });

  it('R-8 unsafe attempt ids never reach a path or a ref', async () => {
    const { repo, head, wt } = await newRepo();
    for (const id of ['../x', 'a/b', 'Upper.1', '', 'a'.repeat(65), 'a\u0001b', 'x..1', 'x.lock', 'x.']) {
      await expect(prepareAttemptWorktree(repo, wt, id, `longbuild/attempts/${id}`, head)).rejects.toThrow(ValidationError);
    }
    await expect(prepareAttemptWorktree(repo, wt, 'a.1', 'refs/heads/main', head)).rejects.toThrow(/R-29|must be under/);
    await expect(prepareAttemptWorktree(repo, wt, 'a.1', attemptBranch('b.1'), head)).rejects.toThrow(/does not belong/);
    expect(attemptBranch('a'.repeat(64) + '.12')).toBe(`refs/heads/longbuild/attempts/${'a'.repeat(64)}.12`);
  });

  it('R-24 integrate: fast-forward, cherry-pick with fixed date, and a conflict names the candidate', async () => {
    const { repo, head, wt, ws } = await newRepo();
    const a = await attempt(repo, wt, 'a.1', head, { 'a.txt': 'a\n' });
    const ff = await integrateCandidates(repo, ws, 'job-1', head, [a.commit], DATE2);
    expect(ff).toMatchObject({ kind: 'applied', resultCommit: a.commit, tree: a.tree, fastForward: true });
    // b was made from the old head; applied onto a it is cherry-picked.
    const b = await attempt(repo, wt, 'b.1', head, { 'b.txt': 'b\n' });
    const pick = await integrateCandidates(repo, ws, 'job-2', a.commit, [b.commit], DATE2);
    if (pick.kind !== 'applied') throw new Error('expected applied');
    expect(pick.fastForward).toBe(false);
    expect(await commitParents(repo, pick.resultCommit)).toEqual([a.commit]);
    expect((await git(repo, ['ls-tree', '--name-only', pick.tree])).stdout).toBe('a.txt\nb.txt\n');
    // Same job replayed (crash and retry) gives the same result commit.
    const again = await integrateCandidates(repo, ws, 'job-2', a.commit, [b.commit], DATE2);
    expect(again).toMatchObject({ kind: 'applied', resultCommit: pick.resultCommit });
    // A conflicting candidate.
    const c = await attempt(repo, wt, 'c.1', head, { 'a.txt': 'other\n' });
    const conflict = await integrateCandidates(repo, ws, 'job-3', a.commit, [b.commit, c.commit], DATE2);
    expect(conflict).toMatchObject({ kind: 'conflict', candidate: c.commit, index: 1 });
    expect(existsSync(join(ws, 'job-3'))).toBe(false);
    await removeWorkspace(repo, join(ws, 'job-2'));
    expect(existsSync(join(ws, 'job-2'))).toBe(false);
    expect((await git(repo, ['worktree', 'list'])).stdout).not.toContain('job-2');
  });

  it('R-31 candidate checks: a symlink leaving the tree, a submodule, an oversized file and a file a verification command runs are refused with the rule', async () => {
    const { repo, head, wt } = await newRepo();
    const limits = { maxFileBytes: 100, protectedPaths: ['ci/'], verify: [['node', '--test', 'test/'], ['sh', 'scripts/verify.sh'], ['npm', 'test']] };
    const check = async (files: Record<string, string>, link?: [string, string]) => {
      const id = `c${Math.random().toString(36).slice(2, 8)}.1`;
      const p = await prepareAttemptWorktree(repo, wt, id, attemptBranch(id), head);
      for (const [f, c] of Object.entries(files)) {
        mkdirSync(join(p.worktree, f, '..'), { recursive: true });
        writeFileSync(join(p.worktree, f), c);
      }
      if (link) {
        mkdirSync(join(p.worktree, link[0], '..'), { recursive: true });
        symlinkSync(link[1], join(p.worktree, link[0]));
      }
      const c = await commitAttempt(repo, p.worktree, p.branch, head, 'm', DATE, commitOpts());
      if (c.kind !== 'committed') throw new Error(JSON.stringify(c));
      return candidateProblem(repo, head, c.commit, limits);
    };
    expect(await check({ 'ok.js': 'x' })).toBeNull();
    expect(await check({ 'test/new.test.js': 'x' })).toBeNull(); // a directory a command names stays open
    expect(await check({}, ['a/passwd', '/etc/passwd'])).toMatchObject({ rule: 'R-31', reason: expect.stringMatching(/symlink 'a\/passwd' points outside the tree/) });
    expect(await check({}, ['a/up', '../../x'])).toMatchObject({ rule: 'R-31' });
    expect(await check({ 'a/b.txt': 'x' }, ['a/in', 'b.txt'])).toBeNull(); // inside the tree: fine
    expect(await check({ 'big.txt': 'x'.repeat(101) })).toMatchObject({ rule: 'R-31', reason: expect.stringMatching(/'big\.txt' is 101 bytes, over the limit of 100/) });
    expect(await check({ 'scripts/verify.sh': 'exit 0' })).toMatchObject({ rule: 'R-31', reason: expect.stringMatching(/'scripts\/verify\.sh', which a verification command runs/) });
    expect(await check({ 'ci/x': 'x' })).toMatchObject({ rule: 'R-29' });
    expect(verifyNamedPaths(limits.verify)).toEqual(['scripts/verify.sh', 'test']);
  });

  it('R-29 a candidate touching the build dir or a protected path is refused', async () => {
    const { repo, head, wt } = await newRepo();
    // A hostile worker writes into a .longbuild directory of its own clone.
    const evil = await attempt(repo, wt, 'evil.1', head, { '.longbuild/log.sqlite': 'x', 'ci/verify.sh': 'x', 'ok.js': 'x' });
    expect((await changedPaths(repo, head, evil.commit)).sort()).toEqual(['.longbuild/log.sqlite', 'ci/verify.sh', 'ok.js']);
    const limits = (protectedPaths: string[]) => ({ maxFileBytes: 1 << 20, protectedPaths, verify: [] });
    expect(await candidateProblem(repo, head, evil.commit, limits([]))).toMatchObject({ rule: 'R-29', reason: expect.stringMatching(/protected path '\.longbuild\/log\.sqlite'/) });
    const ciOnly = await attempt(repo, wt, 'ci.1', head, { 'ci/verify.sh': 'x', 'ok.js': 'x' });
    expect(await candidateProblem(repo, head, ciOnly.commit, limits(['ci']))).toMatchObject({ rule: 'R-29', reason: expect.stringMatching(/'ci\/verify\.sh'/) });
    const good = await attempt(repo, wt, 'good.1', head, { 'cinema.js': 'x' });
    expect(await candidateProblem(repo, head, good.commit, limits(['ci']))).toBeNull();
  });

  it('R-26 verification runs trusted argv in the workspace and requires it clean', async () => {
    const { repo, head, wt, ws } = await newRepo();
    const a = await attempt(repo, wt, 'a.1', head, {
      '.gitignore': 'out.txt\n', // out.txt is ignored, and still makes the workspace dirty
    'test/a.test.js': "const t=require('node:test');const a=require('node:assert');t('ok',()=>a.strictEqual(1,1));\n",
    });
    const job = await integrateCandidates(repo, ws, 'job-v', head, [a.commit], DATE);
    if (job.kind !== 'applied') throw new Error('conflict');
    const env = { PATH };
    const runVerification = (workspace: string, commands: string[][], e: Record<string, string>, timeoutMs: number) =>
      verifyWithCache({ workspace, gitDir: job.gitDir, tree: job.tree, commands, env: e, timeoutMs, cache: null, run: (o) => runProcess(o) });
    const ok = await runVerification(job.workspace, [['node', '--test']], env, 30_000);
    expect(ok.passed).toBe(true);
    expect(ok.commands[0]?.exitCode).toBe(0);
    const failing = await runVerification(job.workspace, [['node', '-e', 'process.exit(3)'], ['node', '--test']], env, 30_000);
    expect(failing).toMatchObject({ passed: false, reason: expect.stringMatching(/exited with 3/) });
    expect(failing.commands).toHaveLength(1);
    const dirtying = await runVerification(job.workspace, [['node', '-e', "require('fs').writeFileSync('out.txt','x')"]], env, 30_000);
    expect(dirtying).toMatchObject({ passed: false, cleanAfter: false, reason: expect.stringMatching(/not clean after.*out\.txt/) });
    const dirtyBefore = await runVerification(job.workspace, [['node', '--test']], env, 30_000);
    expect(dirtyBefore).toMatchObject({ passed: false, cleanBefore: false, commands: [] });
    rmSync(join(job.workspace, 'out.txt'));
    const leftover = await runVerification(job.workspace, [['sh', '-c', 'sleep 30 &']], env, 30_000);
    expect(leftover).toMatchObject({ passed: false, reason: expect.stringMatching(/left processes behind/) });
    expect(leftover.commands[0]).toMatchObject({ exitCode: 0, leftover: true });
    await expect(runVerification(job.workspace, [['node --test']], env, 1000)).rejects.toThrow(/R-26/);
  });
});
