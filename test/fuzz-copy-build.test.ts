/**
 * A fuzz case's copy of a build (src/adapters/fuzz/copy-build.ts): synchronous, with git's object
 * files hard-linked. What must hold is that a case cannot reach back into the build it was copied
 * from: the copy is the same tree (contents, modes, times), only immutable git objects share
 * inodes, and running the copy to the end leaves every byte of the source as it was — the source
 * then finishes the same build on its own.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { copyBuild } from '../src/adapters/fuzz/copy-build.js';
import { cliJson, runCli, tempDir, twoMilestoneHelios } from './support/cli.js';

/** Every entry under `dir`: relative path → kind, mode, size, mtime, inode and content digest. */
function tree(dir: string): Map<string, { kind: string; mode: number; size: number; mtimeMs: number; ino: number; sha: string }> {
  const out = new Map<string, { kind: string; mode: number; size: number; mtimeMs: number; ino: number; sha: string }>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const st = lstatSync(p);
      const kind = e.isDirectory() ? 'dir' : e.isSymbolicLink() ? 'link' : 'file';
      out.set(relative(dir, p), { kind, mode: st.mode, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, sha: kind === 'file' ? createHash('sha256').update(readFileSync(p)).digest('hex') : '' });
      if (kind === 'dir') walk(p);
    }
  };
  walk(dir);
  return out;
}

/** A git object file: in `objects/xx/` or `objects/pack/` of a git directory. */
const isObject = (path: string): boolean => /(^|\/)(\.git|[^/]*\.git)\/objects\/([0-9a-f]{2}|pack)\/[^/]+$/.test(path);

function startedBuild(): string {
  const dir = tempDir('lb-copy-build-');
  const repo = join(dir, 'repo');
  mkdirSync(repo);
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'base']);
  // A working-tree directory that looks like git's objects: it is the user's, copied, never linked.
  mkdirSync(join(repo, 'assets', 'objects', 'ab'), { recursive: true });
  writeFileSync(join(repo, 'assets', 'objects', 'ab', 'cdef'), 'user data\n');
  cliJson(['init', '--blueprint', twoMilestoneHelios(dir)], { cwd: repo });
  // Part of the build: objects, refs, a log and projections on both sides of the copy.
  const r = runCli(['run', '--json', '--max-steps', '8'], { cwd: repo });
  expect(r.code, r.stderr).toBe(0);
  return repo;
}

describe('a fuzz case copy of a build', () => {
  it('is the same tree (contents, modes, modification times); only git object files share inodes with the source, the user\'s look-alike directory included among the copied', () => {
    const source = startedBuild();
    const copy = copyBuild(source, join(tempDir('lb-copy-build-to-'), 'nested', 'repo'));
    const a = tree(source);
    const b = tree(copy);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    let linked = 0;
    for (const [path, x] of a) {
      const y = b.get(path)!;
      expect({ path, kind: y.kind, mode: y.mode, sha: y.sha }).toEqual({ path, kind: x.kind, mode: x.mode, sha: x.sha });
      if (x.kind === 'file') expect(Math.abs(y.mtimeMs - x.mtimeMs), path).toBeLessThan(1);
      if (x.kind === 'file' && isObject(path)) {
        expect(y.ino, `${path} is linked`).toBe(x.ino);
        linked++;
      } else expect(y.ino, `${path} is a copy`).not.toBe(x.ino);
    }
    expect(linked).toBeGreaterThan(10); // both repositories' objects
    expect(b.get(join('assets', 'objects', 'ab', 'cdef'))!.ino).not.toBe(a.get(join('assets', 'objects', 'ab', 'cdef'))!.ino);
  });

  it('running the copy to the end changes no byte of the source, which then finishes the same build by itself', () => {
    const source = startedBuild();
    const before = tree(source);
    const copy = copyBuild(source, join(tempDir('lb-copy-build-to-'), 'repo'));
    const ran = runCli(['run', '--json'], { cwd: copy });
    expect(ran.code, ran.stderr).toBe(0);
    const after = tree(source);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    for (const [path, x] of before) expect({ path, sha: after.get(path)!.sha, mode: after.get(path)!.mode }).toEqual({ path, sha: x.sha, mode: x.mode });
    const own = runCli(['run', '--json'], { cwd: source });
    expect(own.code, own.stderr).toBe(0);
    const headOf = (repo: string) => cliJson<{ integrationHead: string }>(['status'], { cwd: repo }).integrationHead;
    expect(headOf(source)).toMatch(/^[0-9a-f]{40}$/);
    expect(headOf(source)).toBe(headOf(copy));
    expect(runCli(['verify'], { cwd: source }).code).toBe(0);
    expect(runCli(['verify'], { cwd: copy }).code).toBe(0);
  });

  it('refuses what it cannot copy (a FIFO) in one line naming it', () => {
    const dir = tempDir('lb-copy-build-fifo-');
    mkdirSync(join(dir, 'src'));
    execFileSync('mkfifo', [join(dir, 'src', 'pipe')]);
    expect(() => copyBuild(join(dir, 'src'), join(dir, 'dst'))).toThrow(/cannot copy .*pipe for a fuzz case: not a file, directory or symbolic link/);
  });
});
