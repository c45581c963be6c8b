// The CLI in one CommonJS file: scripts/bundle.mjs makes dist/cli.cjs of this file. Two ways run it.
// - bin/longbuild.js compiles it through V8's code cache (decision 0033, compile-cache.ts) and calls
//   `runCli`: a command's code is not parsed and compiled again at every start.
// - `longbuild fuzz` builds a V8 start-up snapshot of it for the running Node.js
//   (`node --snapshot-blob FILE --build-snapshot dist/cli.cjs`) and starts its cases' runs from it
//   (`node --snapshot-blob FILE run …`, decision 0028): every module is already loaded and
//   evaluated, the schemas built, in the heap the snapshot restores. Building it loads every
//   command's code (the event loop runs until the loads settle, then V8 serialises the heap);
//   nothing is read from the environment, the clock or the working directory while it is built
//   (tested), so a snapshot behaves as a fresh process.
// Packages (pg, the EventStoreDB client, dagre) and better-sqlite3's native addon are required on
// first use in the process that runs (scripts/bundle.mjs makes them lazy; better-sqlite3's
// JavaScript is in the bundle, decision 0053), and each command's modules are evaluated only when
// it runs, as with separate modules.
import * as crypto from 'node:crypto';
import * as fsPromises from 'node:fs/promises';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as timersPromises from 'node:timers/promises';
import * as zlib from 'node:zlib';
import { startupSnapshot } from 'node:v8';
import { COMMANDS } from './registry.js';
import { runCli } from './run-cli.js';
import { splitCommand } from './main.js';
import { packageFile } from '../package-files.js';

/** Where the bundle's lazy packages find their `require` (scripts/bundle.mjs; set when a snapshot starts). */
const LAZY_REQUIRE = Symbol.for('longbuild.snapshot.require');

export { runCli };

/** The command `argv` runs, if it names one: what a code cache has seen (compile-cache.ts). */
export function commandOf(argv: readonly string[]): string | null {
  const { name } = splitCommand(argv);
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? name : null;
}

/**
 * Whether this process builds a start-up snapshot. Node.js takes `--build-snapshot` from its own
 * command line only (not NODE_OPTIONS), so a process without it is not building one and never
 * loads node:v8 to ask (~1.7 ms of every start, decision 0055; the bundle loads it on first use).
 */
const buildingSnapshot = (): boolean => process.execArgv.includes('--build-snapshot') && startupSnapshot.isBuildingSnapshot();

if (buildingSnapshot()) {
  // What the commands load on first use, loaded now: the build directory and the SQLite log
  // (not the PostgreSQL one: its client library is native-optional and loaded when used), and the
  // built-ins the bundle loads on first use that a snapshot can hold (scripts/bundle.mjs).
  for (const builtin of [crypto, fsPromises, os, timersPromises, zlib]) void Object.keys(builtin);
  const loads: Promise<unknown>[] = [
    import('../build-dir.js'), import('../session.js'), import('../log/sqlite-log.js'), import('../log/chain.js'),
    ...Object.values(COMMANDS).map((c) => c.load()),
  ];
  Promise.all(loads).catch((err: unknown) => {
    process.stderr.write(`longbuild: the start-up snapshot cannot load the CLI: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
  startupSnapshot.setDeserializeMainFunction(() => {
    (globalThis as Record<symbol, unknown>)[LAZY_REQUIRE] = createRequire(packageFile('package.json'));
    // `node --snapshot-blob FILE ARGS…` has no script in argv: put bin/longbuild.js where it would be.
    process.argv.splice(1, 0, packageFile('bin', 'longbuild.js'));
    runCli(process.argv.slice(2));
  });
}
