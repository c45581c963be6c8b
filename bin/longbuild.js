#!/usr/bin/env node
// The CLI, bundled by `npm run build` (scripts/bundle.mjs) from src/adapters/cli/entry.ts.
import { fileURLToPath } from 'node:url';

const BUNDLE = new URL('../dist/cli/longbuild.mjs', import.meta.url);
// A checkout that was never built (or built with tsc alone) has no bundle: say so in one line.
import(BUNDLE.href).catch((err) => {
  const missing = err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('longbuild.mjs');
  process.stderr.write(missing
    ? `longbuild: the CLI is not built (${fileURLToPath(BUNDLE)} is missing): run \`npm run build\` in the package\n`
    : `longbuild: internal error: ${err?.stack ?? err}\n`);
  process.exit(1);
});
