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
  'config-schema': {
    summary: 'print the JSON Schema of longbuild.config.json (for editors)',
    help: 'longbuild config-schema\n  The JSON Schema generated from the same zod schema `init --request` validates the config with.\n  Point "$schema" in your config at a saved copy for completion and checking in editors.\nexample: longbuild config-schema > longbuild.config.schema.json',
    load: () => import('./commands/config-schema.js'),
  },
  demo: {
    summary: 'the built-in example build (a small JS library, 4 milestones, 16 nodes), end to end',
    help: 'longbuild demo [DIR]\n  Builds "textkit" in DIR (default: a new temporary directory): horizon sealed, nodes\n  implemented and integrated with real `node --test` verification, one failed attempt revised,\n  checkpoints, compaction, one renewal, horizon_complete. Deterministic: same tree every time.\nexample: longbuild demo ./textkit && cd textkit && longbuild status',
    load: () => import('./commands/demo.js'),
  },
  init: {
    summary: 'create a build from a blueprint, or from a request and a config of real commands',
    help: 'longbuild init --blueprint FILE [--log SPEC]\nlongbuild init --request FILE [--config FILE] [--log SPEC]\n  Creates the git repository if absent (with an empty initial commit), the build directory\n  (--dir, default <repo>/.longbuild) and the first event.\n  --blueprint FILE  scripted planner and worker driven by a blueprint (format in CLI.md)\n  --request FILE    the project request (a JSON object); planner and worker are the commands of\n                    --config FILE (default <repo>/longbuild.config.json; schema: longbuild config-schema)\n  --log SPEC        where the event log lives: sqlite (default, <dir>/events.db), sqlite:PATH,\n                    postgres:postgres://USER:PASS@HOST:PORT/DB[?schema=NAME] or eventstore:esdb://...;\n                    recorded in <dir>/log.json (default for --request: the config\'s "log")\nexamples: longbuild init --blueprint blueprints/helios.json --repo ./helios\n          longbuild init --request request.json --config longbuild.config.json',
    load: () => import('./commands/init.js'),
  },
  step: {
    summary: 'perform exactly one controller event',
    help: 'longbuild step\n  One controller event (R-17): seal, checkpoint, compact, recover, renew, complete or dispatch.\n  Outcomes: planned, dispatched, integrated, revising, checkpointed, compacted, renewed,\n  recovered, horizon_complete, blocked (exit 1).\n  Holds the controller lease: another controller running exits 3; --standby waits for the lease.\nexample: longbuild step --json',
    load: () => import('./commands/step.js'),
  },
  run: {
    summary: 'advance until the horizon completes, the build blocks, or --max-steps',
    help: 'longbuild run [--max-steps N] [--standby]\n  Shows progress on a terminal (stderr). Exit 0 when complete or N steps were taken,\n  1 when the build is blocked (invalid plan, node out of attempts), 3 when another controller\n  holds the build\'s lease. --standby: wait for the lease instead, and take over when its holder\n  stops (PostgreSQL builds: within LONGBUILD_LEASE_TIMEOUT_MS, default 10000, of its death).\nexample: longbuild run --max-steps 10 --json',
    load: () => import('./commands/run.js'),
  },
  status: {
    summary: 'where the build stands',
    help: 'longbuild status\n  Graph revision and SHA, integration head, horizon, active milestone, ranked ready wave,\n  in-flight nodes, checkpoints, summaries, planner and worker call counts.\nexample: longbuild status --json',
    load: () => import('./commands/status.js'),
  },
  show: {
    summary: 'time travel: the graph as of a position, graph revision or checkpoint',
    help: 'longbuild show [--at POSITION | --revision N | --checkpoint MILESTONE]\n  The graph, ready wave and integration head as of that point (default: now).\nexample: longbuild show --revision 3 --json',
    load: () => import('./commands/show.js'),
  },
  diff: {
    summary: 'what changed between two log positions',
    help: 'longbuild diff A B\n  Nodes added, removed and changed state between positions A and B.\nexample: longbuild diff 5 20 --json',
    load: () => import('./commands/diff.js'),
  },
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
  fuzz: {
    summary: 'crash a controller at interruption points (real SIGKILL), resume, compare with a clean run',
    help: 'longbuild fuzz --blueprint FILE [--points all|N] [--seed S] [--jobs J] [--only POINT:K]... [--keep-failed]\n  A clean run of the blueprint enumerates every interruption point occurrence it passes; for each\n  chosen one (all, or N sampled with seed S) a child controller in a fresh repository is SIGKILLed\n  there and a fresh one resumes to the end. Accepted nodes, the integration tree, checkpoints,\n  summaries, the ready list at every graph revision, commits and `verify` must equal the clean run;\n  the effects ledger must show no call made again whose result was recorded. --only reruns one case\n  (the command printed for each failure). Exit 1 if any point failed.\nexample: longbuild fuzz --blueprint blueprints/helios.json --points all --jobs 2',
    load: () => import('./commands/fuzz.js'),
  },
  cache: {
    summary: 'inspect, check or shrink the verification cache (stats|verify|gc)',
    help: 'longbuild cache stats|verify|gc [--max-age-days N]\n  The verification cache (R-27) under <build dir>/cache: content-addressed passed runs, never\n  authority. stats: keys, entries, bytes. verify: re-check every entry against its address and key\n  (exit 1 on a problem). gc: remove corrupt and dangling files and every entry whose tree no\n  VerificationFinished of the log names or that was not used for N days (default 30; 0: all).\n  LONGBUILD_VERIFY_CACHE=off turns the cache off for a run (receipts keep their shape).\nexample: longbuild cache gc --max-age-days 7 --json',
    load: () => import('./commands/cache.js'),
  },
  export: {
    summary: 'copy the build\'s log, hash chain intact, into another backend (e.g. PostgreSQL)',
    help: 'longbuild export --to SPEC [--switch]\n  Copies every event of the build\'s log into the empty log SPEC (postgres:URL[?schema=NAME],\n  eventstore:URL or sqlite:PATH) exactly as stored: same positions, hashes and head hash. Both\n  chains are verified. Holds the controller lease meanwhile. --switch: the build then uses SPEC\n  (recorded in <dir>/log.json); the old log is left as a frozen copy.\nexample: longbuild export --to \'postgres:postgres://lb:pw@db:5432/builds?schema=helios\' --switch',
    load: () => import('./commands/export.js'),
  },
  rebuild: {
    summary: 'drop and rebuild every projection from the log',
    help: 'longbuild rebuild\n  Verifies the chain, then drops every projection table and snapshot and folds the log again.\nexample: longbuild rebuild --dir ./.longbuild --json',
    load: () => import('./commands/rebuild.js'),
  },
};
