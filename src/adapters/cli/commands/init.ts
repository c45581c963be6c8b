import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../../events/errors.js';
import { initFromBlueprint, initFromRequest } from '../../build-init.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { sessionOptions } from '../../app/context.js';
import { testsStatusLines } from '../status-lines.js';
import type { StatusTests } from '../../app/build-status.js';
import type { InitResult } from '../../build-init.js';

export const flags: Record<string, FlagSpec> = { blueprint: { type: 'string' }, request: { type: 'string' }, config: { type: 'string' }, log: { type: 'string' }, 'signing-key': { type: 'string' } };

export interface InitOutput {
  readonly buildId: string;
  readonly requestSha256: string;
  readonly position: number;
  readonly dir: string;
  readonly driver: 'blueprint' | 'command';
  /** The key that signs the log's checkpoints (R-35), outside the build directory. */
  readonly signingKey: { readonly path: string; readonly created: boolean; readonly vkey: string };
  /** What candidates' tests are judged by (R-48..R-51): the surface detected or configured, the policy, the reports. */
  readonly tests: StatusTests;
}

/** The test policy as init shows it (the head's tests are measured at the first verification). */
function testsOf(r: InitResult, verify: readonly (readonly string[])[]): StatusTests {
  const t = r.tests;
  return {
    surface: t.surface, testChanges: t.testChanges, holdout: t.holdout, head: null, retired: 0,
    commands: verify.map((argv, i) => {
      const rep = t.reports[i] ?? null;
      return { argv, report: rep === null ? null : `${rep.format}${rep.file !== undefined ? ` (${rep.file})` : ''}` };
    }),
  };
}

/** Create a build from a blueprint, or from a request plus a config of real commands. */
export async function run(ctx: CommandContext): Promise<InitOutput> {
  const { blueprint, request, config } = ctx.flags;
  const opts = { ...sessionOptions(ctx), ...(typeof ctx.flags.log === 'string' ? { log: ctx.flags.log } : {}) };
  if (typeof blueprint === 'string') {
    if (request !== undefined || config !== undefined) throw new UsageError('init: give either --blueprint FILE or --request FILE [--config FILE], not both');
    const r = await initFromBlueprint(blueprint, opts);
    if (r.notice !== undefined) ctx.stderr(`${r.notice}\n`);
    return { buildId: r.buildId, requestSha256: r.requestSha256, position: r.position, dir: r.paths.dir, driver: 'blueprint', signingKey: r.signingKey, tests: testsOf(r, r.verify) };
  }
  if (typeof request === 'string') {
    const configPath = typeof config === 'string' ? config : join(ctx.repo, 'longbuild.config.json');
    if (typeof config !== 'string' && !existsSync(configPath)) {
      throw new UsageError(`init: --request needs a config: pass --config FILE or create ${configPath} (see examples/agent-wrapper)`);
    }
    const r = await initFromRequest(request, configPath, opts);
    if (r.notice !== undefined) ctx.stderr(`${r.notice}\n`);
    return { buildId: r.buildId, requestSha256: r.requestSha256, position: r.position, dir: r.paths.dir, driver: 'command', signingKey: r.signingKey, tests: testsOf(r, r.verify) };
  }
  throw new UsageError('init: --blueprint FILE or --request FILE is required (see `longbuild init --help`)');
}

export function render(d: InitOutput): string {
  return `initialised build ${d.buildId} (${d.driver === 'blueprint' ? 'scripted planner and worker' : 'configured planner and worker commands'}) in ${d.dir}\nrequest sha256 ${d.requestSha256}\nsigning key ${d.signingKey.path}${d.signingKey.created ? ' (created; keep it: only it can extend this build)' : ''}; this build signs under its own key, derived from it (R-53)\nverifier key ${d.signingKey.vkey}\n${testsStatusLines(d.tests).slice(0, 3).join('\n')}\nnext: longbuild run   (or longbuild step, one controller event at a time)\n`;
}
