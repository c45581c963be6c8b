#!/usr/bin/env node
import { main } from '../dist/adapters/cli/main.js';
import { installInterruptHandlers } from '../dist/adapters/interrupt.js';

// Ctrl-C / SIGTERM: the running call's process tree is killed, nothing half-done is recorded,
// and the command exits 130 / 143 naming the position `longbuild run` resumes from.
installInterruptHandlers();

// A reader that stops early (`longbuild log --json | head`) closes the pipe: stop quietly, as
// other command-line tools do, instead of failing on the next write.
process.stdout.on('error', (err) => {
  if (err?.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err) => { process.stderr.write(`longbuild: internal error: ${err?.stack ?? err}\n`); process.exitCode = 1; },
);
