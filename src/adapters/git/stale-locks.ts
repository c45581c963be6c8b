/**
 * Git lock files a SIGKILLed controller can leave behind: a `git update-ref` killed
 * between creating `<ref>.lock` and renaming it leaves the lock, and every later update of that
 * ref fails; a `git add`/`commit` killed in an attempt worktree leaves its `index.lock`. Called
 * only by the holder of the controller lease, after orphans are fenced, and only for what longbuild
 * owns: refs under refs/heads/longbuild/ and the admin entries of worktrees inside the build
 * directory. Anything else (the user's branches, the main index) is left alone.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { gitCommonDir } from './repo.js';

function walkLocks(dir: string, out: string[]): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      continue;
    }
    if (isDir) walkLocks(p, out);
    else if (name.endsWith('.lock')) out.push(p);
  }
}

const inside = (p: string, dirs: readonly string[]): boolean => dirs.some((d) => p === d || p.startsWith(d.endsWith(sep) ? d : d + sep));

/** Remove stale lock files of longbuild's own refs and worktrees; returns what was removed. */
export async function clearStaleOwnedLocks(repo: string, ownedDirs: readonly string[]): Promise<string[]> {
  const gitDir = await gitCommonDir(repo);
  const locks: string[] = [];
  walkLocks(join(gitDir, 'refs', 'heads', 'longbuild'), locks);
  const adminRoot = join(gitDir, 'worktrees');
  if (existsSync(adminRoot)) {
    for (const name of readdirSync(adminRoot)) {
      let pointsTo: string;
      try {
        pointsTo = resolve(dirname(readFileSync(join(adminRoot, name, 'gitdir'), 'utf8').trim()));
      } catch {
        continue;
      }
      if (!inside(pointsTo, ownedDirs)) continue;
      for (const f of ['index.lock', 'HEAD.lock']) if (existsSync(join(adminRoot, name, f))) locks.push(join(adminRoot, name, f));
    }
  }
  for (const l of locks) rmSync(l, { force: true });
  return locks;
}
