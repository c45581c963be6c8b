#!/usr/bin/env node
// The CLI: dist/cli.cjs, bundled by `npm run build` (scripts/bundle.mjs) from
// src/adapters/cli/bundle-entry.ts, compiled through V8's code cache (decision 0033,
// src/adapters/cli/compile-cache.cts). CommonJS (bin/package.json), like its loader, so that a
// command's start does not set up Node.js's ES module loader.
'use strict';
const { join } = require('node:path');

const BUNDLE = join(__dirname, '..', 'dist', 'cli.cjs');
let startCli;
try {
  ({ startCli } = require('../dist/adapters/cli/compile-cache.cjs'));
} catch (err) {
  notBuilt(err?.code === 'MODULE_NOT_FOUND' && String(err.message).includes('compile-cache.cjs'), err);
}
try {
  startCli(BUNDLE, process.argv.slice(2), process.env);
} catch (err) {
  if (err?.path === BUNDLE && err.code !== 'ENOENT' && typeof err.code === 'string') unreadable(err);
  notBuilt(err?.code === 'ENOENT' && err.path === BUNDLE, err);
}

/** A bundle that exists but cannot be read (a directory, no permission): a damaged install, in one line. */
function unreadable(err) {
  process.stderr.write(`longbuild: cannot read the CLI bundle ${BUNDLE} (${err.code}): the install is damaged; reinstall longbuild, or run \`npm run build\` in the package\n`);
  process.exit(1);
}

/** A checkout that was never built (or built with tsc alone) has no bundle: say so in one line. */
function notBuilt(missing, err) {
  process.stderr.write(missing
    ? `longbuild: the CLI is not built (${BUNDLE} is missing): run \`npm run build\` in the package\n`
    : `longbuild: internal error: ${err?.stack ?? err}\n`);
  process.exit(1);
}
