import { spawn, spawnSync } from 'node:child_process';
import { cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cliJson, ROOT, runCli, tempDir } from './support/cli.js';

// Ctrl-C and SIGTERM of a running controller (issue 14): the worker's whole process tree dies with
// the interrupt, nothing it left half-done is recorded, the command says where the build stands
// and exits 130 / 143, and `longbuild run` resumes and finishes.

/** Host PIDs of live processes whose command line contains `token` (sandboxed ones included). */
function processesWith(token: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const state = readFileSync(`/proc/${name}/stat`, 'latin1').split(') ')[1]?.[0];
      if (state === 'Z' || state === 'X') continue;
      if (readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0').includes(token)) out.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

async function until(what: string, ok: () => boolean, deadlineMs = 60_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function events(repo: string): { position: number; type: string; data: Record<string, unknown> }[] {
  return runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l));
}

describe('interrupts: Ctrl-C and SIGTERM of a running build', () => {
  it.each([['SIGINT', 130], ['SIGTERM', 143]] as const)('%s during a worker call kills its process tree, records nothing half-done, exits %i naming the position; run resumes', async (signal, code) => {
    const repo = tempDir();
    const cfg = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
    const worker = readFileSync(join(cfg, 'worker.mjs'), 'utf8');
    // A worker that writes its files, starts a grandchild and hangs: the interrupt must kill both.
    const token = String(40_000 + Math.floor(Math.random() * 9_000));
    writeFileSync(join(cfg, 'worker.mjs'), `${worker}\nimport { spawn, spawnSync } from 'node:child_process';\nspawn('sleep', ['${token}'], { stdio: 'ignore' });\nsetInterval(() => {}, 1000);\n`);
    // The worker's own timeout is an hour: only the interrupt can end its call within this test.
    const config = JSON.parse(readFileSync(join(cfg, 'longbuild.config.json'), 'utf8')) as { worker: { timeoutSeconds: number } };
    config.worker.timeoutSeconds = 3600;
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });

    const child = spawn(process.execPath, [BIN, 'run'], { cwd: repo, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    await until('the worker and its grandchild to run', () => processesWith(token).length > 0);
    child.kill(signal);
    expect(await exited).toBe(code);

    // The tree is gone the moment the command has exited (it waited for the groups to die).
    expect(processesWith(token)).toEqual([]);
    const log = events(repo);
    const last = log[log.length - 1]!;
    expect(stderr).toContain(`longbuild: interrupted by ${signal} at position ${last.position}; nothing half-done was recorded, and \`longbuild run\` resumes`);
    // Nothing half-done: the attempt was started and is not finished, and no commit was made for it.
    const started = log.filter((e) => e.type === 'AttemptStarted');
    expect(started).toHaveLength(1);
    expect(log.filter((e) => e.type === 'AttemptFinished')).toEqual([]);
    const tip = spawnSync('git', ['rev-parse', '--verify', '-q', String(started[0]!.data.branch)], { cwd: repo, encoding: 'utf8' }).stdout.trim();
    expect([String(started[0]!.data.baseHead), '']).toContain(tip); // the attempt branch holds no commit of the killed worker

    // Resume with a worker that finishes: the build completes.
    writeFileSync(join(cfg, 'worker.mjs'), worker);
    const resumed = cliJson(['run'], { cwd: repo });
    expect(resumed.outcome).toBe('horizon_complete');
    const after = events(repo);
    expect(after.slice(0, log.length).map((e) => e.position)).toEqual(log.map((e) => e.position)); // nothing rewritten
    expect(after.filter((e) => e.type === 'EffectReinvoked' && e.data.effect === 'worker')).toHaveLength(1); // the in-doubt call, once
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  }, 240_000);
});
