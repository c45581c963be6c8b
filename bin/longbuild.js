#!/usr/bin/env node
// The CLI: dist/cli.cjs, bundled by `npm run build` (scripts/bundle.mjs) from
// src/adapters/cli/bundle-entry.ts, compiled through V8's code cache (decision 0033,
// src/adapters/cli/compile-cache.ts).
import { fileURLToPath } from 'node:url';

const BUNDLE = fileURLToPath(new URL('../dist/cli.cjs', import.meta.url));
import('../dist/adapters/cli/compile-cache.js')
  .then(({ startCli }) => startCli(BUNDLE, process.argv.slice(2), process.env))
  .catch((err) => {
    // A checkout that was never built (or built with tsc alone) has no bundle: say so in one line.
    const missing = (err?.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('compile-cache.js')) || (err?.code === 'ENOENT' && err.path === BUNDLE);
    process.stderr.write(missing
      ? `longbuild: the CLI is not built (${BUNDLE} is missing): run \`npm run build\` in the package\n`
      : `longbuild: internal error: ${err?.stack ?? err}\n`);
    process.exit(1);
  });
