import { InterruptedError, LongbuildError, UsageError, type LongbuildErrorCode } from '../../events/errors.js';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GLOBAL_FLAGS, didYouMean, parseArgs } from './args.js';
import { COMMANDS } from './registry.js';
import type { CommandContext } from './types.js';
import { packageVersion } from '../package-files.js';
import { escapeTerminal, withoutRuleIds } from './terminal-text.js';
import { asStorageError } from '../../projections/storage-errors.js';

/** Where the CLI writes and what it sees; tests pass their own. */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Exit codes of docs/cli.md, decided here and nowhere else. */
const EXIT_CODES: Record<LongbuildErrorCode, number> = {
  USAGE: 2,
  CONCURRENCY: 3,
  CORRUPT_LOG: 1,
  VALIDATION: 1,
  REFUSED_TRANSITION: 1,
  NOT_FOUND: 1,
  EFFECT_FAILED: 1,
  STORAGE: 1,
  INTERRUPTED: 130,
};

/** Exit code for an error: typed errors by code, anything else is 1. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof InterruptedError) return err.exitCode;
  return err instanceof LongbuildError ? EXIT_CODES[err.code] : 1;
}

/** Run the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], io: Partial<CliIo> = {}): Promise<number> {
  const out: CliIo = {
    stdout: io.stdout ?? ((t) => void process.stdout.write(t)),
    stderr: io.stderr ?? ((t) => void process.stderr.write(t)),
    cwd: io.cwd ?? process.cwd(),
    env: io.env ?? process.env,
  };
  const verbose = argv.includes('--verbose');
  try {
    return await dispatch(argv, out);
  } catch (thrown) {
    // An I/O failure on a named file is said as one, wherever it came from.
    const err = asStorageError(thrown);
    const code = exitCodeFor(err);
    const message = err instanceof Error ? err.message : String(err);
    // A damaged install (the bundle's SQLite addon loader, scripts/bundle.mjs) says what to run, not "internal error".
    const prefix = err instanceof LongbuildError || (err as { code?: unknown } | null)?.code === 'ERR_LONGBUILD_INSTALL' ? '' : 'internal error: ';
    // The rule a refusal rests on (docs/rules.md) is named with --verbose; the line itself says what to do.
    const line = verbose ? `${prefix}${message}${err instanceof LongbuildError && err.rule ? ` (${err.rule})` : ''}` : withoutRuleIds(`${prefix}${message}`);
    out.stderr(`longbuild: ${escapeTerminal(line)}\n`);
    if (code === 2) out.stderr('run `longbuild --help` for usage\n');
    if (verbose && err instanceof Error && err.stack) out.stderr(`${err.stack}\n`);
    return code;
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const { name, rest } = splitCommand(argv);
  if (name === undefined) {
    if (rest.includes('--version')) {
      io.stdout(`${version()}\n`);
      return 0;
    }
    parseArgs(rest, GLOBAL_FLAGS); // reject unknown flags before printing help
    io.stdout(overview());
    return rest.includes('--help') || rest.includes('-h') ? 0 : 2;
  }
  if (name === 'help') {
    const topic = rest.find((a) => !a.startsWith('-'));
    if (topic === undefined) io.stdout(overview());
    else io.stdout(`${entryOf(topic).help}\n`);
    return 0;
  }
  const entry = entryOf(name);
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(`${entry.help}\n`);
    return 0;
  }
  const mod = await entry.load();
  const parsed = parseArgs(rest, { ...GLOBAL_FLAGS, ...(mod.flags ?? {}) });
  const { min, max } = mod.positionals ?? { min: 0, max: 0 };
  if (parsed.positionals.length < min) throw new UsageError(`${name}: missing argument (see \`longbuild ${name} --help\`)`);
  if (parsed.positionals.length > max) throw new UsageError(`${name}: unexpected argument '${parsed.positionals[max]}'`);
  // Loaded here, not at the top: build-dir pulls in SQLite, and --version/--help must stay fast.
  const { buildPaths } = await import('../build-dir.js');
  // Without --repo/--dir, the build is found as git finds its repository: here or in a directory above (up to the repository's top).
  const found = typeof parsed.flags.repo !== 'string' && typeof parsed.flags.dir !== 'string' && !CREATES_BUILD.has(name) ? buildAbove(io.cwd) : null;
  const paths = buildPaths({
    cwd: io.cwd,
    ...(typeof parsed.flags.repo === 'string' ? { repo: parsed.flags.repo } : found !== null ? { repo: found } : {}),
    ...(typeof parsed.flags.dir === 'string' ? { dir: parsed.flags.dir } : {}),
  });
  // What people read is escaped (agents' and tests' text must not drive the terminal); `--json` and a command's raw mode are not.
  const escaped = parsed.flags.json !== true && mod.rawOutput?.(parsed.flags) !== true;
  // Rule ids go with --verbose; `log` and `evidence` show recorded text as it was recorded.
  const plain = parsed.flags.verbose !== true && !VERBATIM.has(name) ? withoutRuleIds : (t: string) => t;
  const stdout = escaped ? (t: string) => io.stdout(escapeTerminal(plain(t))) : io.stdout;
  const stderr = (t: string) => io.stderr(plain(t));
  const ctx: CommandContext = {
    dir: paths.dir,
    repo: paths.repo,
    cwd: io.cwd,
    json: parsed.flags.json === true,
    verbose: parsed.flags.verbose === true,
    flags: parsed.flags,
    positionals: parsed.positionals,
    env: io.env,
    ...(typeof parsed.flags.dir === 'string' ? { explicitDir: paths.dir } : {}),
    ...(parsed.flags.standby === true ? { standby: true } : {}),
    ...(typeof parsed.flags['signing-key'] === 'string' ? { signingKey: parsed.flags['signing-key'] } : {}),
    ...(typeof parsed.flags.as === 'string' ? { operator: parsed.flags.as } : {}),
    stderr,
    stdout,
  };
  const data = await mod.run(ctx);
  const rendered = ctx.json ? (mod.renderJson ? mod.renderJson(data, ctx) : `${JSON.stringify(data)}\n`) : mod.render(data, ctx);
  writeChunked(stdout, rendered);
  const failure = mod.failure?.(data);
  if (failure !== undefined) {
    io.stderr(`longbuild: ${escapeTerminal(plain(failure))}\n`);
    return 1;
  }
  return 0;
}

/** Commands whose output is recorded text or a document (a schema, a proof, a script), shown as it is (rule ids and all). */
const VERBATIM: ReadonlySet<string> = new Set(['log', 'evidence', 'schema', 'config-schema', 'completion', 'provenance', 'prove', 'export', 'audit']);

/** Commands that make a build where they are asked (never one found above). */
const CREATES_BUILD: ReadonlySet<string> = new Set(['init', 'demo', 'config-schema', 'schema', 'completion', 'fuzz']);

/** The nearest directory from `cwd` up that holds a build (`.longbuild`), not past the repository's top (`.git`); null when none. */
export function buildAbove(cwd: string): string | null {
  for (let d = cwd; ; d = dirname(d)) {
    if (existsSync(join(d, '.longbuild'))) return d;
    if (existsSync(join(d, '.git')) || dirname(d) === d) return null;
  }
}

/** The command is the first argument that is neither a flag nor a global flag's value. */
export function splitCommand(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a.startsWith('-')) {
      const flag = a.startsWith('--') && !a.includes('=') ? GLOBAL_FLAGS[a.slice(2)] : undefined;
      if (flag && flag.type !== 'boolean') i += 1;
      continue;
    }
    return { name: a, rest: [...argv.slice(0, i), ...argv.slice(i + 1)] };
  }
  return { name: undefined, rest: [...argv] };
}

function entryOf(name: string): (typeof COMMANDS)[string] {
  const entry = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!entry) {
    const hint = didYouMean(name, Object.keys(COMMANDS));
    throw new UsageError(`unknown command '${name}'${hint !== '' ? hint : ` (commands: ${Object.keys(COMMANDS).sort().join(', ')})`}`);
  }
  return entry;
}

function overview(): string {
  const names = Object.keys(COMMANDS).sort();
  const width = Math.max(...names.map((n) => n.length), 4);
  const lines = names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n]!.summary}`);
  return [
    'longbuild — a durable, event-sourced controller for long agent-driven builds',
    '',
    'usage: longbuild <command> [flags]',
    '',
    'commands:',
    ...lines,
    '',
    'global flags:',
    '  --dir DIR    build directory (default <repo>/.longbuild)',
    '  --repo DIR   git repository (default: the nearest directory up from here holding a build, not past the repository\'s top; else here)',
    '  --json       machine-readable output on stdout',
    '  --verbose    stack traces on errors',
    '  --help       help for a command: longbuild <command> --help',
    '  --version    print the version',
    '',
    'exit codes: 0 ok, 1 refused or failed, 2 usage error, 3 concurrency conflict, 130/143 interrupted (SIGINT/SIGTERM)',
    '',
  ].join('\n');
}

function version(): string {
  const pkg = { version: packageVersion() };
  return pkg.version;
}

/** Write output in chunks of about 64 KiB, so a million-line log neither builds one huge string nor a million writes. */
function writeChunked(write: (text: string) => void, output: string | Iterable<string>): void {
  if (typeof output === 'string') {
    if (output.length > 0) write(output);
    return;
  }
  let buffer = '';
  for (const piece of output) {
    buffer += piece;
    if (buffer.length >= 65536) {
      write(buffer);
      buffer = '';
    }
  }
  if (buffer.length > 0) write(buffer);
}
