// The spawner (src/adapters/process/spawner.ts): longbuild's own commands (git) are forked by
// small helper processes once one is ready; until then — a helper is a whole Node.js start-up —
// they are forked by the controller itself, so its first git call does not wait for a helper to
// boot (issue 19: start-up to the first step). Checked by who the parent of each command is.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { killGroup, Spawner, type SpawnRequest } from '../src/adapters/process/spawner.js';

const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin' };
const call = (argv: readonly string[]): SpawnRequest => ({ argv, cwd: process.cwd(), env, timeoutMs: 120_000 });
/** The parent pid of the command the spawner runs: this process, or a helper. */
async function parentOf(spawner: Spawner): Promise<number> {
  const r = await spawner.run(call(['sh', '-c', 'echo $PPID']));
  expect(r.code).toBe(0);
  return Number(r.stdout.toString().trim());
}
/** Calls until one is forked by a helper (bounded by count, not by time: a loaded machine starts Node.js slowly). */
async function helperPid(spawner: Spawner): Promise<number> {
  for (let i = 0; i < 3000; i++) {
    const parent = await parentOf(spawner);
    if (parent !== process.pid) return parent;
    await sleep(20);
  }
  throw new Error('no helper became ready in 3,000 calls');
}
const cmdline = (pid: number): string => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');

describe('spawner', () => {
  it('calls made while the helpers start are forked by the controller at once; later calls by a ready helper, a Node.js process running spawner.child.js', async () => {
    const spawner = new Spawner(2);
    // Made in one turn of the event loop: no helper can have said it is ready yet.
    expect(await Promise.all([parentOf(spawner), parentOf(spawner), parentOf(spawner)])).toEqual([process.pid, process.pid, process.pid]);
    const helper = await helperPid(spawner);
    expect(cmdline(helper)).toContain('spawner.child.js');
    // Ready now: every later call goes to a helper.
    for (let i = 0; i < 5; i++) expect(await parentOf(spawner)).not.toBe(process.pid);
  });

  it('a command forked directly while the helpers start is in `groups` while it runs (an interrupt kills it) and dies with its group', async () => {
    const spawner = new Spawner(2);
    const running = spawner.run(call(['sleep', '30']));
    expect(spawner.groups.size).toBe(1);
    const [pgid] = [...spawner.groups];
    expect(cmdline(pgid!)).toContain('sleep');
    killGroup(pgid!);
    const r = await running;
    expect(r.signal).toBe('SIGKILL');
    expect(spawner.groups.size).toBe(0);
  });

  it('a helper killed outright: later calls still run (directly until its replacement is ready)', async () => {
    const spawner = new Spawner(1);
    const helper = await helperPid(spawner);
    process.kill(helper, 'SIGKILL');
    // The death is noticed when its exit event arrives; calls made meanwhile may fail as unknown.
    for (let i = 0; i < 3000; i++) {
      const r = await spawner.run(call(['true']));
      if (r.spawnError === undefined) break;
      await sleep(20);
    }
    const parent = await parentOf(spawner);
    expect(parent).not.toBe(helper);
    const replacement = await helperPid(spawner);
    expect(replacement).not.toBe(helper);
    expect(cmdline(replacement)).toContain('spawner.child.js');
  });
});
