// Running the CLI as a process, shared by the two ways dist/cli.cjs (bundle-entry.ts) starts:
// from bin/longbuild.js through the code cache (decision 0033), and from a V8 start-up snapshot of
// the CLI (decision 0028).
import { main } from './main.js';
import { installInterruptHandlers } from '../interrupt.js';

/** Run the command `argv` (without node and script) in this process, and exit with its code. */
export function runCli(argv: string[]): void {
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
  main(argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`longbuild: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
