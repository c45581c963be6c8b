import { AGENT_FORMATS, agentFormatJsonSchema, type AgentFormat } from '../../../commands/agent-formats.js';
import { UsageError } from '../../../events/errors.js';
import { configJsonSchema } from '../../config/config.js';
import type { CommandContext } from '../types.js';

export const positionals = { min: 1, max: 1 };

const NAMES = ['proposal', 'packet', 'planner-input', 'config'] as const;

/** The JSON Schema of a format agents speak, or of the config: generated from the zod schema the host uses. */
export async function run(ctx: CommandContext): Promise<unknown> {
  const name = ctx.positionals[0]!;
  if (name === 'config') return configJsonSchema();
  if (name === 'work-packet') return agentFormatJsonSchema('packet');
  if (!(name in AGENT_FORMATS)) throw new UsageError(`schema: unknown format '${name}' (expected: ${NAMES.join(', ')})`);
  return agentFormatJsonSchema(name as AgentFormat);
}

export function render(d: unknown): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
