import { configJsonSchema } from '../../config/config.js';
import type { CommandContext } from '../types.js';

/** The JSON Schema of longbuild.config.json, generated from the zod schema the host validates with. */
export async function run(_ctx: CommandContext): Promise<unknown> {
  return configJsonSchema();
}

export function render(d: unknown): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
