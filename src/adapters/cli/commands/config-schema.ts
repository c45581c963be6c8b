import { configJsonSchema } from '../../config/config.js';
import type { CommandContext } from '../types.js';
export { render } from './schema.js';

/** The JSON Schema of longbuild.config.json (the same as `schema config`). */
export async function run(_ctx: CommandContext): Promise<unknown> {
  return configJsonSchema();
}
