import type { StepResult } from '../../controller/controller.js';
import type { CommandContext } from '../types.js';
import { withBuild } from '../../app/with-build.js';
import { leaseOptions, withControl } from '../../app/control.js';
import type { FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { standby: { type: 'boolean' }, 'signing-key': { type: 'string' } };

/** Perform exactly one controller event. */
export async function run(ctx: CommandContext): Promise<StepResult> {
  return withControl(ctx, (lease) => withBuild(ctx, (s) => s.advance(), leaseOptions(lease)));
}

export function render(d: StepResult): string {
  return `${d.outcome}: ${d.detail}\n  position ${d.position}, graph revision ${d.graphRevision}\n`;
}

export function failure(d: StepResult): string | undefined {
  return d.outcome === 'blocked' ? `build blocked: ${d.reason ?? d.detail}` : undefined;
}
