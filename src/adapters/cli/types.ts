import type { AppContext } from '../app/context.js';
/** A command-line flag a command accepts besides the global ones. */
export interface FlagSpec {
  readonly type: 'string' | 'int' | 'boolean';
  /** May be given more than once (values collected in an array). */
  readonly repeatable?: boolean;
}

export type FlagValue = string | number | boolean | string[] | undefined;

/**
 * What every command receives: global options resolved, its own flags parsed. It is the use
 * cases' AppContext (src/adapters/app/context.ts) too, filled from the flags.
 */
export interface CommandContext extends AppContext {
  /** Absolute build directory (`--dir`, default `<repo>/.longbuild`). */
  readonly dir: string;
  readonly json: boolean;
  readonly flags: Readonly<Record<string, FlagValue>>;
  readonly positionals: readonly string[];
  /** For output streamed while a command runs (`log --follow`, `run --progress ndjson`); results go through the renderers. */
  readonly stdout: (text: string) => void;
}

/**
 * One CLI command, in its own module under commands/ (loaded lazily). `run` returns data;
 * printing happens at the edge: `render` for people, `renderJson` (default: one JSON document)
 * for `--json`. When `failure` returns a message the CLI prints it on stderr and exits 1.
 */
export interface CommandModule<T = unknown> {
  readonly flags?: Readonly<Record<string, FlagSpec>>;
  /** Allowed number of positional arguments (default none). */
  readonly positionals?: { readonly min: number; readonly max: number };
  run(ctx: CommandContext): Promise<T>;
  render(data: T, ctx: CommandContext): string | Iterable<string>;
  renderJson?(data: T, ctx: CommandContext): string | Iterable<string>;
  failure?(data: T): string | undefined;
  /** True when the flags ask for the bytes as recorded (`evidence --raw`): the text is then not escaped for the terminal. */
  rawOutput?(flags: Readonly<Record<string, unknown>>): boolean;
}
