/**
 * The call journal lost while a call is in flight (issue 45): a controller killed (real SIGKILL)
 * after its worker ran, `calls/journal` deleted, then a resume. The worker is called again — it
 * must be, nothing kept its outcome — and the log says so: an EffectReinvoked marked `journal:
 * "lost"`, `status` counts both calls, `verify` passes. Real child processes, real files.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

/** A command build of one node whose worker counts its calls in a file outside the repository (the sandbox is off). */
function build(): { repo: string; counter: string } {
  const cfg = tempDir('longbuild-cfg-');
  const counter = join(cfg, 'calls.txt');
  writeFileSync(join(cfg, 'planner.mjs'), "import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: [{ id: 'greet', kind: 'writable', deps: [] }] }], coarse: [] }));\n");
  writeFileSync(join(cfg, 'worker.mjs'), `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nappendFileSync(${JSON.stringify(counter)}, 'called\\n');\nwriteFileSync('greet.txt', 'hello\\n');\n`);
  writeFileSync(join(cfg, 'request.json'), JSON.stringify({ goal: 'greet' }));
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({
    planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off',
  }));
  const repo = userRepo();
  cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, counter };
}

const calls = (counter: string): number => readFileSync(counter, 'utf8').trim().split('\n').length;

describe('the call journal lost with a call in flight (issue 45)', () => {
  it('a worker that ran before the crash, its journal deleted: called again, recorded as re-invoked with the journal lost, counted by status', () => {
    const { repo, counter } = build();
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'after-effect:worker:1' } }).signal).toBe('SIGKILL');
    expect(calls(counter)).toBe(1);
    rmSync(join(repo, '.longbuild', 'calls', 'journal'));
    const r = runCli(['run'], { cwd: repo });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/calls\/journal is missing or was emptied: a call that was in flight may have been made; it is counted as made again/);
    expect(calls(counter)).toBe(2);
    const reinvoked = events(repo).filter((e) => e.type === 'EffectReinvoked').map((e) => e.data);
    expect(reinvoked).toEqual([{ effect: 'worker', key: expect.any(String), journal: 'lost' }]);
    expect(cliJson(['status'], { cwd: repo }).calls.worker).toBe(2);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('the same crash with the journal kept: re-invoked from its mark (no journal field); emptied by hand: in doubt as when deleted', () => {
    const kept = build();
    expect(runCli(['run'], { cwd: kept.repo, env: { LONGBUILD_CRASH_AT: 'after-effect:worker:1' } }).signal).toBe('SIGKILL');
    expect(runCli(['run'], { cwd: kept.repo }).code).toBe(0);
    expect(events(kept.repo).filter((e) => e.type === 'EffectReinvoked').map((e) => e.data)).toEqual([{ effect: 'worker', key: expect.any(String) }]);
    const emptied = build();
    expect(runCli(['run'], { cwd: emptied.repo, env: { LONGBUILD_CRASH_AT: 'after-effect:worker:1' } }).signal).toBe('SIGKILL');
    writeFileSync(join(emptied.repo, '.longbuild', 'calls', 'journal'), '');
    expect(runCli(['run'], { cwd: emptied.repo }).code).toBe(0);
    expect(events(emptied.repo).filter((e) => e.type === 'EffectReinvoked').map((e) => e.data.journal)).toEqual(['lost']);
    expect(calls(emptied.counter)).toBe(2);
  });

  it('a crash before the worker started, journal intact: the call is made once, nothing re-invoked (the journal\'s first line tells it from a lost one)', () => {
    const { repo, counter } = build();
    expect(runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: 'before-effect:worker:1' } }).signal).toBe('SIGKILL');
    expect(runCli(['run'], { cwd: repo }).code).toBe(0);
    expect(calls(counter)).toBe(1);
    expect(events(repo).filter((e) => e.type === 'EffectReinvoked')).toEqual([]);
  });
});
