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
  schema: {
    summary: 'print the JSON Schema of what agents speak (proposal, packet, planner-input) or of the config',
    help: 'longbuild schema proposal|packet|planner-input|config\n  JSON Schema (draft 2020-12) generated from the zod schemas the host uses:\n  proposal       what a planner prints (validated by the host before anything is recorded)\n  packet         what a worker gets on stdin (an agent preset: in its prompt)\n  planner-input  what a planner gets on stdin\n  config         longbuild.config.json (same as config-schema)\n  Copies live in schemas/ of the package.\nexample: longbuild schema packet > work-packet.schema.json',
    load: () => import('./commands/schema.js'),
  },
  completion: {
    summary: 'print a shell completion script (bash or zsh) for commands, flags and actions',
    help: 'longbuild completion bash|zsh\n  Completes command names, each command\'s flags and its actions (cache stats|verify|gc, schema ...),\n  and file names after --dir, --repo, --config, --request and the like.\nexamples: longbuild completion bash > ~/.local/share/bash-completion/completions/longbuild\n          echo \'source <(longbuild completion zsh)\' >> ~/.zshrc',
    load: () => import('./commands/completion.js'),
  },
  demo: {
    summary: 'the built-in example build (a small JS library, 4 milestones, 16 nodes), end to end',
    help: 'longbuild demo [DIR]\n  Builds "textkit" in DIR (default: a new temporary directory): horizon sealed, nodes\n  implemented and integrated with real node:test verification, one failed attempt revised,\n  checkpoints, compaction, one renewal, horizon_complete. Deterministic: same tree every time.\nexample: longbuild demo ./textkit && cd textkit && longbuild status',
    load: () => import('./commands/demo.js'),
  },
  init: {
    summary: 'create a build from a blueprint, or from a request and a config of real commands',
    help: 'longbuild init --blueprint FILE [--log SPEC]\nlongbuild init --request FILE [--config FILE] [--log SPEC]\n  Creates the git repository if absent (with an empty initial commit), the build directory\n  (--dir, default <repo>/.longbuild) and the first event.\n  --blueprint FILE  scripted planner and worker driven by a blueprint (format in docs/cli.md)\n  --request FILE    the project request (a JSON object); planner and worker are the commands of\n                    --config FILE (default <repo>/longbuild.config.json; schema: longbuild config-schema)\n  --log SPEC        where the event log lives: sqlite (default, <dir>/events.db), sqlite:PATH,\n                    postgres:postgres://USER:PASS@HOST:PORT/DB[?schema=NAME] or eventstore:esdb://...;\n                    recorded in <dir>/log.json (default for --request: the config\'s "log")\nexamples: longbuild init --blueprint examples/blueprints/helios.json --repo ./helios\n          longbuild init --request request.json --config longbuild.config.json',
    load: () => import('./commands/init.js'),
  },
  step: {
    summary: 'perform exactly one controller event',
    help: 'longbuild step\n  One controller event (R-17): seal, checkpoint, compact, recover, renew, complete or dispatch.\n  Outcomes: planned, dispatched, integrated, revising, checkpointed, compacted, renewed,\n  recovered, horizon_complete, blocked (exit 1).\n  Holds the controller lease: another controller running exits 3; --standby waits for the lease.\nexample: longbuild step --json',
    load: () => import('./commands/step.js'),
  },
  run: {
    summary: 'advance until the horizon completes, the build blocks or pauses on its budget, or --max-steps',
    help: 'longbuild run [--max-steps N] [--standby] [--progress tty|lines|ndjson|off] [--otel URL]\n  Progress on stderr: a line redrawn on a terminal with the running call\'s elapsed time (tty),\n  one line per step in a pipe or CI log (lines), nothing with --json (off); --json --progress\n  ndjson streams one {"type":"step",...} object per step on stdout, the result last. Exit 0 when complete, paused on its budget\n  (outcome paused: `longbuild budget` raises it) or N steps were taken, 1 when the build is blocked (invalid plan, node out of attempts), 3 when another controller\n  holds the build\'s lease. --standby: wait for the lease instead, and take over when its holder\n  stops (PostgreSQL builds: within LONGBUILD_LEASE_TIMEOUT_MS, default 10000, of its death).\n  --otel URL: stream the build\'s spans (derived from the log) to an OTLP/HTTP collector as steps\n  end, in the background; a collector that fails is skipped with one line (otel export sends them).\nexample: longbuild run --max-steps 10 --json',
    load: () => import('./commands/run.js'),
  },
  status: {
    summary: 'where the build stands',
    help: 'longbuild status [--watch]\n  Graph revision and SHA, integration head, horizon, active milestone, ranked ready wave,\n  in-flight nodes, checkpoints, summaries, planner and worker call counts, where the result is,\n  what the calls spent (total, planner, per milestone; --json: per node too) and the budget.\n  --watch  print it again each time the log moves (one JSON object per line with --json), until\n           the build completes or Ctrl-C\nexample: longbuild status --json',
    load: () => import('./commands/status.js'),
  },
  show: {
    summary: 'time travel: the graph as of a position, graph revision or checkpoint',
    help: 'longbuild show [--at POSITION | --revision N | --checkpoint MILESTONE]\n  The graph (each node\'s state, dependencies and attempts; a summary with what it compacted), the\n  ranked ready wave, the horizon with each milestone\'s status, and the integration head as of that\n  point (default: now).\nexample: longbuild show --revision 3 --json',
    load: () => import('./commands/show.js'),
  },
  land: {
    summary: 'bring the integration head into your branch (fast-forward, or merge)',
    help: 'longbuild land [--into BRANCH]\n  The build\'s result is the integration head (refs/heads/longbuild/integration). land fast-forwards\n  the checked-out branch (or --into BRANCH) to it, or merges it when the branch moved on (only the\n  checked-out branch; a conflict is aborted and nothing changes). Nothing is appended to the log.\nexample: longbuild land --into main',
    load: () => import('./commands/land.js'),
  },
  retry: {
    summary: 'give a blocked node more attempts (and unblock the build)',
    help: 'longbuild retry NODE [--attempts N] [--as NAME]\n  A node that used up its attempts gets N more (default: the build\'s maxAttempts), recorded as a\n  NodeRetried event naming the operator; a build it blocked goes on with `longbuild run`. Its next\n  attempt is told why the last one failed. Holds the controller lease (exit 3 while a run runs).\nexample: longbuild retry api --attempts 2',
    load: () => import('./commands/retry.js'),
  },
  replan: {
    summary: 'ask the planner again when every proposal of a round was refused (unblocks the build)',
    help: 'longbuild replan [--reason TEXT] [--asks N] [--as NAME]\n  A build blocked in planning (the first plan, a renewal or a repair window: every ask refused)\n  asks its planner N more times (default: the build\'s planner.asks), recorded as a PlanningReopened\n  event naming the operator; the planner is told every refusal so far and the reason. Holds the\n  controller lease (exit 3 while a run runs).\nexample: longbuild replan --reason "keep the API milestone to three nodes"',
    load: () => import('./commands/replan.js'),
  },
  approve: {
    summary: 'approve the proposal a build waits on (config "approve": ["plan"])',
    help: 'longbuild approve [--reason TEXT] [--as NAME] | longbuild approve --show\n  A build whose config asks for approval of its plans stops with outcome awaiting_approval once a\n  proposal is valid, before it is sealed or renews the horizon; with approve: ["checkpoint"] after\n  each milestone\'s checkpoint, with "land" before it completes. --show prints what awaits (the\n  proposal, or what changed since the checkpoint before); approve records a ProposalApproved or\n  HeadReviewed naming the operator (the OS user, or --as NAME), and the next `longbuild run` goes on. Holds the controller lease (exit 3 while a run runs).\nexample: longbuild approve --show && longbuild approve --reason "looks right"',
    load: () => import('./commands/approve.js'),
  },
  reject: {
    summary: 'send the proposal a build waits on back to its planner',
    help: 'longbuild reject --reason TEXT [--as NAME]\n  The proposal awaiting approval is refused as if the host had refused it (a ProposalRejected of\n  rule operator, naming the operator): the next `longbuild run` asks the planner again with the\n  reason in its feedback, within the round\'s planner.asks (then `longbuild replan`). A rejected\n  checkpoint or final head (a HeadReviewed) is repaired: the reason is the planner\'s feedback at\n  its next call, and a repair window is planned once no coarse milestone is left.\nexample: longbuild reject --reason "split the API milestone in two"',
    load: () => import('./commands/reject.js'),
  },
  budget: {
    summary: 'set or raise the build\'s spending limits (a paused build goes on)',
    help: 'longbuild budget [--usd N] [--tokens N] [--per-node-usd N] [--per-node-tokens N] [--per-milestone-usd N] [--per-milestone-tokens N] [--reason TEXT]\n  The limits given replace those of the budget in force (the others stay), recorded as a\n  BudgetChanged event naming the operator. A build paused on its budget (run outcome paused) goes\n  on with `longbuild run` once the next call fits; a node blocked on its own limit needs\n  `longbuild retry NODE` too. Holds the controller lease (exit 3 while a run runs).\nexample: longbuild budget --usd 20 --reason "the API milestone is worth it"',
    load: () => import('./commands/budget.js'),
  },
  cancel: {
    summary: 'cancel a node and the nodes that depend on it (and unblock the build)',
    help: 'longbuild cancel NODE [--reason TEXT] [--as NAME]\n  The node and every node that depends on it and is not accepted yet are never worked on again,\n  recorded as one NodeCanceled event naming the operator. A milestone whose nodes are all accepted\n  or canceled is complete (its checkpoint lists the accepted ones); a build they blocked goes on\n  with `longbuild run`. Refused for accepted work and while the node is in flight. Holds the\n  controller lease (exit 3 while a run runs).\nexample: longbuild cancel flaky-e2e --reason "out of scope for this release"',
    load: () => import('./commands/cancel.js'),
  },
  accept: {
    summary: 'run the acceptance commands again on the integration head (and unblock the build)',
    help: 'longbuild accept [--reason TEXT]\n  A build with acceptance commands (config "acceptance") runs them on the head of every milestone\n  checkpoint and completes only when they pass on its result; a failing run goes to the planner as\n  evidence. accept asks for a new run on the head as it is (after fixing what failed outside the\n  code, say), recorded as AcceptanceRequested naming the operator; `longbuild run` makes it.\n  Holds the controller lease (exit 3 while a run runs).\nexample: longbuild accept --reason "the staging database is back"',
    load: () => import('./commands/accept.js'),
  },
  evidence: {
    summary: 'the recorded stdout/stderr of an attempt (NODE.N), a job\'s verification (job-N) or an acceptance run (accept-N)',
    help: 'longbuild evidence ATTEMPT|JOB|RUN [--raw]\n  What an attempt\'s worker printed, or every verification command of a job (or acceptance command of\n  a run) with its exit code and output, from the evidence files the log names (content-addressed in\n  the build directory). Control sequences in it are shown escaped (\\x1b, \\u202e: nothing an agent or a\n  test wrote acts on your terminal); --raw prints the recorded bytes as they are.\nexample: longbuild evidence api.2',
    load: () => import('./commands/evidence.js'),
  },
  ui: {
    summary: 'a local, read-only web viewer of the build: timeline, graph, horizon, events, diffs',
    help: 'longbuild ui [--port N] [--host HOST] [--open]\n  Serves a viewer of the build in this directory at http://127.0.0.1:4177/ (--port 0: any free\n  port) until Ctrl-C: a timeline over log positions (arrow keys step event by event), the work\n  graph at the selected point, its horizon, the event list with each event\'s canonical JSON, hash\n  and evidence, a diff between two points, the chain check, and new events as a run appends them.\n  The point, comparison and node are in the URL. Read-only; answers 127.0.0.1/localhost only\n  unless --host is given. --open starts a browser ($BROWSER, else open on macOS, start on Windows, xdg-open elsewhere). --json prints {"url"} first.\nexample: longbuild ui --open',
    load: () => import('./commands/ui.js'),
  },
  diff: {
    summary: 'what changed between two points of the log',
    help: 'longbuild diff A B [--revision | --checkpoint]\n  Everything that changed from A to B: nodes added, removed, compacted into a summary, state\n  changes, dependencies rewired, attempts, the ready wave, the horizon and checkpoints. A and B are\n  log positions, or graph revisions with --revision, or checkpointed milestones with --checkpoint.\nexamples: longbuild diff 25 26\n          longbuild diff --revision 3 7 --json\n          longbuild diff --checkpoint core release',
    load: () => import('./commands/diff.js'),
  },
  audit: {
    summary: 'export a self-contained audit bundle, or verify one (offline, with plain node)',
    help: 'longbuild audit export --to DIR\nlongbuild audit verify DIR [--key VKEY|FILE] [--expect CHECKPOINT_FILE] [--witness VKEY]... [--allow-unsigned-tail]\nlongbuild audit verifier\n  export: the log (canonical NDJSON), every signed checkpoint, every evidence file and commit the\n  log names with every tree and blob (git.bundle), the driver file, the event schemas (JSON Schema),\n  bundle.json (SHA-256 of every file, the counts) and verify.mjs: one file that needs only Node (R-37).\n  verify: this install\'s checks, one line each: bundle, chain, schemas, keys, checkpoints (signatures,\n  Merkle roots, consistency, witness cosignatures), expect, coverage (every event under a signed\n  checkpoint, R-54: else exit 1 unless --allow-unsigned-tail), evidence, tests, git, graph. Exit 1\n  naming the first failure. The bundle\'s verify.mjs is compared with this install\'s, never run.\n  verifier: the SHA-256 of this install\'s verify.mjs, to compare with a bundle\'s before running it.\nexample: longbuild audit export --to audit-2026-12 && longbuild audit verify audit-2026-12 --key "$VKEY"',
    load: () => import('./commands/audit.js'),
  },
  mcp: {
    summary: 'a Model Context Protocol server (stdio) for the build: its status, log, evidence, provenance; control with --allow-control',
    help: 'longbuild mcp [--allow-control]\n  Speaks MCP on stdin/stdout for the build in --repo/--dir, until the client closes it. Tools:\n  status, show, diff, log (paged), evidence, verify, provenance, otel — each the output of the CLI\n  command with --json. With --allow-control also run (a handle polled with run_status), retry,\n  cancel, approve, reject, replan, each recorded naming the client (mcp:<name>); without it they\n  are refused. Resources longbuild://status and longbuild://log, with subscriptions (a new event\n  in the log is a resources/updated notification).\nexample (Claude Code): claude mcp add longbuild -- longbuild mcp --repo ./myapp',
    load: () => import('./commands/mcp.js'),
  },
  otel: {
    summary: 'the build as OpenTelemetry traces (OTLP), derived from the log',
    help: 'longbuild otel export [--to FILE | --endpoint URL] [--timeout-seconds N]\n  One trace per build: a span for the build, each milestone, planner call, attempt, integration\n  job and verification command, with their attributes (node, attempt, outcome, exit code, tokens\n  and cost; GenAI conventions for model calls). Ids derive from the build id and the log\'s call,\n  attempt and job ids: the same log exports the same bytes. --to FILE writes OTLP/JSON (stdout\n  without either flag); --endpoint posts it to an OTLP/HTTP collector (/v1/traces when the URL has\n  no path; --timeout-seconds, default 10).\nexample: longbuild otel export --endpoint http://localhost:4318',
    load: () => import('./commands/otel.js'),
  },
  provenance: {
    summary: 'the provenance of an integrated commit (in-toto/SLSA in a DSSE envelope, as a git note), and checking it',
    help: 'longbuild provenance COMMIT [--json]\nlongbuild provenance verify COMMIT [--key VKEY|FILE]\nlongbuild provenance publish [--signing-key FILE]\n  COMMIT: which node, attempt, driver and model produced a commit a promotion put on the\n  integration ref, on what base, and what verified it — an in-toto Statement v1 with a SLSA\n  provenance v1 predicate derived from the log — and the DSSE envelope its git note carries\n  (refs/notes/longbuild/provenance). publish: sign the statement of every integrated commit with\n  the build\'s key and write the notes that are missing or differ. verify: the note\'s signature (the\n  key the log records, or --key) and its statement against the log; exit 1 naming what fails.\nexample: longbuild provenance publish && git log --notes=longbuild/provenance longbuild/integration',
    load: () => import('./commands/provenance.js'),
  },
  prove: {
    summary: 'inclusion and consistency proofs against the last signed checkpoint, and their offline check',
    help: 'longbuild prove --position N [--out FILE]\nlongbuild prove --since CHECKPOINT_FILE [--out FILE]\nlongbuild prove --check PROOF_FILE [--key VKEY|FILE]\n  --position N  a c2sp.org/tlog-proof@v1 file: event N (its hashed bytes in the `extra` line), its\n                inclusion proof and the last signed checkpoint (R-34)\n  --since FILE  a consistency proof from a checkpoint you held before to the last signed one\n  --check FILE  verify a proof file offline, against --key (default: the key the build records)\nexample: longbuild prove --position 12 --out e12.tlog-proof && longbuild prove --check e12.tlog-proof --key "$VKEY"',
    load: () => import('./commands/prove.js'),
  },
  witness: {
    summary: 'cosign the build\'s latest checkpoint after checking it extends what this witness saw',
    help: 'longbuild witness cosign --witness-key FILE [--state FILE] [--log-key VKEY] [--name NAME] [--out FILE]\n  Checks the latest signed checkpoint under the log key (--log-key the first time; then the one in\n  the state file), and that it extends the largest tree this witness cosigned (a consistency proof);\n  adds a timestamped Ed25519 cosignature (c2sp.org/tlog-cosignature) to the checkpoint file and\n  records size and root in --state (default FILE.state.json). Refuses a cut log, a split view, a\n  rewritten log or another log key (exit 1). The witness key is created when missing (R-35).\nexample: longbuild witness cosign --witness-key ~/witness.key --log-key "$VKEY"',
    load: () => import('./commands/witness.js'),
  },
  log: {
    summary: 'print the events of the log',
    help: 'longbuild log [--from POSITION] [--type TYPE] [--limit N | --tail N] [--follow]\n  --from P   start at global position P (default 1)\n  --type T   only events of type T (repeatable)\n  --limit N  only the first N of them; --tail N: only the last N\n  --follow   then print each event as it is appended, until BuildCompleted or Ctrl-C (exit 0)\n  --json     one JSON object per line (NDJSON)\nexample: longbuild log --follow --json | jq -c \'{position, type}\'',
    load: () => import('./commands/log.js'),
  },
  verify: {
    summary: 'check the chain, the schemas, the signed checkpoints, the projections, refs and evidence',
    help: 'longbuild verify [--key VKEY|FILE] [--since CHECKPOINT_FILE] [--expect-head SIZE:ROOT]\n  In one read snapshot (a live run raises no false alarm): walks the hash chain and the chain head\n  anchor (R-4); checks every event against the catalogue (R-28); recomputes the Merkle tree (R-34)\n  and checks every signed checkpoint in the build against it and the build\'s key (R-35); the driver\n  file against its pinned SHA-256; every evidence file the log names; the refs (R-33); and the\n  stored projections against a rebuild (R-5). A log rewritten and re-signed under another key is\n  caught only against something from outside the build directory:\n  --key VKEY|FILE            the log\'s verifier key as you obtained it (init prints it)\n  --since CHECKPOINT_FILE    a checkpoint you kept before: the log must still extend it\n  --expect-head SIZE:ROOT    the tree head you expect (root in base64 or hex)\n  Exit 1 and the first bad position when anything is wrong.\nexample: longbuild verify --since saved/80.checkpoint --json',
    load: () => import('./commands/verify.js'),
  },
  fuzz: {
    summary: 'crash a controller at interruption points (real SIGKILL), resume, compare with a clean run',
    help: 'longbuild fuzz (--blueprint FILE | --request FILE --config FILE) [--faults kill,enospc,eio,hang,lease-race,db-down] [--log postgres:URL] [--points all|N] [--seed S] [--jobs J] [--only POINT:K]... [--double [--double-points all|N] [--only-second POINT:K]...] [--random-kill N [--kill-at-ms MS]] [--report FILE] [--minimise-trials N] [--keep-failed] [--start-from auto|stops|start] [--snapshot auto|on|off]\n  A clean run of the build enumerates every interruption point occurrence it passes; for each\n  chosen one (all, or N sampled with seed S) and each fault kind, a child controller in a fresh\n  repository meets the fault there: kill (SIGKILL), enospc / eio (the write there fails: exit 1,\n  one line), hang (stops until its process group is killed), lease-race (a second controller starts\n  while it is frozen there: exit 3, nothing changed), db-down (with --log postgres:URL, every build\n  logged there in a schema of its own through a proxy that takes the database away for 4 s at the\n  point: the run must wait it out). A fresh one resumes to the end (--double: the\n  resume is killed too, at the points it passes); --random-kill N kills N builds at random instants.\n  Accepted nodes, the integration tree, checkpoints, summaries, the ready list at every graph\n  revision, the event types, commits (blueprints) and `verify` must equal the clean run; the effects\n  ledger must show no call made again whose result was recorded; effects started again are counted\n  by kind. --report FILE lists every case and its result. On a failure of a blueprint build, the\n  smallest blueprint and earliest occurrence that still fail are searched for (--minimise-trials,\n  default 20, 0: off) and printed with their command. --only reruns one case (the command printed\n  for each failure). Cases copy the initialised build; with enough cases (auto) or --start-from\n  stops, the build is also run once in stages and a case starts from the latest stop before its\n  point where the clean run stood with nothing half done (checked: it must pass the clean run\n  points in order up to its own, or it runs again from the start). Runs of cases start from a V8\n  start-up snapshot of the CLI built for the campaign (--snapshot; auto: 8 cases or more); the\n  clean run they are compared with starts bin/longbuild.js. Exit 1 if any case failed.\nexample: longbuild fuzz --blueprint test/fixtures/helios.json --faults kill,enospc --points 20 --jobs 2 --report fuzz.json',
    load: () => import('./commands/fuzz.js'),
  },
  cache: {
    summary: 'inspect, check or shrink the verification cache (stats|verify|gc)',
    help: 'longbuild cache stats|verify|gc [--max-age-days N]\n  The verification cache (R-27) under <build dir>/cache: content-addressed passed runs, never\n  authority. stats: keys, entries, bytes. verify: re-check every entry against its address and key\n  (exit 1 on a problem). gc: remove corrupt and dangling files and every entry whose tree no\n  VerificationFinished of the log names or that was not used for N days (default 30; 0: all).\n  LONGBUILD_VERIFY_CACHE=off turns the cache off for a run (receipts keep their shape).\nexample: longbuild cache gc --max-age-days 7 --json',
    load: () => import('./commands/cache.js'),
  },
  fork: {
    summary: 'a new build from a past point of this one, reusing the results whose inputs are unchanged',
    help: 'longbuild fork --at POSITION --to DIR [--blueprint FILE | --request FILE [--config FILE]]\n  Creates a build in DIR (a new git repository, build directory DIR/.longbuild) whose log is this\n  build\'s first POSITION events, verbatim, then a ForkedFrom event naming this build, the position\n  and its hash (R-41). Its repository is a clone of this one with the integration ref as of POSITION.\n  It goes on under this build\'s driver, or the blueprint or request and config given. `longbuild run\n  --repo DIR` then adopts this build\'s recorded result for every planner or worker call whose input\n  (packet or planner input, commits read as their trees, and the call\'s driver) is the same, and\n  makes the others. Needs the build\'s signing key. `longbuild verify` in the fork checks the link.\nexample: longbuild fork --at 120 --to ../helios-b --blueprint helios-b.json && longbuild run --repo ../helios-b',
    load: () => import('./commands/fork.js'),
  },
  export: {
    summary: 'copy the build\'s log, hash chain intact, into another backend (e.g. PostgreSQL)',
    help: 'longbuild export --to SPEC [--switch]\n  Copies every event of the build\'s log into the empty log SPEC (postgres:URL[?schema=NAME],\n  eventstore:URL or sqlite:PATH) exactly as stored: same positions, hashes and head hash. The copy\n  commits page by page; run it again after an interruption and it resumes where the copy stopped\n  (a target holding any other log is refused). Both chains are verified. Holds the controller lease meanwhile. --switch: the build then uses SPEC\n  (recorded in <dir>/log.json); the old log is left as a frozen copy.\nexample: longbuild export --to \'postgres:postgres://lb:pw@db:5432/builds?schema=helios\' --switch',
    load: () => import('./commands/export.js'),
  },
  rebuild: {
    summary: 'drop and rebuild every projection from the log',
    help: 'longbuild rebuild\n  Verifies the chain, then drops every projection table and snapshot and folds the log again, and\n  builds the Merkle tree cache (tree.db) again. A projections.db or tree.db that is not a database\n  any more (a damaged cache) is moved aside to FILE.damaged and made again.\nexample: longbuild rebuild --dir ./.longbuild --json',
    load: () => import('./commands/rebuild.js'),
  },
};
