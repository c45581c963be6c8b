// Module hooks for record-modules.mjs (they run on the loader's own thread).
import { appendFileSync } from 'node:fs';

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const out = process.env.LONGBUILD_RECORD_MODULES;
  if (out) appendFileSync(out, `${resolved.url}\n`);
  return resolved;
}
