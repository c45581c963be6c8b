// The CLI's process entry (bin/longbuild.js loads its bundle, dist/cli/longbuild.mjs). It imports
// the rest dynamically so that the bundle's entry chunk holds this file alone: a worker thread that
// loads a chunk of shared code (the audit's graph check) must never load, and so run, this.
const [{ main }, { installInterruptHandlers }] = await Promise.all([import('./main.js'), import('../interrupt.js')]).catch((err: unknown) => {
  // A package whose files are not where they belong (an incomplete copy of dist/): one line, no stack.
  process.stderr.write(`longbuild: ${err instanceof Error ? err.message : String(err)} (reinstall the package, or run \`npm run build\` in a checkout)\n`);
  process.exit(1);
});

// Ctrl-C / SIGTERM: the running call's process tree is killed, nothing half-done is recorded,
// and the command exits 130 / 143 naming the position `longbuild run` resumes from.
installInterruptHandlers();

// A reader that stops early (`longbuild log --json | head`) closes the pipe: stop quietly, as
// other command-line tools do, instead of failing on the next write.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err?.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

// Exit explicitly once the command is done (stdout and stderr writes are synchronous on Linux):
// the environment teardown of a natural exit closes any database still open, and closing one
// whose `-shm` file was made immutable is a SIGBUS instead of the one-line error just printed.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`longbuild: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
