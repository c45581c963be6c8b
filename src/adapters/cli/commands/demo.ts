import { mkdtempSync, writeFileSync, mkdirSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InterruptedError, ValidationError } from '../../../events/errors.js';
import type { StepOutcome } from '../../controller/controller.js';
import { endsRun } from '../../controller/controller.js';
import { demoBlueprint } from '../../demo/demo-blueprint.js';
import { initFromBlueprint } from '../../build-init.js';
import { openBuild } from '../../session.js';
import { readRef, treeOf } from '../../git/git.js';
import { defaultProgressMode, Progress, useColor } from '../progress.js';
import { cliName } from '../cli-name.js';
import type { CommandContext } from '../types.js';

export const positionals = { min: 0, max: 1 };

export interface DemoOutput {
  readonly outcome: StepOutcome;
  readonly steps: number;
  readonly position: number;
  readonly graphRevision: number;
  readonly integrationHead: string | null;
  readonly integrationTree: string | null;
  readonly dir: string;
  readonly checkpoints: string[];
  readonly revisions: number;
  readonly nodes: number;
  readonly cacheHits: number;
  readonly durationMs: number;
  readonly reason?: string;
}

/** The built-in example build, end to end, in a new git repository. */
export async function run(ctx: CommandContext): Promise<DemoOutput> {
  const started = Date.now();
  const dir = ctx.positionals[0] !== undefined ? resolve(ctx.cwd, ctx.positionals[0]) : mkdtempSync(join(tmpdir(), 'longbuild-demo-'));
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new ValidationError(`demo: ${dir} is not empty; give a new or empty directory`);
  mkdirSync(dir, { recursive: true });
  const blueprintPath = join(mkdtempSync(join(tmpdir(), 'longbuild-demo-bp-')), 'textkit.blueprint.json');
  writeFileSync(blueprintPath, `${JSON.stringify(demoBlueprint(), null, 1)}\n`);
  const isTty = process.stderr.isTTY === true;
  if (!ctx.json) ctx.stderr(`longbuild demo: building "textkit" (4 milestones, 16 nodes) in ${dir}\n`);
  const init = await initFromBlueprint(blueprintPath, { repo: dir, env: ctx.env as NodeJS.ProcessEnv });
  if (init.notice !== undefined && !ctx.json) ctx.stderr(`${init.notice}\n`);
  const s = await openBuild({ repo: dir, env: ctx.env as NodeJS.ProcessEnv });
  const progress = new Progress({
    write: ctx.stderr, mode: defaultProgressMode(ctx.json, isTty), color: useColor(ctx.env, isTty), columns: process.stderr.columns ?? 100,
    calls: () => s.controller.callsInFlight(),
  });
  try {
    let steps = 0;
    let outcome: StepOutcome = 'horizon_complete';
    let reason: string | undefined;
    for (;;) {
      progress.begin(s.controller.current);
      const r = await s.advance();
      steps += 1;
      progress.step(r, s.controller.current);
      outcome = r.outcome;
      reason = r.reason;
      if (endsRun(r.outcome)) break;
    }
    progress.finish();
    const st = s.controller.current;
    const head = await readRef(dir, st.build!.integrationRef);
    return {
      outcome, steps, position: st.position, graphRevision: st.graphRevision, integrationHead: head,
      integrationTree: head ? await treeOf(dir, head) : null, dir,
      checkpoints: Object.keys(st.checkpoints), revisions: st.graphRevision, nodes: Object.keys(st.nodes).length,
      cacheHits: progress.cache.hits, durationMs: Date.now() - started,
      ...(reason !== undefined ? { reason } : {}),
    };
  } catch (err) {
    // Interrupted: say where the build stands and how to go on with it.
    if (err instanceof InterruptedError) throw new InterruptedError(err.signal, s.controller.current.position, `\`cd ${dir} && ${cliName()} run\``);
    throw err;
  } finally {
    await s.close();
  }
}

export function render(d: DemoOutput): string {
  const dirArg = d.dir.includes(' ') ? JSON.stringify(d.dir) : d.dir;
  const mid = Math.max(1, Math.floor(d.graphRevision / 2));
  const lb = cliName();
  const explore: [string, string][] = [
    ['git log --oneline longbuild/integration', 'what was integrated'],
    [`${lb} status`, 'where the build stands'],
    [`${lb} show --revision ${mid}`, `time travel to graph revision ${mid}`],
    [`${lb} show --checkpoint ${d.checkpoints[0] ?? 'core'}`, 'the graph as it was checkpointed'],
    [`${lb} diff 1 ${d.position}`, 'what changed'],
    [`${lb} ui --open`, 'the viewer: timeline, graph, events, diffs in a browser'],
    [`${lb} log --type IntegrationPromoted`, 'the integration receipts'],
    [`${lb} verify`, 'chain, signed checkpoints, graph records, projections'],
    [`${lb} audit export --to audit && node audit/verify.mjs`, 'an offline audit bundle, checked with plain node'],
  ];
  const width = Math.max(...explore.map(([c]) => c.length));
  return [
    `${d.outcome === 'horizon_complete' ? 'done' : d.outcome}: ${d.steps} controller events in ${(d.durationMs / 1000).toFixed(1)} s`,
    `  checkpoints: ${d.checkpoints.join(', ')}`,
    `  integration head ${d.integrationHead} (tree ${d.integrationTree})`,
    `  graph revision ${d.graphRevision}, log position ${d.position}`,
    '',
    'explore it:',
    `  cd ${dirArg}`,
    ...explore.map(([c, why]) => `  ${c.padEnd(width)}  # ${why}`),
    '',
  ].join('\n');
}

export function failure(d: DemoOutput): string | undefined {
  return d.outcome === 'blocked' ? `demo blocked: ${d.reason ?? 'see longbuild status'}` : undefined;
}
