import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { integrateCandidates } from '../src/adapters/git/git.js';
import { attemptCommit, directRunner, newRepo } from './support/git-fixture.js';
import { verifyWithCache } from '../src/adapters/cache/cached-verification.js';
import { VerificationCache } from '../src/adapters/cache/verification-cache.js';
import { CACHE_POLICY_VERSION, entryBytes, trustedEnvSha256 } from '../src/commands/cache-key.js';
import { gitBinding } from '../src/adapters/controller/git-binding.js';
import { sha256Hex } from '../src/events/hash.js';
import { ReceiptSchema } from '../src/events/catalogue.js';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

const DATE = '2025-01-01T00:00:00Z';
const ENV = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8' };
/** Prints fresh random bytes on both streams: a replay is recognisable because a real run never repeats them. */
const RANDOM = ['node', '-e', 'process.stdout.write("out " + Math.random()); process.stderr.write("err " + Math.random())'];

interface Fixture {
  /** The integrator's repository; `user` the user's. */
  readonly repo: string;
  readonly user: string;
  readonly cacheDir: string;
  readonly workspaces: string;
  /** Two commits with different trees. */
  readonly commits: readonly { commit: string; tree: string }[];
}

async function fixture(): Promise<Fixture> {
  const { repo, user, head, wt, ws } = await newRepo();
  const commits: { commit: string; tree: string }[] = [];
  for (const [i, content] of ['one\n', 'two\n'].entries()) commits.push(await attemptCommit(repo, wt, `a${i}.1`, head, { 'file.txt': content }));
  return { repo, user, cacheDir: join(user, '.longbuild', 'cache'), workspaces: ws, commits };
}

/** A clean detached workspace at commit `i` of the fixture. */
async function workspace(f: Fixture, i: number, name = `ws${i}`): Promise<{ workspace: string; gitDir: string; tree: string }> {
  const c = f.commits[i]!;
  const r = await integrateCandidates(f.repo, f.workspaces, name, c.commit, [c.commit], DATE);
  if (r.kind !== 'applied') throw new Error('fixture did not apply');
  return { workspace: r.workspace, gitDir: r.gitDir, tree: r.tree };
}

async function verify(f: Fixture, ws: { workspace: string; gitDir: string; tree: string }, opts: { commands?: string[][]; env?: Record<string, string>; cache?: VerificationCache | null } = {}) {
  return verifyWithCache({
    workspace: ws.workspace, gitDir: ws.gitDir, tree: ws.tree, commands: opts.commands ?? [RANDOM], env: opts.env ?? ENV, timeoutMs: 20_000,
    cache: opts.cache === undefined ? new VerificationCache(f.cacheDir) : opts.cache, run: directRunner,
  });
}

function entryFiles(f: Fixture): string[] {
  try {
    return readdirSync(join(f.cacheDir, 'entries')).map((e) => join(f.cacheDir, 'entries', e));
  } catch {
    return [];
  }
}

describe('verification cache (R-27)', () => {
  it('R-27 R-51 a report file rides with its pass: written, taken out of the workspace, stored, and replayed exactly on a hit', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const cache = new VerificationCache(f.cacheDir);
    const write = ['node', '-e', 'require("fs").mkdirSync("out", { recursive: true }); require("fs").writeFileSync("out/r.xml", "<testsuite>" + Math.random() + "</testsuite>")'];
    const run = () => verifyWithCache({ workspace: ws.workspace, gitDir: ws.gitDir, tree: ws.tree, commands: [write], env: ENV, timeoutMs: 20_000, cache, run: directRunner, reportFiles: ['out/r.xml'] });
    const first = await run();
    expect(first.passed, first.reason).toBe(true); // the report was taken out: the workspace is clean
    const second = await run();
    expect(second.commands[0]!.cacheHit).toBe(true);
    expect(second.commands[0]!.report!.equals(first.commands[0]!.report!)).toBe(true);
    // The same command without a report file is another key: a miss, never the report-less replay.
    const plain = await verifyWithCache({ workspace: ws.workspace, gitDir: ws.gitDir, tree: ws.tree, commands: [write], env: ENV, timeoutMs: 20_000, cache, run: directRunner });
    expect(plain.commands[0]!.cacheHit).toBe(false);
  });

  it('R-27 a hit replays the exact stdout and stderr bytes of the cached pass without running the command', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const first = await verify(f, ws);
    expect(first.passed).toBe(true);
    expect(first.commands[0]!.cacheHit).toBe(false);
    const second = await verify(f, ws);
    expect(second.passed).toBe(true);
    const [a, b] = [first.commands[0]!, second.commands[0]!];
    expect(b.cacheHit).toBe(true);
    expect(Buffer.compare(b.stdout, a.stdout)).toBe(0);
    expect(Buffer.compare(b.stderr, a.stderr)).toBe(0);
    expect(b.durationMs).toBe(Math.round(a.durationMs));
    // A third real run prints other random bytes: the replay did not come from running it again.
    const fresh = await verify(f, ws, { cache: null });
    expect(fresh.commands[0]!.stdout.equals(a.stdout)).toBe(false);
  });

  it('R-27 a changed tree is a miss', async () => {
    const f = await fixture();
    expect((await verify(f, await workspace(f, 0))).commands[0]!.cacheHit).toBe(false);
    const other = await verify(f, await workspace(f, 1));
    expect(other.passed).toBe(true);
    expect(other.commands[0]!.cacheHit).toBe(false);
  });

  it('R-27 a changed command (argv) is a miss', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    await verify(f, ws);
    const changed = await verify(f, ws, { commands: [[...RANDOM, 'extra-arg']] });
    expect(changed.passed).toBe(true);
    expect(changed.commands[0]!.cacheHit).toBe(false);
  });

  it('R-27 a changed trusted environment is a miss', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    await verify(f, ws);
    const changed = await verify(f, ws, { env: { ...ENV, TZ: 'UTC' } });
    expect(changed.commands[0]!.cacheHit).toBe(false);
    // The same environment in another key order is the same environment (canonical SHA-256).
    const reordered = await verify(f, ws, { env: { LANG: ENV.LANG, PATH: ENV.PATH } });
    expect(reordered.commands[0]!.cacheHit).toBe(true);
  });

  it('R-27 a changed cache policy version is a miss', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    await verify(f, ws);
    const v2 = await verify(f, ws, { cache: new VerificationCache(f.cacheDir, { policyVersion: CACHE_POLICY_VERSION + 1 }) });
    expect(v2.commands[0]!.cacheHit).toBe(false);
  });

  it('R-27 a failed command is never cached: the next run is a miss and runs again', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const failing = ['node', '-e', 'process.stdout.write("x" + Math.random()); process.exit(3)'];
    const a = await verify(f, ws, { commands: [failing] });
    expect(a.passed).toBe(false);
    expect(a.reason).toMatch(/exited with 3/);
    const b = await verify(f, ws, { commands: [failing] });
    expect(b.commands[0]!.cacheHit).toBe(false);
    expect(b.commands[0]!.stdout.equals(a.commands[0]!.stdout)).toBe(false);
    expect(entryFiles(f)).toEqual([]);
  });

  it('R-26/R-27 a command that leaves a `sleep` child running fails, is reaped, and is never cached', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const leaves = ['sh', '-c', 'sleep 30 & echo started'];
    const started = Date.now();
    const a = await verify(f, ws, { commands: [leaves] });
    expect(a.passed).toBe(false);
    expect(a.commands[0]!.exitCode).toBe(0);
    expect(a.commands[0]!.leftover).toBe(true);
    expect(a.reason).toMatch(/left processes behind/);
    expect(Date.now() - started).toBeLessThan(10_000); // the sleep was killed, not waited for
    const b = await verify(f, ws, { commands: [leaves] });
    expect(b.commands[0]!.cacheHit).toBe(false);
    expect(entryFiles(f)).toEqual([]);
  });

  it('R-27 a dirty workspace is never a hit, and a command that dirties it is never stored', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    await verify(f, ws); // a pass is cached for this tree
    writeFileSync(join(ws.workspace, 'stray.txt'), 'not in the tree\n');
    const dirty = await verify(f, ws);
    expect(dirty.passed).toBe(false);
    expect(dirty.cleanBefore).toBe(false);
    expect(dirty.commands).toEqual([]); // no hit was replayed on a dirty workspace

    const f2 = await fixture();
    const ws2 = await workspace(f2, 0);
    const dirties = ['node', '-e', 'require("fs").writeFileSync("made-by-verify.txt", "x")'];
    const run = await verify(f2, ws2, { commands: [dirties] });
    expect(run.passed).toBe(false);
    expect(run.cleanAfter).toBe(false);
    expect(entryFiles(f2)).toEqual([]);
  });

  it('R-27 a corrupt entry (one byte changed) is a miss and is removed', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const first = await verify(f, ws);
    const [entry] = entryFiles(f);
    const bytes = readFileSync(entry!, 'utf8');
    // Same length, valid JSON, one character of the stored stdout changed.
    writeFileSync(entry!, bytes.replace(/"stdout":"(.)/, (_m, c: string) => `"stdout":"${c === 'A' ? 'B' : 'A'}`));
    const cache = new VerificationCache(f.cacheDir);
    const again = await verify(f, ws, { cache });
    expect(again.commands[0]!.cacheHit).toBe(false);
    expect(again.commands[0]!.stdout.equals(first.commands[0]!.stdout)).toBe(false);
    expect(cache.stats().corruptRemoved).toBe(1);
    // The corrupt file is gone; the fresh pass was stored in its place.
    expect(entryFiles(f)).toHaveLength(1);
    expect(entryFiles(f)[0]).not.toBe(entry);
  });

  it('R-32 a forged entry (right key, right address, no valid MAC) is a miss, is removed and counted', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const cache = new VerificationCache(f.cacheDir);
    const identity = { tree: ws.tree, argv: RANDOM, envSha256: trustedEnvSha256(ENV), argvFiles: {} };
    const { key } = cache.keyOf(identity);
    // What an attacker who knows the format but not the host's key writes: a self-addressed pass.
    const forged = { key, tree: ws.tree, argv: RANDOM, envSha256: identity.envSha256, argvFiles: {}, policyVersion: CACHE_POLICY_VERSION, exitCode: 0 as const, durationMs: 1,
      stdout: Buffer.from('forged pass').toString('base64'), stderr: '', mac: '0'.repeat(64) };
    const bytes = entryBytes(forged);
    const address = sha256Hex(bytes);
    mkdirSync(join(f.cacheDir, 'entries'), { recursive: true });
    mkdirSync(join(f.cacheDir, 'keys'), { recursive: true });
    writeFileSync(join(f.cacheDir, 'entries', address), bytes);
    writeFileSync(join(f.cacheDir, 'keys', key), `${address}\n`);
    expect(cache.verify().problems[0]?.problem).toMatch(/fails authentication/);
    const run = await verify(f, ws, { cache });
    expect(run.commands[0]!.cacheHit).toBe(false);
    expect(run.commands[0]!.stdout.toString()).not.toBe('forged pass');
    expect(existsSync(join(f.cacheDir, 'entries', address))).toBe(false);
    expect(cache.stats().forgedRemoved).toBe(1);
    // Lifetime counts outlive the process (persisted with the cache).
    expect(new VerificationCache(f.cacheDir).stats()).toMatchObject({ forgedRemoved: 1, misses: 1, stored: 1 });
    // An entry made under another host's key fails the same way.
    const other = new VerificationCache(join(tempDir('lb-other-cache-'), 'cache'));
    other.store(identity, { stdout: Buffer.from('x'), stderr: Buffer.alloc(0), durationMs: 1 });
    const otherKey = readdirSync(join(other.dir, 'keys'))[0]!;
    const otherAddress = readFileSync(join(other.dir, 'keys', otherKey), 'utf8').trim();
    writeFileSync(join(f.cacheDir, 'entries', otherAddress), readFileSync(join(other.dir, 'entries', otherAddress)));
    writeFileSync(join(f.cacheDir, 'keys', otherKey), `${otherAddress}\n`);
    expect(new VerificationCache(f.cacheDir).lookup(identity)).toBeNull();
    expect(statSync(join(f.cacheDir, 'hmac.key')).mode & 0o777).toBe(0o600);
  });

  it('R-27 a verification script outside the tree is part of the key: changing it is a miss', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    const script = join(tempDir('lb-script-'), 'check.js');
    writeFileSync(script, 'process.stdout.write("v1 " + Math.random())');
    const cmd = ['node', script];
    expect((await verify(f, ws, { commands: [cmd] })).commands[0]!.cacheHit).toBe(false);
    expect((await verify(f, ws, { commands: [cmd] })).commands[0]!.cacheHit).toBe(true);
    writeFileSync(script, 'process.stdout.write("v2 " + Math.random())');
    const changed = await verify(f, ws, { commands: [cmd] });
    expect(changed.commands[0]!.cacheHit).toBe(false);
    expect(changed.commands[0]!.stdout.toString()).toMatch(/^v2 /);
  });

  it('R-27 a truncated entry is a miss and is removed', async () => {
    const f = await fixture();
    const ws = await workspace(f, 0);
    await verify(f, ws);
    const [entry] = entryFiles(f);
    writeFileSync(entry!, readFileSync(entry!).subarray(0, 40));
    const cache = new VerificationCache(f.cacheDir);
    expect(cache.verify().ok).toBe(false);
    const again = await verify(f, ws, { cache });
    expect(again.commands[0]!.cacheHit).toBe(false);
    expect(cache.stats().corruptRemoved).toBe(1);
    expect(cache.verify()).toMatchObject({ ok: true, checked: 1 });
  });

  it('R-25/R-27 the git binding integrates and verifies through the cache: the second job on the same tree is a hit', async () => {
    const f = await fixture();
    const cache = new VerificationCache(f.cacheDir);
    const port = gitBinding({
      repo: f.user, integratorRepo: f.repo, worktreesDir: join(f.user, '.longbuild', 'worktrees'), workspacesDir: f.workspaces, indexDir: join(f.user, '.longbuild', 'index'),
      verifyEnv: ENV, verifyTimeoutMs: 20_000, cache, runVerification: directRunner, limits: { maxFileBytes: 1 << 20, protectedPaths: [], verify: [] },
    });
    const c = f.commits[0]!;
    const parent = (await import('../src/adapters/git/git.js')).commitParents;
    const head = (await parent(f.repo, c.commit))[0]!;
    const a = await port.integrateAndVerify('job-1', head, [c.commit], DATE, [RANDOM]);
    const b = await port.integrateAndVerify('job-2', head, [c.commit], DATE, [RANDOM]);
    if (!a.ok || !b.ok) throw new Error('did not apply');
    expect(a.verification.commands[0]!.cacheHit).toBe(false);
    expect(b.verification.commands[0]!.cacheHit).toBe(true);
    expect(b.verification.commands[0]!.stdout.equals(a.verification.commands[0]!.stdout)).toBe(true);
  });
});

describe('verification cache in a build (R-18, R-24, R-27)', () => {
  /** Run helios, crashing right before the first verification result is recorded, then resume. */
  function crashedThenResumed(env: Record<string, string>) {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    const crashed = runCli(['run'], { cwd: repo, env: { ...env, LONGBUILD_CRASH_AT: 'before-append:VerificationFinished:1' } });
    expect(crashed.signal).toBe('SIGKILL');
    expect(cliJson(['run'], { cwd: repo, env }).outcome).toBe('horizon_complete');
    const events = runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
    const receipts = events.filter((e) => e.type === 'IntegrationPromoted').map((e) => e.data.receipt);
    return { repo, events, receipts };
  }

  it('R-27 a verification run before a crash is a hit on resume: the receipt records the hit and the evidence SHAs of the exact cached bytes', () => {
    const { repo, events, receipts } = crashedThenResumed({});
    const first = receipts[0];
    expect(first.nodeIds).toEqual(['catalog-api']);
    expect(first.cacheHit).toBe(true);
    expect(receipts[1].cacheHit).toBe(false);
    const evidence = events.find((e) => e.type === 'VerificationFinished').data.evidence[0];
    expect(evidence.cacheHit).toBe(true);
    expect(first.evidenceSha256s).toEqual([evidence.stdoutSha256, evidence.stderrSha256]);
    // The evidence bytes are the ones the cache holds (stored by the crashed run's real command).
    const stdout = readFileSync(join(repo, '.longbuild', 'evidence', evidence.stdoutSha256));
    expect(sha256Hex(stdout)).toBe(evidence.stdoutSha256);
    expect(stdout.toString()).toMatch(/pass 2/);
    const stats = cliJson(['cache', 'stats'], { cwd: repo });
    // One pass per writable node (the empty base head's tests need no run, R-51); the hit stored nothing new.
    expect(stats.stats.entries).toBe(receipts.length);
  });

  it('R-27 with the cache off the resumed run verifies again and the receipts keep the same shape (cacheHit false)', () => {
    const off = crashedThenResumed({ LONGBUILD_VERIFY_CACHE: 'off' });
    expect(off.receipts.length).toBe(3);
    for (const r of off.receipts) {
      expect(Object.keys(r).sort()).toEqual(Object.keys(ReceiptSchema.shape).sort());
      expect(ReceiptSchema.parse(r).cacheHit).toBe(false);
      expect(r.evidenceSha256s).toHaveLength(2);
    }
    expect(cliJson(['cache', 'stats'], { cwd: off.repo }).stats.entries).toBe(0);
  });

  it('R-27 `cache verify` names a corrupt entry (exit 1) and `cache gc` removes it and unreferenced entries', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run'], { cwd: repo });
    expect(cliJson(['cache', 'verify'], { cwd: repo })).toMatchObject({ ok: true, checked: 3 }); // helios: three writable nodes
    const entries = join(repo, '.longbuild', 'cache', 'entries');
    const victim = join(entries, readdirSync(entries)[0]!);
    writeFileSync(victim, readFileSync(victim).subarray(0, 10));
    const bad = runCli(['cache', 'verify', '--json'], { cwd: repo });
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).problems[0].problem).toMatch(/corrupt or truncated/);
    expect(cliJson(['cache', 'gc'], { cwd: repo })).toMatchObject({ removedKeys: 1, removedEntries: 1, kept: 2 });
    expect(cliJson(['cache', 'verify'], { cwd: repo })).toMatchObject({ ok: true, checked: 2 });
    expect(cliJson(['cache', 'gc', '--max-age-days', '0'], { cwd: repo })).toMatchObject({ removedKeys: 2, kept: 0 });
    expect(cliJson(['cache', 'stats'], { cwd: repo }).stats).toMatchObject({ keys: 0, entries: 0 });
  });
});

describe('a verification sequence is cached and replayed as one unit (issue 14)', () => {
  // A setup command that makes what the next one needs, git-ignored like node_modules/.
  const INSTALL = ['node', '-e', "const fs=require('fs');fs.mkdirSync('dep',{recursive:true});fs.writeFileSync('dep/index.js','module.exports=42')"];
  const USE = ['node', '-e', "if(require('./dep/index.js')!==42)process.exit(1);process.stdout.write('used '+Math.random())"];
  /** A fresh workspace of a tree whose .gitignore names dep/ (as a project's names node_modules/). */
  async function ignoredWorkspace(f: Fixture, name: string) {
    const { repo, head, wt, ws } = ignoring ??= await (async () => {
      const r = await newRepo();
      const c = await attemptCommit(r.repo, r.wt, 'ig.1', r.head, { '.gitignore': 'dep/\n', 'file.txt': 'x\n' });
      return { repo: r.repo, head: c.commit, wt: r.wt, ws: r.ws };
    })();
    void f; void wt;
    const r = await integrateCandidates(repo, ws, name, head, [head], DATE);
    if (r.kind !== 'applied') throw new Error('fixture did not apply');
    return { workspace: r.workspace, gitDir: r.gitDir, tree: r.tree };
  }
  let ignoring: { repo: string; head: string; wt: string; ws: string } | undefined;
  const run = (f: Fixture, ws: { workspace: string; gitDir: string; tree: string }, commands: string[][], ignoredFiles?: 'allowed' | 'dirty') => verifyWithCache({
    workspace: ws.workspace, gitDir: ws.gitDir, tree: ws.tree, commands, env: ENV, timeoutMs: 20_000, cache: new VerificationCache(f.cacheDir), run: directRunner,
    ...(ignoredFiles ? { ignoredFiles } : {}),
  });

  it('R-27 ignored files an install leaves are allowed between commands and after (ignoredFiles allowed), dirty when asked', async () => {
    const f = await fixture();
    expect(await run(f, await ignoredWorkspace(f, 'i1'), [INSTALL, USE], 'allowed')).toMatchObject({ passed: true });
    const strict = await run(f, await ignoredWorkspace(f, 'i2'), [INSTALL, USE], 'dirty');
    expect(strict).toMatchObject({ passed: false, reason: expect.stringMatching(/not clean after verification: !! dep\//) });
    expect(strict.commands).toHaveLength(1);
    expect(strict.commands[0]!.cacheHit).toBe(false); // a pass with ignored files allowed is no pass under the strict policy
  });

  it('R-27 when one command of the sequence misses, every command runs (a replayed install would leave the next one without its dependency); all hit: all replayed', async () => {
    const f = await fixture();
    const first = await run(f, await ignoredWorkspace(f, 's1'), [INSTALL, USE], 'allowed');
    expect(first.passed).toBe(true);
    expect(entryFiles(f)).toHaveLength(2);
    // The second command's entry is lost (evicted, gc'd): the install must not be replayed alone.
    const cache = new VerificationCache(f.cacheDir);
    const useKey = cache.keyOf({ tree: (await ignoredWorkspace(f, 'k')).tree, argv: USE, envSha256: trustedEnvSha256(ENV), argvFiles: {}, sequence: { argvs: [INSTALL, USE], index: 1 }, ignoredFiles: 'allowed' }).key;
    expect(existsSync(join(f.cacheDir, 'keys', useKey))).toBe(true);
    rmSync(join(f.cacheDir, 'keys', useKey));
    const second = await run(f, await ignoredWorkspace(f, 's2'), [INSTALL, USE], 'allowed');
    expect(second.passed, second.reason).toBe(true);
    expect(second.commands.map((c) => c.cacheHit)).toEqual([false, false]);
    const third = await run(f, await ignoredWorkspace(f, 's3'), [INSTALL, USE], 'allowed');
    expect(third.commands.map((c) => c.cacheHit)).toEqual([true, true]);
    expect(third.commands[1]!.stdout.toString()).toBe(second.commands[1]!.stdout.toString());
    // The same command alone, or in another sequence, is a different entry: a miss.
    const alone = await run(f, await ignoredWorkspace(f, 's4'), [INSTALL], 'allowed');
    expect(alone.commands[0]!.cacheHit).toBe(false);
  });

  it('R-27 a sequence that fails is stored not even in part', async () => {
    const f = await fixture();
    const failed = await run(f, await ignoredWorkspace(f, 'f1'), [INSTALL, ['node', '-e', 'process.exit(4)']], 'allowed');
    expect(failed).toMatchObject({ passed: false, reason: expect.stringMatching(/exited with 4/) });
    expect(entryFiles(f)).toHaveLength(0);
  });
});
