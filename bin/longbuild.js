#!/usr/bin/env node
import { main } from '../dist/adapters/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => { process.stderr.write(`longbuild: internal error: ${err?.stack ?? err}\n`); process.exitCode = 1; },
);
