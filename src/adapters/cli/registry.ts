import type { CommandModule } from './types.js';

export interface CommandEntry {
  /** One line for `longbuild --help`. */
  readonly summary: string;
  /** Usage, flags and an example, for `longbuild <command> --help`. */
  readonly help: string;
  /** Loaded only when the command runs, so `longbuild --version` stays fast. */
  readonly load: () => Promise<CommandModule<any>>;
}

/**
 * Every CLI command. To add one: create commands/<name>.ts exporting a CommandModule's members
 * (run, render, optionally flags/positionals/renderJson/failure) and add one entry here.
 */
export const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  log: {
    summary: 'print the events of the log',
    help: 'longbuild log [--from POSITION] [--type TYPE]\n  --from P   start at global position P (default 1)\n  --type T   only events of type T (repeatable)\n  --json     one JSON object per line (NDJSON)\nexample: longbuild log --from 10 --type BuildBlocked --json',
    load: () => import('./commands/log.js'),
  },
  verify: {
    summary: 'check the hash chain and that rebuilt projections equal the stored ones',
    help: 'longbuild verify\n  Walks the hash chain end to end (R-4), brings the stored projections up to date and compares\n  them with a fresh rebuild (R-5). Exit 1 and the first bad position when anything is wrong.\nexample: longbuild verify --json',
    load: () => import('./commands/verify.js'),
  },
  rebuild: {
    summary: 'drop and rebuild every projection from the log',
    help: 'longbuild rebuild\n  Verifies the chain, then drops every projection table and snapshot and folds the log again.\nexample: longbuild rebuild --dir ./.longbuild --json',
    load: () => import('./commands/rebuild.js'),
  },
};
