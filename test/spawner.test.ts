// The spawner (src/adapters/process/spawner.ts): longbuild's own commands (git) are forked by
// small helper processes once one is ready; until then — a helper is a whole Node.js start-up —
// they are forked by the controller itself, so its first git call does not wait for a helper to
// boot (issue 19: start-up to the first step); and no helper starts before the controller's own
// forks have cost about what one costs (a short run starts none). Checked by who the parent of
// each command is, and which processes are this one's children.
import { readdirSync, readFileSync } from 'node:fs';
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
/** This process's children running spawner.child.js (the helpers alive now). */
function helperChildren(): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && cmdline(Number(name)).includes('spawner.child.js')) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

describe('spawner', () => {
  it('calls made while the helpers start are forked by the controller at once; later calls by a ready helper, a Node.js process running spawner.child.js', async () => {
    const spawner = new Spawner(2, { forkBudgetMs: 0 });
    // Made in one turn of the event loop: no helper can have said it is ready yet.
    expect(await Promise.all([parentOf(spawner), parentOf(spawner), parentOf(spawner)])).toEqual([process.pid, process.pid, process.pid]);
    const helper = await helperPid(spawner);
    expect(cmdline(helper)).toContain('spawner.child.js');
    // Ready now: every later call goes to a helper.
    for (let i = 0; i < 5; i++) expect(await parentOf(spawner)).not.toBe(process.pid);
  });

  it('a command forked directly while the helpers start is in `groups` while it runs (an interrupt kills it) and dies with its group', async () => {
    const spawner = new Spawner(2, { forkBudgetMs: 0 });
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
    const spawner = new Spawner(1, { forkBudgetMs: 0 });
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

  it('no helper starts while the forks this process made cost less than the budget (a short run starts none); once they cost it, helpers start and take the calls', async () => {
    const before = helperChildren();
    const frugal = new Spawner(2, { forkBudgetMs: 60_000 });
    for (let i = 0; i < 25; i++) expect(await parentOf(frugal)).toBe(process.pid);
    expect(frugal.ownForkMs).toBeGreaterThan(0);
    expect(helperChildren().filter((pid) => !before.includes(pid))).toEqual([]);

    const budget = 2;
    const spawner = new Spawner(2, { forkBudgetMs: budget });
    let calls = 0;
    while (spawner.ownForkMs < budget) {
      expect(helperChildren().filter((pid) => !before.includes(pid))).toEqual([]);
      expect(await parentOf(spawner)).toBe(process.pid);
      if (++calls > 5000) throw new Error(`5,000 forks took only ${spawner.ownForkMs} ms`);
    }
    const helper = await helperPid(spawner);
    expect(cmdline(helper)).toContain('spawner.child.js');
  });
});
