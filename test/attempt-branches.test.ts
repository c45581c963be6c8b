import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';

// Attempt branches are cleaned up once their node is accepted (issue 14): the integrator's
// repository keeps only the branches of work still in progress.

const attemptRefs = (repo: string) => execFileSync('git', ['for-each-ref', '--format=%(refname)', 'refs/heads/longbuild/attempts/'], { cwd: join(repo, '.longbuild', 'integrator.git'), encoding: 'utf8' })
  .trim().split('\n').filter((l) => l !== '');

describe('attempt branches', () => {
  it('an accepted node\'s attempt branches are deleted at its promotion; a finished build keeps none', () => {
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    cliJson(['run', '--max-steps', '2'], { cwd: repo }); // sealed, catalog-api dispatched: its candidate waits
    expect(attemptRefs(repo)).toEqual(['refs/heads/longbuild/attempts/catalog-api.1']);
    cliJson(['run', '--max-steps', '1'], { cwd: repo }); // integrated and accepted
    expect(attemptRefs(repo)).toEqual([]);
    cliJson(['run'], { cwd: repo });
    expect(attemptRefs(repo)).toEqual([]);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a crash between the promotion and the clean-up: the next controller sweeps the branch, records nothing for it, and finishes like an uninterrupted build', () => {
    const clean = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: clean });
    cliJson(['run'], { cwd: clean });
    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    const crashed = runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-append:IntegrationPromoted:1' } });
    expect(crashed.signal).toBe('SIGKILL');
    expect(attemptRefs(repo)).toEqual(['refs/heads/longbuild/attempts/catalog-api.1']);
    cliJson(['run'], { cwd: repo });
    expect(attemptRefs(repo)).toEqual([]);
    const types = (r: string) => runCli(['log', '--json'], { cwd: r }).stdout.trim().split('\n').map((l) => JSON.parse(l).type);
    expect(types(repo)).toEqual(types(clean));
    expect(cliJson(['status'], { cwd: repo }).integrationHead).toBe(cliJson(['status'], { cwd: clean }).integrationHead);
  });
});
