/**
 * The integrator's own repository: `<build dir>/integrator.git`, a bare repository that
 * only the host writes and no sandboxed process can see. Candidates reach it only as objects the
 * host wrote itself (commitAttempt reads a worker's files as data); the integration ref is moved
 * here by compare-and-set and then published to the user's repository.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { git } from './exec.js';

/**
 * Create the integrator's repository at `dir` (idempotent), holding the user's integration ref
 * and any longbuild attempt branches the user's repository already has (a build from before).
 */
export async function ensureIntegratorRepo(dir: string, userRepo: string, integrationRef: string): Promise<void> {
  if (existsSync(join(dir, 'HEAD'))) return;
  const tmp = `${dir}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(dirname(dir), { recursive: true, mode: 0o700 });
  await git(dirname(dir), ['init', '-q', '--bare', '--template=', '-b', 'main', tmp]);
  mkdirSync(join(tmp, 'info'), { recursive: true });
  // An empty attributes file: the integrator's git calls honour no attribute from elsewhere.
  writeFileSync(join(tmp, 'info', 'attributes'), '');
  // Attempt clones fetch their base head by object id.
  await git(tmp, ['config', 'uploadpack.allowAnySHA1InWant', 'true']);
  await git(tmp, ['fetch', '-q', '--no-tags', userRepo, `+${integrationRef}:${integrationRef}`, '+refs/heads/longbuild/attempts/*:refs/heads/longbuild/attempts/*']);
  renameSync(tmp, dir);
}

/**
 * What the integrator's repository lacks of the integration head `commit`: the
 * commit, or any object of its tree (a deleted `objects/` directory, a pruned pack); null when it
 * has all of it. One listing of the tree and one batch check: O(files of the head), not history.
 */
export async function integratorDamage(dir: string, commit: string): Promise<string | null> {
  const listed = await git(dir, ['rev-list', '--objects', '--no-walk', commit], { allowFail: true });
  if (listed.code !== 0) return `it lacks the integration head ${commit.slice(0, 12)} or objects of its tree`;
  const missing = await missingObjects(dir, listed.stdout.split('\n').map((l) => l.split(' ')[0]!).filter((l) => l !== ''));
  return missing.length === 0 ? null : `it lacks ${missing.length} object${missing.length === 1 ? '' : 's'} of the integration head ${commit.slice(0, 12)} (${missing[0]!.slice(0, 12)}${missing.length > 1 ? ', …' : ''})`;
}

/** The objects of `ids` the repository does not have (one `cat-file --batch-check`). */
export async function missingObjects(repo: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const r = await git(repo, ['cat-file', '--batch-check=%(objectname) %(objecttype)'], { input: `${ids.join('\n')}\n`, allowFail: true });
  return r.stdout.split('\n').filter((l) => l.endsWith(' missing')).map((l) => l.split(' ')[0]!);
}

/** The way out when the integrator's repository is damaged: it is made again from the user's repository. */
export const integratorRecovery = (dir: string): string =>
  `it is the host's own copy: move it aside (mv ${dir} ${dir}.damaged) and run again, and it is made again from the repository's published refs (attempts not yet promoted are made again, recorded)`;

/**
 * Loose objects the integrator's repository may hold before a milestone's close packs them: every
 * attempt and integration writes a few (commits, trees, blobs), ~5 a node, and git's own automatic
 * gc is off for the host's calls (exec.ts). Estimated as git's `gc --auto` does, from one of the
 * 256 fan-out directories (objects/17) times 256.
 */
export const LOOSE_OBJECTS_LIMIT = 1024;

/** git's estimate of a repository's loose objects: the entries of objects/17, times 256. */
export function looseObjectsEstimate(gitDir: string): number {
  try {
    return readdirSync(join(gitDir, 'objects', '17')).filter((f) => /^[0-9a-f]{38,62}$/.test(f)).length * 256;
  } catch {
    return 0;
  }
}

/**
 * Pack the integrator's loose objects once their estimate reaches `limit` (decision 0052):
 * `git repack --geometric=2 -d` rolls them into a pack and keeps the packs in a geometric
 * progression (each at least twice the objects of the next), so a build of any length has few
 * packs and each object is copied O(log n) times; nothing is pruned. Returns whether it packed.
 */
export async function packLooseObjects(gitDir: string, limit = LOOSE_OBJECTS_LIMIT): Promise<boolean> {
  if (!existsSync(gitDir) || looseObjectsEstimate(gitDir) < limit) return false;
  await git(gitDir, ['repack', '--geometric=2', '-d', '-q']);
  return true;
}
