import { shardValues } from '../src/projections/sharded.js';
import { attemptOf } from '../src/projections/build-state.js';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openBuild } from '../src/adapters/session.js';
import { parseBlueprint } from '../src/adapters/blueprint/blueprint.js';
import { ScriptedPlanner } from '../src/adapters/blueprint/scripted-planner.js';
import { validateProposal } from '../src/commands/horizon.js';
import { ValidationError } from '../src/events/errors.js';
import type { Planner, Worker } from '../src/commands/ports.js';
import { cliJson, HELIOS, tempDir } from './support/cli.js';

const gitIn = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
const helios = () => JSON.parse(readFileSync(HELIOS, 'utf8'));
const TRUSTED = helios().verify as string[][];

/** A helios-shaped build with one milestone (catalog-api only), optionally with extra blueprint fields. */
function smallBuild(extra: Record<string, unknown> = {}, files?: Record<string, string>): string {
  const repo = tempDir();
  const bp = helios();
  bp.milestones = bp.milestones.slice(0, 1);
  if (files) bp.milestones[0].nodes[1].files = files;
  Object.assign(bp, extra);
  writeFileSync(join(repo, 'bp.json'), JSON.stringify(bp));
  cliJson(['init', '--blueprint', join(repo, 'bp.json')], { cwd: repo });
  return repo;
}

describe('trusted verification commands and protected paths (R-26, R-28, R-29)', () => {
  it('R-26 a blueprint node carrying a `verify` field is refused: commands come only from the trusted top-level list', () => {
    const bp = helios();
    bp.milestones[0].nodes[1].verify = [['sh', '-c', 'true']];
    expect(() => parseBlueprint(bp, 'bp.json')).toThrow(ValidationError);
    expect(() => parseBlueprint(bp, 'bp.json')).toThrow(/milestones\[0\]\.nodes\[1\].*unknown field 'verify'/);
  });

  it('R-26 a planner proposal whose node carries a `verify` field is refused, recorded as rejected, and changes no command', async () => {
    const bp = parseBlueprint(helios());
    const inner = new ScriptedPlanner(bp);
    const raw = (await inner.propose({ purpose: 'seal' } as never)) as { detailed: { nodes: Record<string, unknown>[] }[] };
    raw.detailed[0]!.nodes[1]!.verify = [['sh', '-c', 'true']];
    const verdict = validateProposal(raw, { nodes: {}, checkpoints: {} });
    expect(verdict).toMatchObject({ ok: false, rule: 'R-28' });
    expect((verdict as { reason: string }).reason).toMatch(/verify/);

    const repo = tempDir();
    cliJson(['init', '--blueprint', HELIOS], { cwd: repo });
    const planner: Planner = { route: 'scripted:blueprint', propose: async () => raw };
    const s = await openBuild({ repo, planner });
    try {
      const r = await s.advance();
      expect(r.outcome).toBe('blocked');
      expect(r.reason).toMatch(/R-28.*verify/);
      expect(s.controller.current.horizon).toBeNull();
      expect(s.controller.current.build!.verify).toEqual(TRUSTED);
    } finally {
      await s.close();
    }
  });

  it('R-26 a worker cannot add or change a command: extra fields in its result and a changed package.json leave the verified argv as configured', async () => {
    const repo = smallBuild({}, {
      'src/catalog.js': 'module.exports = 1;\n',
      'package.json': JSON.stringify({ scripts: { test: 'rm -rf / --no-preserve-root' } }),
    });
    const sneaky: Worker = {
      async implement(packet, worktree) {
        writeFileSync(join(worktree, 'src-catalog.txt'), 'x\n');
        gitIn(worktree, 'add', '-A');
        gitIn(worktree, '-c', 'user.name=w', '-c', 'user.email=w@x', 'commit', '-q', '-m', 'w', '--date', packet.commitDate);
        return { outcome: 'committed', stdout: '', stderr: '', verify: [['sh', '-c', 'exit 0']] } as never;
      },
    };
    const s = await openBuild({ repo, worker: sneaky });
    try {
      for (let i = 0; i < 4 && !shardValues(s.controller.current.jobs).some((j) => j.status === 'promoted'); i++) await s.advance();
      const jobs = shardValues(s.controller.current.jobs);
      expect(jobs).toHaveLength(1);
      expect(jobs[0]!.verification!.evidence.map((e) => e.argv)).toEqual(TRUSTED);
    } finally {
      await s.close();
    }
  });

  it('R-29 a worker commit touching the build directory (.longbuild/, force-added) is refused before integration', async () => {
    const repo = smallBuild();
    const intruder: Worker = {
      async implement(packet, worktree) {
        mkdirSync(join(worktree, '.longbuild'), { recursive: true });
        writeFileSync(join(worktree, '.longbuild', 'driver.json'), '{}');
        gitIn(worktree, 'add', '-f', '.longbuild/driver.json');
        gitIn(worktree, '-c', 'user.name=w', '-c', 'user.email=w@x', 'commit', '-q', '-m', 'w', '--date', packet.commitDate);
        return { outcome: 'committed', stdout: '', stderr: '' };
      },
    };
    const s = await openBuild({ repo, worker: intruder });
    try {
      await s.advance(); // seal
      const r = await s.advance(); // dispatch catalog-api
      expect(r.outcome).toBe('dispatched');
      const attempt = attemptOf(s.controller.current, 'catalog-api.1')!;
      expect(attempt.status).toBe('failed');
      expect(s.controller.current.nodes['catalog-api']!.state).toBe('revising');
      expect(shardValues(s.controller.current.jobs)).toEqual([]);
      const finished = (await s.log.readAll({ from: 1, limit: 100 })).find((e) => e.type === 'AttemptFinished')!;
      expect((finished.data as { reason: string }).reason).toMatch(/R-29.*\.longbuild\/driver\.json/);
    } finally {
      await s.close();
    }
  });

  it("R-29 a worker commit touching one of the blueprint's protectedPaths is refused", () => {
    const repo = smallBuild({ protectedPaths: ['ci'] }, { 'src/catalog.js': 'module.exports = 1;\n', 'ci/verify.sh': 'exit 0\n' });
    cliJson(['run', '--max-steps', '2'], { cwd: repo });
    const events = execFileSync(process.execPath, [join(import.meta.dirname, '..', 'bin', 'longbuild.js'), 'log', '--json', '--type', 'AttemptFinished'], { cwd: repo, encoding: 'utf8' })
      .trim().split('\n').map((l) => JSON.parse(l));
    expect(events[0].data).toMatchObject({ nodeId: 'catalog-api', outcome: 'failed' });
    expect(events[0].data.reason).toMatch(/R-29.*ci\/verify\.sh/);
  });
});
