/**
 * The integrator's own repository: `<build dir>/integrator.git`, a bare repository that
 * only the host writes and no sandboxed process can see. Candidates reach it only as objects the
 * host wrote itself (commitAttempt reads a worker's files as data); the integration ref is moved
 * here by compare-and-set and then published to the user's repository.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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
