/**
 * The integrator's repository damaged (issue 45): its objects deleted mid-build, as a careless
 * `rm` or a failing disk would. `verify` names it with the way out, `run` refuses before recording
 * anything (no raw git error), and the way out — moving it aside — works: it is made again from the
 * user's repository's published refs and the build ends at the tree an undamaged build ends at.
 * Real git repositories, real files.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, HELIOS, runCli, tempDir } from './support/cli.js';
import { events, git, INTEGRATION_REF } from './support/outcomes.js';

describe('the integrator\'s repository damaged (issue 45)', () => {
  it('objects deleted: verify names it and the way out; run refuses with one line, recording nothing; moved aside, the build resumes and ends at the clean tree', () => {
    const clean = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: clean });
    expect(runCli(['run'], { cwd: clean }).code).toBe(0);
    const cleanTree = git(clean, 'rev-parse', `${INTEGRATION_REF}^{tree}`);

    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    expect(runCli(['run', '--max-steps', '6'], { cwd: repo }).code).toBe(0);
    const integrator = join(repo, '.longbuild', 'integrator.git');
    // Every object of the integrator gone (loose and packed), its refs left.
    execFileSync('git', ['gc', '-q'], { cwd: integrator });
    for (const d of readdirSync(join(integrator, 'objects'))) if (d !== 'info') rmSync(join(integrator, 'objects', d), { recursive: true, force: true });
    const v = runCli(['verify'], { cwd: repo });
    expect(v.code).toBe(1);
    expect(v.stderr + v.stdout).toContain(`${integrator} is damaged: it lacks the integration head`);
    expect(v.stderr + v.stdout).toContain(`move it aside (mv ${integrator} ${integrator}.damaged) and run again`);
    const before = events(repo).length;
    const refused = runCli(['run'], { cwd: repo });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/integrator\.git is damaged: it lacks the integration head [0-9a-f]{12}/);
    expect(refused.stderr).not.toMatch(/internal error|fatal:/);
    expect(events(repo)).toHaveLength(before);
    renameSync(integrator, `${integrator}.damaged`);
    const resumed = runCli(['run'], { cwd: repo });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(git(repo, 'rev-parse', `${INTEGRATION_REF}^{tree}`)).toBe(cleanTree);
    // The candidate that was only in the lost repository failed its job, named, and its node was attempted again.
    expect(events(repo).filter((e) => e.type === 'IntegrationFailed').map((e) => e.data.reason)).toEqual([expect.stringMatching(/candidate [0-9a-f]{12} is missing from the integrator's repository \(lost with it/)]);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });
});
