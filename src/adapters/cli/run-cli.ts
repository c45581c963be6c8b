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

  // Exit explicitly once the command is done: the environment teardown of a natural exit closes
  // any database still open, and closing one whose `-shm` file was made immutable is a SIGBUS
  // instead of the one-line error just printed.
  main(argv).then(
    (code) => exitFlushed(code),
    (err: unknown) => {
      process.stderr.write(`longbuild: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      exitFlushed(1);
    },
  );
}

/**
 * Exit with `code` once everything written to stdout and stderr has gone out. Writes to a file or a
 * terminal are synchronous, but to a pipe they are not: what the pipe's 64 KiB cannot take yet is
 * queued, and `process.exit` dropped it (`longbuild log --json | jq` read 65,536 bytes of a
 * 2 MB log). An empty write's callback runs after every write queued before it.
 */
function exitFlushed(code: number): void {
  let waiting = 2;
  const done = (): void => {
    if (--waiting === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}
