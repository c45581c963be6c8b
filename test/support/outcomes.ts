/** What a user checks after a build, through git and the CLI: what is on the integration ref, what the log says. */
import { execFileSync } from 'node:child_process';
import { runCli } from './cli.js';

export const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

export const INTEGRATION_REF = 'refs/heads/longbuild/integration';

/** The file at `path` on the integration ref, or null when it is not there. */
export function onRef(repo: string, path: string): string | null {
  try {
    return git(repo, 'show', `${INTEGRATION_REF}:${path}`);
  } catch {
    return null;
  }
}

/** Every event of the build's log, as `longbuild log --json` prints it. */
export const events = (repo: string): { type: string; position: number; data: any }[] =>
  runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

/** The nodes the log's promotions put on the integration ref, in order. */
export const promoted = (repo: string): string[] => events(repo).filter((e) => e.type === 'IntegrationPromoted').flatMap((e) => e.data.receipt.nodeIds);
