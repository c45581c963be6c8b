/**
 * Notifications (issue 46, R-61), through the CLI with real child processes: notifiers that log
 * every notification they get, counted against the log's events; a burst coalesced; a controller
 * killed (real SIGKILL, by the notifier itself) between a delivery and its record delivers again
 * with the same key; a failing notifier retried and never blocking the build.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir, userRepo } from './support/cli.js';
import { events } from './support/outcomes.js';

interface Got { kind: string; key: string; coalesced: number; at: number; events: { position: number; type: string; hash: string }[] }

/** A command build of `nodes` independent nodes; `failOnce` fail their first attempt; notifiers given whole. */
function build(o: { nodes: string[]; failOnce?: string[]; notify: unknown; workerSleepMs?: number }) {
  const cfg = tempDir('longbuild-notify-cfg-');
  writeFileSync(join(cfg, 'planner.mjs'), `import { readFileSync } from 'node:fs';\nreadFileSync(0, 'utf8');\nprocess.stdout.write(JSON.stringify({ detailed: [{ id: 'm1', title: 'one', nodes: ${JSON.stringify(o.nodes)}.map((id) => ({ id, kind: 'writable', deps: [] })) }], coarse: [] }));\n`);
  writeFileSync(join(cfg, 'worker.mjs'), `import { readFileSync, writeFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(0, 'utf8'));
if (${JSON.stringify(o.failOnce ?? [])}.includes(p.nodeId) && p.attempt === 1) process.exit(1);
await new Promise((r) => setTimeout(r, ${o.workerSleepMs ?? 0}));
writeFileSync(p.nodeId + '.txt', 'x\\n');
`);
  writeFileSync(join(cfg, 'request.json'), '{"goal":"notify"}');
  writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({ planner: { command: ['node', join(cfg, 'planner.mjs')] }, worker: { command: ['node', join(cfg, 'worker.mjs')] }, verify: [['true']], sandbox: 'off', notify: o.notify }));
  const repo = userRepo();
  const init = runCli(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo });
  return { repo, cfg, init };
}

/** A notifier logging what it gets to `file`; `extra`: more of its script (it has `n`, the notification). */
function notifier(cfg: string, name: string, extra = ''): { argv: string[]; file: string } {
  const file = join(cfg, `${name}.ndjson`);
  writeFileSync(join(cfg, `${name}.mjs`), `import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
const n = JSON.parse(readFileSync(0, 'utf8'));
appendFileSync(${JSON.stringify(file)}, JSON.stringify({ ...n, at: Date.now() }) + '\\n');
${extra}
`);
  return { argv: ['node', join(cfg, `${name}.mjs`)], file };
}

const got = (file: string): Got[] => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Got) : []);
const logJson = (repo: string) => runCli(['log', '--json'], { cwd: repo }).stdout.trim().split('\n').map((l) => JSON.parse(l) as { position: number; type: string; hash: string; data: Record<string, unknown> });

describe('notifications (issue 46, R-61)', () => {
  it('each failure and the completion are notified once, keyed by their event\'s hash, and recorded as NotificationSent', () => {
    const cfgDir = tempDir('longbuild-notify-n-');
    const n = notifier(cfgDir, 'n');
    const { repo } = build({ nodes: ['a', 'b'], failOnce: ['a'], notify: [{ on: ['failure', 'completed'], command: n.argv, minIntervalSeconds: 0 }] });
    const r = runCli(['run'], { cwd: repo });
    expect(r.code, r.stderr).toBe(0);
    const log = logJson(repo);
    const triggers = log.filter((e) => (e.type === 'AttemptFinished' && e.data.outcome === 'failed') || e.type === 'BuildCompleted');
    expect(triggers.map((e) => e.type)).toEqual(['AttemptFinished', 'BuildCompleted']);
    const deliveries = got(n.file);
    expect(deliveries.map((d) => [d.kind, d.key])).toEqual(triggers.map((e) => [e.type === 'BuildCompleted' ? 'completed' : 'failure', e.hash]));
    expect(deliveries.map((d) => d.events.map((e) => e.position))).toEqual(triggers.map((e) => [e.position]));
    const sent = events(repo).filter((e) => e.type === 'NotificationSent').map((e) => e.data);
    expect(sent).toEqual(triggers.map((e) => ({ notifier: 0, kind: e.type === 'BuildCompleted' ? 'completed' : 'failure', triggers: [e.position], outcome: 'delivered', attempts: 1 })));
    // A run on the finished build delivers nothing again.
    runCli(['run'], { cwd: repo });
    expect(got(n.file)).toHaveLength(2);
    expect(runCli(['verify'], { cwd: repo }).code).toBe(0);
  });

  it('a burst of one kind is coalesced: at most one notification per interval, every trigger in exactly one', async () => {
    const cfgDir = tempDir('longbuild-notify-c-');
    const n = notifier(cfgDir, 'n');
    const { repo } = build({ nodes: ['a', 'b', 'c', 'd'], failOnce: ['a', 'b', 'c', 'd'], notify: [{ on: ['failure'], command: n.argv, minIntervalSeconds: 3 }] });
    expect(runCli(['run'], { cwd: repo }).code).toBe(0);
    // What is left after the run goes out with the next one, once its interval has passed.
    await new Promise((r) => setTimeout(r, 3100));
    runCli(['run'], { cwd: repo });
    const failures = logJson(repo).filter((e) => e.type === 'AttemptFinished' && e.data.outcome === 'failed').map((e) => e.position);
    expect(failures).toHaveLength(4);
    const deliveries = got(n.file);
    expect(deliveries.flatMap((d) => d.events.map((e) => e.position)).sort((x, y) => x - y)).toEqual(failures);
    expect(deliveries.length).toBeLessThan(4);
    expect(deliveries.some((d) => d.coalesced > 1)).toBe(true);
    for (let i = 1; i < deliveries.length; i++) expect(deliveries[i]!.at - deliveries[i - 1]!.at).toBeGreaterThanOrEqual(2900);
  });

  it('a controller killed between a delivery and its record (real SIGKILL) delivers again with the same key; recorded once', () => {
    const cfgDir = tempDir('longbuild-notify-k-');
    const once = join(cfgDir, 'killed');
    const n = notifier(cfgDir, 'n', `if (!existsSync(${JSON.stringify(once)})) { writeFileSync(${JSON.stringify(once)}, ''); process.kill(process.ppid, 'SIGKILL'); }`);
    const { repo } = build({ nodes: ['a'], notify: [{ on: ['completed'], command: n.argv }] });
    expect(runCli(['run'], { cwd: repo }).signal).toBe('SIGKILL');
    expect(events(repo).some((e) => e.type === 'NotificationSent')).toBe(false);
    expect(runCli(['run'], { cwd: repo }).code).toBe(0);
    const deliveries = got(n.file);
    expect(deliveries).toHaveLength(2);
    expect(deliveries[1]!.key).toBe(deliveries[0]!.key);
    expect(deliveries[0]!.key).toBe(logJson(repo).find((e) => e.type === 'BuildCompleted')!.hash);
    expect(events(repo).filter((e) => e.type === 'NotificationSent').map((e) => e.data.outcome)).toEqual(['delivered']);
  });

  it('a failing notifier is retried with back-off and never blocks the build; init refuses a notifier that is not an argv', () => {
    const cfgDir = tempDir('longbuild-notify-f-');
    const n = notifier(cfgDir, 'n', 'process.exit(3);');
    const { repo } = build({ nodes: ['a'], notify: [{ on: ['completed'], command: n.argv }] });
    const r = runCli(['run', '--json'], { cwd: repo });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).outcome).toBe('horizon_complete');
    expect(r.stderr).toMatch(/notifier 0 \(node\) failed 3 times for completed \(exited 3: \); the build goes on/);
    expect(got(n.file)).toHaveLength(3);
    expect(events(repo).filter((e) => e.type === 'NotificationSent').map((e) => e.data)).toEqual([{ notifier: 0, kind: 'completed', triggers: [expect.any(Number)], outcome: 'failed', attempts: 3, reason: 'exited 3: ' }]);
    const notArgv = build({ nodes: ['a'], notify: [{ on: ['completed'], command: 'curl https://example.invalid' }] });
    expect(notArgv.init.code).toBe(1);
    expect(notArgv.init.stderr).toMatch(/notify\.0\.command: /);
    const unknown = build({ nodes: ['a'], notify: [{ on: ['deployed'], command: ['true'] }] });
    expect(unknown.init.stderr).toMatch(/notify\.0\.on\.0: /);
    expect(cliJson(['status'], { cwd: repo }).completed).toBe(true);
  });

  it('property: across random kills, every trigger is delivered at least once and at most once more per crash (oracle: the notifier\'s own log)', async () => {
    const points = ['after-effect:worker', 'before-effect:verify', 'after-effect:promote', 'before-append:NotificationSent', 'before-append:BuildCompleted', 'after-keep:worker'];
    await fc.assert(fc.asyncProperty(
      fc.array(fc.record({ point: fc.constantFrom(...points), n: fc.integer({ min: 1, max: 2 }) }), { minLength: 1, maxLength: 3 }),
      async (kills) => {
        const cfgDir = tempDir('longbuild-notify-p-');
        const n = notifier(cfgDir, 'n');
        const { repo } = build({ nodes: ['a', 'b'], failOnce: ['a'], notify: [{ on: ['failure', 'completed'], command: n.argv, minIntervalSeconds: 0 }] });
        let crashes = 0;
        for (const k of kills) if (runCli(['run'], { cwd: repo, env: { LONGBUILD_CRASH_AT: `${k.point}:${k.n}` } }).signal === 'SIGKILL') crashes += 1;
        const end = runCli(['run'], { cwd: repo });
        expect(end.code, end.stderr).toBe(0);
        const log = logJson(repo);
        const triggers = log.filter((e) => (e.type === 'AttemptFinished' && e.data.outcome === 'failed') || e.type === 'BuildCompleted');
        const deliveries = got(n.file);
        for (const t of triggers) {
          const times = deliveries.filter((d) => d.events.some((e) => e.hash === t.hash)).length;
          expect(times, `${t.type} at ${t.position}`).toBeGreaterThanOrEqual(1);
          expect(times, `${t.type} at ${t.position}`).toBeLessThanOrEqual(1 + crashes);
        }
        // Nothing is delivered that the log does not hold, and every trigger ends recorded.
        expect(deliveries.every((d) => d.events.every((e) => triggers.some((t) => t.hash === e.hash)))).toBe(true);
        expect(cliJson(['status'], { cwd: repo }).notifications.pending).toBe(0);
      },
    ), { numRuns: 6, seed: Number(process.env.FC_SEED ?? 61), verbose: 1 });
  }, 240_000);
});
