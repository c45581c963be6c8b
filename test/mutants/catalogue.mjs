/**
 * Deliberate bugs (issue 15): each is the kind of mistake a property claims to catch, applied to a
 * copy of the code, never to the repository. `node test/mutants/run.mjs` applies each one and runs
 * the tests that must catch it; the fuzzer's own test runs the built CLI of a mutated copy.
 * (Plain JavaScript so that the runner needs no TypeScript loader.)
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');

/**
 * @typedef {{ file: string, find: string, replace: string, js?: { find: string, replace: string } }} Edit
 *   One textual edit: `find` must occur exactly once in `file` (a src path; `js` for the built file where tsc's output differs).
 * @typedef {{ name: string, bug: string, edits: Edit[], caughtBy: string[] }} Mutant
 */

/** @type {readonly Mutant[]} */
export const MUTANTS = [
  {
    name: 'inverted-ranking',
    bug: 'the ready wave ranks the smallest unlock depth first (R-10 inverted)',
    edits: [{ file: 'src/projections/graph.ts', find: 'return (a, b) => index.depth(b) - index.depth(a) ||', replace: 'return (a, b) => index.depth(a) - index.depth(b) ||' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'no-topological-tie-break',
    bug: 'nodes of equal unlock depth are ranked by id alone, ignoring their plan\'s topological order (R-10)',
    edits: [{ file: 'src/projections/graph.ts', find: '|| (topo[a] ?? 0) - (topo[b] ?? 0) ||', replace: '||' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'compaction-drops-boundary-dependency',
    bug: 'the dependents of a compacted milestone lose their edge to its summary (R-21)',
    edits: [{ file: 'src/projections/summaries.ts', find: 'n.deps = [...new Set(n.deps.map((dep) => (removed.has(dep) ? d.summaryId : dep)))];', replace: 'n.deps = n.deps.filter((dep) => !removed.has(dep));' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'skip-adoption',
    bug: 'a resumed controller never adopts an in-doubt outcome: the commit on an attempt branch, a promotion already made (R-18)',
    edits: [
      { file: 'src/commands/decide-step.ts', find: 'if (r.writable && found.found) {', replace: 'if (false && r.writable && found.found) {' },
      { file: 'src/commands/decide-step.ts', find: 'const at = found === null ? -1 : results.indexOf(found);', replace: 'const at = -1;' },
    ],
    // The real-process counterpart: test/fuzz.test.ts runs `longbuild fuzz` on this mutant's CLI and expects it reported.
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'stacked-job-promoted-early',
    bug: 'a speculative job is promoted (or blamed) without waiting for the jobs it is stacked on (issue 16)',
    edits: [{ file: 'src/commands/decide-step.ts', find: 'if (awaited !== undefined) {', replace: 'if (false) {' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'stacked-job-verified-alone',
    bug: 'a speculative job is verified on the head alone, without the candidates of the jobs below it (a blind merge, R-24)',
    edits: [{ file: 'src/commands/decide-step.ts', find: '...(below.length > 0 ? { layers:', replace: '...(false ? { layers:' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'complete-without-acceptance',
    bug: 'a build completes although acceptance failed on its result (issue 16)',
    edits: [{ file: 'src/commands/next-action.ts', find: "hasAcceptance(state) && last !== null && last.status === 'failed' ? acceptanceFailure(last)", replace: "false && hasAcceptance(state) && last !== null && last.status === 'failed' ? acceptanceFailure(last)" }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'promoted-run-ignores-failure',
    bug: 'a run of stacked jobs promoted together takes in a job whose verification failed (R-24)',
    edits: [{ file: 'src/commands/decide-step.ts', find: "next.status !== 'verified' || next.verification?.passed !== true ||", replace: "next.status !== 'verified' ||" }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'fork-reuse-ignores-driver',
    bug: 'a call\'s input digest leaves out its driver: a fork under a changed blueprint adopts the parent\'s outcome for the changed node (R-41)',
    edits: [{ file: 'src/commands/call-input.ts', find: "createHash('sha256').update(`{\"driver\":${canonicalJson(driver)},\"input\":`)", replace: "createHash('sha256').update(`{\"driver\":null,\"input\":`)" }],
    caughtBy: ['test/fork.test.ts'],
  },
  {
    name: 'fork-reuse-ignores-base-head',
    bug: 'a call\'s input digest leaves out the base head: a fork adopts results made on a tree its own base no longer has (R-41)',
    edits: [{ file: 'src/commands/call-input.ts', find: "if ((key === 'sha256' && parentKey === 'graph') || key === 'graphSha256') return undefined;", replace: "if ((key === 'sha256' && parentKey === 'graph') || key === 'graphSha256' || key === 'baseHead' || key === 'integrationHead') return undefined;",
      js: { find: "if ((key === 'sha256' && parentKey === 'graph') || key === 'graphSha256')", replace: "if ((key === 'sha256' && parentKey === 'graph') || key === 'graphSha256' || key === 'baseHead' || key === 'integrationHead')" } }],
    caughtBy: ['test/fork.test.ts'],
  },
  {
    name: 'stored-bytes-hash-unescaped',
    bug: 'the stored-bytes hash writes the stream id unescaped: an event is checked against bytes its canonical hash never covered (R-2, decision 0017)',
    edits: [{ file: 'src/events/envelope.ts', find: 'e.schemaVersion, jsonString(e.streamId), jsonString(e.type)', replace: 'e.schemaVersion, `"${e.streamId}"`, jsonString(e.type)' }],
    caughtBy: ['test/group-commit.test.ts'],
  },
  {
    name: 'effect-before-commit',
    bug: 'an effect starts before the decisions held for the group commit are durable (R-18 write-ahead broken, decision 0017)',
    edits: [{ file: 'src/adapters/controller/controller.ts', find: 'if (changesTheWorld(effect))', replace: 'if (false)' }],
    caughtBy: ['test/controller-faults.test.ts'],
  },
  {
    name: 'kept-outcome-never-flushed',
    bug: "a worker's kept outcome the log does not record yet is not flushed before the world changes (a power loss would lose the only copy, decision 0017)",
    edits: [{ file: 'src/adapters/controller/effects.ts', find: "if (shardGet(state.attempts, attemptId)?.status === 'started') {\n        calls?.flush();", replace: "if (shardGet(state.attempts, attemptId)?.status === 'started') {\n        void calls;",
      js: { find: 'calls?.flush();', replace: 'void calls;' } }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'stop-occurrence-unadjusted',
    bug: "a fuzz case started from a stop asks its child for the point's occurrence counted from the build's start, not from the stop (decision 0019): it strikes a later instant than the case names",
    edits: [{ file: 'src/commands/fuzz-points.ts', find: 'return { at, occurrence: target.occurrence - before, index };', replace: 'return { at, occurrence: target.occurrence + 0 * before, index };' }],
    caughtBy: ['test/fuzz-stops.test.ts'],
  },
  {
    name: 'reading-view-unchecked',
    bug: "a reading command takes the state folded from a view snapshot without checking its graph against the SHA-256 the log recorded for its revision (R-37, decision 0020): a forged view (its own SHA recomputed) is printed",
    edits: [{ file: 'src/adapters/app/state-at.ts', find: '  if (await graphAsRecorded(log, fast)) return fast;', replace: '  if (fast !== null) return fast;', js: { find: 'if (await graphAsRecorded(log, fast))', replace: 'if (fast !== null)' } }],
    caughtBy: ['test/log-audit.test.ts'],
  },
  {
    name: 'graph-index-forgets-dependents',
    bug: "the graph index does not look again at the dependents of a node that became accepted (decision 0021): they never become ready, or stay ready after it is reopened",
    edits: [{ file: 'src/projections/graph-index.ts', find: 'for (const id of satisfactionChanged) for (const child of this.dependents.get(id) ?? []) this.recheckReady(child);', replace: 'void satisfactionChanged;', js: { find: 'for (const id of satisfactionChanged)', replace: 'for (const id of [])' } }],
    caughtBy: ['test/graph-index.test.ts', 'test/step-model-double.test.ts'],
  },
  {
    name: 'graph-index-stale-slice',
    bug: "the graph index keeps the cached canonical bytes of a slice whose node changed state (decision 0021): the graph SHA-256 recorded for a revision is the old graph's",
    edits: [{ file: 'src/projections/graph-index.ts', find: 'this.dropChunk(Math.floor(searchIds(this.ids, id) / CHUNK));', replace: 'void CHUNK;' }],
    caughtBy: ['test/graph-index.test.ts'],
  },
  {
    name: 'graph-index-untracked-delete',
    bug: "the fold's draft does not note a node it deletes (decision 0021): the index carried to the next state still holds the node, in its SHA-256 and its ready set",
    edits: [{
      file: 'src/projections/record-table.ts',
      find: '  private write(id: string, value: T | typeof DELETED): void {\n    this.touched?.add(id);',
      replace: '  private write(id: string, value: T | typeof DELETED): void {\n    if (value !== DELETED) this.touched?.add(id);',
      js: { find: '    write(id, value) {\n        this.touched?.add(id);', replace: '    write(id, value) {\n        if (value !== DELETED) this.touched?.add(id);' },
    }],
    caughtBy: ['test/graph-index.test.ts', 'test/record-table.test.ts'],
  },
  {
    name: 'graph-index-depth-stops-early',
    bug: "the graph index updates the unlock depth of a changed node's dependencies but not further up (decision 0021): the ready wave is ranked on stale depths",
    edits: [{ file: 'src/projections/graph-index.ts', find: '      for (const d of n!.deps) if (!finished(this.records.get(d))) work.push(d);', replace: '      if (seeds.includes(id)) for (const d of n!.deps) if (!finished(this.records.get(d))) work.push(d);', js: { find: 'this.depths.set(id, best);\n            for (const d of n.deps)', replace: 'this.depths.set(id, best);\n            if (seeds.includes(id)) for (const d of n.deps)' } }],
    caughtBy: ['test/graph-index.test.ts'],
  },
  {
    name: 'reading-opens-writer',
    bug: "a reading command opens the build's log with its append path (decision 0022): status and show load the event schemas (zod) they never use, ~40 ms each",
    edits: [{ file: 'src/adapters/app/reading.ts', find: 'openBuildLog(paths, { reading: true })', replace: 'openBuildLog(paths)' }],
    caughtBy: ['test/log-audit.test.ts'],
  },
  {
    name: 'compact-row-metadata-ignored',
    bug: "a compact row's metadata column is not checked (decision 0024): text an attacker writes there goes unnoticed by verify",
    edits: [{ file: 'src/adapters/log/row-codec.ts', find: "  if (metadata !== '') return 'compact row holds text in its metadata column (edited)';\n", replace: '', js: { find: "if (metadata !== '')", replace: 'if (false)' } }],
    caughtBy: ['test/log-tamper.test.ts'],
  },
  {
    name: 'compact-hash-upper-hex',
    bug: "the hash of a compact row is read back as SQLite's upper-case hex (decision 0024): the chain no longer links across forms",
    edits: [{ file: 'src/adapters/log/row-codec.ts', find: "lower(hex(${column}))", replace: "hex(${column})" }],
    caughtBy: ['test/log-row-codec.test.ts'],
  },
  {
    name: 'bulk-appends-compact',
    bug: 'a bulk append is stored in the compact form too (decision 0024): batch throughput would halve',
    edits: [{ file: 'src/adapters/log/sqlite-log.ts', find: 'events.length <= this.compactMax);', replace: 'this.compactMax > 0);' }],
    caughtBy: ['test/log-row-codec.test.ts'],
  },
  {
    name: 'row-names-kept-after-rollback',
    bug: 'a rolled-back append keeps the keys it gave new names (decision 0034): a later row is stored under a key row_names does not hold, and the log no longer reads',
    edits: [{ file: 'src/adapters/log/sqlite-log.ts', find: '      this.names.forget(); // names it added rolled back with it\n', replace: '' }],
    caughtBy: ['test/log-row-codec.test.ts'],
  },
  {
    name: 'row-prev-from-any-row-read-before',
    bug: "a compact row's previous hash is taken from the row read just before it, adjacent or not (decision 0034): a stream's rows read with the hash of another stream's row",
    edits: [{ file: 'src/adapters/log/sqlite-log-reader.ts', find: 'const before = r[0] - 1 === link.position ? link.hash :', replace: 'const before = link.position > 0 ? link.hash :' }],
    caughtBy: ['test/log-row-codec.test.ts'],
  },
  {
    name: 'tree-empty-tile-counted-empty',
    bug: 'a tree.db whose last tile is complete and kept in the log (decision 0034) is counted as ending before that tile when reopened: its size, roots and proofs come out short',
    edits: [{ file: 'src/adapters/transparency/tree-store.ts', find: '(last.bytes === 0 ? TILE : last.bytes / HASH)', replace: '(last.bytes / HASH)' }],
    caughtBy: ['test/tree-store.test.ts'],
  },
  {
    name: 'journal-forgets-in-doubt',
    bug: 'the call-mark journal is emptied at close while a call is in doubt (decision 0025): a resumed build no longer knows the interrupted worker call started',
    edits: [{ file: 'src/projections/build-state.ts', find: 'return state.openAttempts.length > 0 || someValue(', replace: 'return someValue(' }],
    caughtBy: ['test/interrupt.test.ts'],
  },
  {
    name: 'journal-line-without-newline-read',
    bug: 'a call-mark journal line whole but for its newline (a crash cut its last byte) is read as a mark: a resume takes a call that never started for one in doubt and records a re-invocation, and the next writer cuts that line off as torn anyway',
    edits: [{ file: 'src/adapters/controller/call-marks.ts', find: 'lines.pop();', replace: '' }],
    caughtBy: ['test/call-journal.test.ts'],
  },
  {
    name: 'journal-torn-tail-kept',
    bug: 'a call-mark journal line torn by a crash is not cut off when the journal is opened again: the next mark is written onto its end, and the two read as one damaged line, so the resume finds no mark for a call that started',
    edits: [{ file: 'src/adapters/controller/call-marks.ts', find: 'if (whole < fstatSync(fd).size)', replace: 'if (whole < 0)' }],
    caughtBy: ['test/call-journal.test.ts'],
  },
  {
    name: 'snapshot-brotli-unread',
    bug: 'a snapshot stored as Brotli is read as raw deflate (decision 0026): every big snapshot is passed over and each open folds from the start',
    edits: [{ file: 'src/projections/snapshot-store.ts', find: 'stored[0] === BROTLI ?', replace: 'false ?' }],
    caughtBy: ['test/projections-properties.test.ts'],
  },
  {
    name: 'spawner-waits-for-helper',
    bug: "calls wait for a spawner helper that is still starting (a whole Node.js start-up) instead of being forked directly meanwhile: every run's first git call waits ~50 ms",
    edits: [{ file: 'src/adapters/process/spawner.ts', find: 'const ready = this.helpers.filter((h) => h.ready);', replace: 'const ready = this.helpers;' }],
    caughtBy: ['test/spawner.test.ts'],
  },
  {
    name: 'spawner-ignores-fork-budget',
    bug: 'a spawner helper (a whole Node.js start-up) starts at the first call of every process, whatever its own forks cost: each short run (a fuzz case, a step) pays for two helpers it never repays',
    edits: [{ file: 'src/adapters/process/spawner.ts', find: 'if (this.forkMs >= this.forkBudgetMs)', replace: 'if (this.forkMs >= 0)' }],
    caughtBy: ['test/spawner.test.ts'],
  },
  {
    name: 'snapshot-argv-unshifted',
    bug: "a process started from the CLI's start-up snapshot takes its arguments as they come (node --snapshot-blob FILE run … has no script in argv): the first one, the command, is dropped",
    edits: [{ file: 'src/adapters/cli/bundle-entry.ts', find: "process.argv.splice(1, 0, packageFile('bin', 'longbuild.js'));", replace: 'void packageFile;' }],
    caughtBy: ['test/cli-snapshot.test.ts'],
  },
  {
    name: 'compile-cache-key-ignores-source',
    bug: "the code cache's key names the bundle by its length, as V8 does: a bundle rebuilt to the same length runs the bytecode cached for the one before it",
    edits: [{ file: 'src/adapters/cli/compile-cache.cts', find: "zlib.crc32(source)", replace: "zlib.crc32(String(length))" }],
    caughtBy: ['test/compile-cache.test.ts'],
  },
  {
    name: 'compile-cache-one-file',
    bug: 'every command reads and writes one code cache: V8 deserialises every command\'s functions at each start, and each command seen first rewrites it',
    edits: [{ file: 'src/adapters/cli/compile-cache.cts', find: "if (command === null) return join(dir, 'cli.cjs.cache');", replace: "return join(dir, 'cli.cjs.cache');", js: { find: "if (command === null)\n        return join(dir, 'cli.cjs.cache');", replace: "return join(dir, 'cli.cjs.cache');" } }],
    caughtBy: ['test/compile-cache.test.ts'],
  },
  {
    name: 'compile-cache-never-refreshes',
    bug: "a command's code cache is what its first process compiled, forever: a first run that stopped early leaves every later run compiling the rest",
    edits: [{ file: 'src/adapters/cli/compile-cache.cts', find: 'if (own && process.uptime() * 1000 < REFRESH_AFTER_MS) return;', replace: 'if (own) return;', js: { find: 'if (own && process.uptime() * 1000 < REFRESH_AFTER_MS)', replace: 'if (own)' } }],
    caughtBy: ['test/compile-cache.test.ts'],
  },
  {
    name: 'projection-integers-as-real',
    bug: 'projection rows bind every number as better-sqlite3 does, a REAL of 8 bytes: an attempt row stores its number and its adopted flag in 16 bytes instead of none',
    edits: [{ file: 'src/projections/tables.ts', find: 'this.upsert.run(...this.row(key, entity).map(stored));', replace: 'this.upsert.run(...this.row(key, entity).map((v) => (stored, v)));' }],
    caughtBy: ['test/projection-tables.test.ts'],
  },
  {
    name: 'exit-drops-queued-output',
    bug: 'the CLI exits as soon as its command returns: what a pipe (64 KiB) could not take yet is dropped, and `longbuild log --json | jq` reads a cut line',
    edits: [{ file: 'src/adapters/cli/run-cli.ts', find: '(code) => exitFlushed(code),', replace: '(code) => process.exit(code),' }],
    caughtBy: ['test/cli-output.test.ts'],
  },
  {
    name: 'status-builds-event-schemas',
    bug: "status imports the event catalogue: every status call builds every event's zod schema, which decision 0022 keeps out of reading commands",
    edits: [{ file: 'src/adapters/cli/commands/status.ts', find: "import { shortList } from '../short-list.js';", replace: "import { shortList } from '../short-list.js';\nimport { domainCatalogue as probe } from '../../../events/catalogue.js';\nvoid probe;" }],
    caughtBy: ['test/log-audit.test.ts'],
  },
  {
    name: 'fuzz-ignores-snapshot',
    bug: "the fuzzer's children start bin/longbuild.js whatever start-up snapshot the campaign built: every case pays the CLI's start-up twice, and the report says otherwise",
    edits: [{ file: 'src/adapters/fuzz/child.ts', find: '[...(o.launch ?? [LONGBUILD_BIN]), ...args]', replace: '[LONGBUILD_BIN, ...args]' }],
    caughtBy: ['test/cli-snapshot.test.ts'],
  },
  {
    name: 'clone-copies-head-commit-only',
    bug: "an attempt clone gets only the objects baseHead's own commit added (not its whole history): the clone's main names commits and trees it does not have",
    edits: [{ file: 'src/adapters/git/worktrees.ts', find: 'await objectsBetween(repo, null, baseHead, CLONE_COPY_COMMITS, CLONE_COPY_OBJECTS)', replace: 'await objectsBetween(repo, (await commitParents(repo, baseHead))[0] ?? null, baseHead, CLONE_COPY_COMMITS, CLONE_COPY_OBJECTS)' }],
    caughtBy: ['test/git-adapter.test.ts'],
  },
  {
    name: 'clone-links-objects',
    bug: "an attempt's clone gets the host's object files hard-linked instead of copied: a worker that rewrites them in its clone corrupts the integrator's repository",
    edits: [{ file: 'src/adapters/git/repo.ts', find: 'writeFileSync(tmp, bytes, { mode: 0o444 });', replace: "void bytes; (await import('node:fs')).linkSync(join(src, 'objects', id.slice(0, 2), id.slice(2)), tmp);" }],
    caughtBy: ['test/git-adapter.test.ts'],
  },
  {
    name: 'changed-files-skip-deletes',
    bug: "the paths a candidate changes, read in-process, leave out the files it deletes: a candidate deleting a protected or verified file would not be named by them",
    edits: [{ file: 'src/adapters/git/tree-diff.ts', find: 'if (changed !== null) return changed.map((change) => change.path);', replace: "if (changed !== null) return changed.filter((change) => change.mode !== '000000').map((change) => change.path);", js: { find: 'return changed.map((change) => change.path);', replace: "return changed.filter((change) => change.mode !== '000000').map((change) => change.path);" } }],
    caughtBy: ['test/git-objects.test.ts'],
  },
  {
    name: 'ref-files-ignore-packed',
    bug: 'attempt branches listed from the files skip packed-refs: after a `git pack-refs` (a user\'s gc) the controller sees no attempt branch and takes adoptable work for lost',
    edits: [{ file: 'src/adapters/git/ref-files.ts', find: 'if (line.startsWith(prefix, 41)) found.set(line.slice(41), sha);', replace: 'if (line.startsWith(prefix, 41) && line === prefix) found.set(line.slice(41), sha);', js: { find: 'if (line.startsWith(prefix, 41))', replace: 'if (line.startsWith(prefix, 41) && line === prefix)' } }],
    caughtBy: ['test/git-objects.test.ts'],
  },
  {
    name: 'fuzz-copy-links-everything',
    bug: "a fuzz case's copy of a build hard-links every file, not only git's immutable objects: a case writing its log, index or refs writes the build it was copied from",
    edits: [{ file: 'src/adapters/fuzz/copy-build.ts', find: "if (place === 'immutable' && linked(source, target)) continue;", replace: 'if (linked(source, target)) continue;', js: { find: "if (place === 'immutable' && linked(source, target))", replace: 'if (linked(source, target))' } }],
    caughtBy: ['test/fuzz-copy-build.test.ts'],
  },
  {
    name: 'node-table-leaf-in-place',
    bug: "the nodes table changes a bucket's leaf in place instead of copying it (issue 19): a fold changes the nodes of every earlier state that shares the leaf",
    edits: [{ file: 'src/projections/record-table.ts', find: 'const leaf: Record<string, unknown> = { ...mid?.[b] };', replace: 'const leaf = (mid?.[b] ?? {}) as Record<string, unknown>;', js: { find: 'const leaf = { ...mid?.[b] };', replace: 'const leaf = (mid?.[b] ?? {});' } }],
    caughtBy: ['test/record-table.test.ts'],
  },
  {
    name: 'node-table-readd-keeps-place',
    bug: "a node deleted and set again in one fold keeps its place in the nodes table's order, where a plain record moves it to the end (issue 19): iteration order differs from the record the fold used to make",
    edits: [{ file: 'src/projections/record-table.ts', find: '      if (was) this.deleted.add(id);\n', replace: '', js: { find: '            if (was)\n                this.deleted.add(id);\n', replace: '' } }],
    caughtBy: ['test/record-table.test.ts'],
  },
  {
    name: 'worktree-adds-concurrent',
    bug: "workspaces of one repository are added and removed concurrently: git's worktree add reads another add's half-written admin directory and fails (fatal: failed to read worktrees/job-N/commondir)",
    edits: [{ file: 'src/adapters/git/worktrees.ts', find: 'const run = (worktreeTurns.get(key) ?? Promise.resolve()).then(fn);', replace: 'const run = fn();' }],
    caughtBy: ['test/worktree-concurrency.test.ts'],
  },
  {
    name: 'graph-hash-stale-prefix',
    bug: "the graph index keeps the SHA-256 state after a slice that changed (decision 0027): the graph's hash is computed over bytes the graph no longer has",
    edits: [{ file: 'src/projections/graph-index.ts', find: '    if (k < this.prefixValid) this.prefixValid = k;\n', replace: '', js: { find: '        if (k < this.prefixValid)\n            this.prefixValid = k;\n', replace: '' } }],
    caughtBy: ['test/graph-index.test.ts'],
  },
  {
    name: 'no-head-snapshot',
    bug: "the projection store takes no snapshot at its head when it closes (decision 0023): every open folds again the events since the last boundary",
    edits: [{ file: 'src/projections/engine.ts', find: '      this.keeper.heads(this.runtimes);\n', replace: '' }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'head-snapshot-ignores-size',
    bug: "the store snapshots a state of any size at close (decision 0023): a state that grows with the build's history is written whole at the end of every run",
    edits: [{ file: 'src/projections/snapshot-keeper.ts', find: ' && newest.bytes <= SNAPSHOT_BYTES;', replace: ';' }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'view-head-snapshot-ignores-size',
    bug: "the store snapshots a view of any size at close once 16 events behind (decisions 0032, 0053): a long build's view, several MiB, is written at the end of nearly every step",
    edits: [{ file: 'src/projections/snapshot-keeper.ts', find: 'behind >= (newest.bytes <= SNAPSHOT_BYTES ? VIEW_HEAD_EVENTS : HEAD_SNAPSHOT_EVENTS * Math.ceil(newest.bytes / SNAPSHOT_BYTES))', replace: 'behind >= VIEW_HEAD_EVENTS' }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'view-head-snapshot-small-only',
    bug: "a view over 1 MiB is never snapshotted at close (decision 0032): on a long build, status and show fold thousands of events from the view's last boundary",
    edits: [{ file: 'src/projections/snapshot-keeper.ts', find: 'behind >= (newest.bytes <= SNAPSHOT_BYTES ? VIEW_HEAD_EVENTS : HEAD_SNAPSHOT_EVENTS * Math.ceil(newest.bytes / SNAPSHOT_BYTES))', replace: 'behind >= VIEW_HEAD_EVENTS && newest.bytes <= SNAPSHOT_BYTES' }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'ledger-json-in-fold-order',
    bug: "`status --json` lists the spend of milestones in the ledger's own key order: the order they were first charged when folded, sorted when the view came from a snapshot (decision 0053: the same build prints two different JSON texts)",
    edits: [{ file: 'src/projections/spend-ledger.ts', find: '.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))', replace: '' }],
    caughtBy: ['test/cli-product.test.ts'],
  },
  {
    name: 'log-tail-ignores-from',
    bug: '`log --tail N --from P` reads back from the end past P: events before --from are printed (decision 0053)',
    edits: [{ file: 'src/adapters/app/log-reading.ts', find: 'if (e.position < from || kept.length === n) break;', replace: 'if (kept.length === n) break;', js: { find: 'if (e.position < from || kept.length === n)', replace: 'if (kept.length === n)' } }],
    caughtBy: ['test/log-tail.test.ts'],
  },
  {
    name: 'log-tail-pages-overlap',
    bug: '`log --tail N --type T` starts each page back at the last event of the one before: an event is printed twice (decision 0053)',
    edits: [{ file: 'src/adapters/app/log-reading.ts', find: 'before = page[page.length - 1]!.position - 1;', replace: 'before = page[page.length - 1]!.position;', js: { find: 'before = page[page.length - 1].position - 1;', replace: 'before = page[page.length - 1].position;' } }],
    caughtBy: ['test/log-tail.test.ts'],
  },
  {
    name: 'log-builds-event-schemas',
    bug: "`log` takes the schema versions from the catalogue: every `log` call builds every event's zod schema (~10 ms), which decisions 0022 and 0053 keep out of reading commands",
    edits: [{ file: 'src/adapters/cli/commands/log.ts', find: "from '../../../events/schema-versions.js';", replace: "from '../../../events/catalogue.js';" }],
    caughtBy: ['test/log-audit.test.ts'],
  },
  {
    name: 'hash-loads-crypto-at-start',
    bug: 'the hash module looks up crypto.hash when it loads: every command that imports it (log among them) loads node:crypto (~3.5 ms) whether it hashes or not (decision 0053)',
    edits: [{ file: 'src/events/hash.ts', find: 'let oneShot: OneShot | null | undefined;', replace: 'let oneShot: OneShot | null | undefined = (crypto as unknown as { hash?: OneShot }).hash ?? null;', js: { find: 'let oneShot;', replace: 'let oneShot = crypto.hash ?? null;' } }],
    caughtBy: ['test/startup-loads.test.ts'],
  },
  {
    name: 'bundle-asks-v8-at-start',
    bug: 'every command loads node:v8 (~1.7 ms) to ask whether it is building a start-up snapshot, though only a process started with --build-snapshot can be (decision 0055)',
    edits: [{ file: 'src/adapters/cli/bundle-entry.ts', find: "process.execArgv.includes('--build-snapshot') && startupSnapshot.isBuildingSnapshot()", replace: 'startupSnapshot.isBuildingSnapshot()' }],
    caughtBy: ['test/startup-loads.test.ts'],
  },
  {
    name: 'view-head-snapshot-at-100',
    bug: 'a small view is snapshotted at close only 100 events behind, like a full state (decision 0053): status and show on a build under 100 events fold every event at every start',
    edits: [{ file: 'src/projections/snapshot-keeper.ts', find: 'const VIEW_HEAD_EVENTS = 16;', replace: 'const VIEW_HEAD_EVENTS = HEAD_SNAPSHOT_EVENTS;' }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'state-keeps-closed-checkpoints-whole',
    bug: "the build state keeps a checkpoint whole after a renewal closed its window (decision 0032): a long build's state is mostly checkpoint lists nothing reads again, restored and copied at every step",
    edits: [{ file: 'src/projections/fold-horizon.ts', find: '    if (c !== undefined && !window.has(m.id)) c.checkpoint', replace: '    if (c !== undefined && window.has(\'\')) c.checkpoint', js: { find: 'if (c !== undefined && !window.has(m.id))', replace: "if (c !== undefined && window.has(''))" } }],
    caughtBy: ['test/build-view.test.ts'],
  },
  {
    name: 'checkpoint-written-as-head',
    bug: "a checkpoint is kept as its head as soon as it is written (decision 0032): the planner's input at the renewal of its window lacks the checkpoint's accepted nodes, contracts and decisions (R-16), and asking for it fails",
    edits: [{ file: 'src/projections/build-fold.ts', find: '{ checkpoint: open ? d.checkpoint : checkpointHeadOf(d.checkpoint),', replace: '{ checkpoint: checkpointHeadOf(d.checkpoint),' }],
    caughtBy: ['test/build-view.test.ts', 'test/compaction-build.test.ts'],
  },
  {
    name: 'absorbed-summaries-kept-whole',
    bug: "the build state keeps an absorbed summary whole (decision 0032): a long build's state carries every summary's evidence and commits, which the summary that absorbed it already carries",
    edits: [{ file: 'src/projections/summaries.ts', find: '      earlier.summary = summaryHeadOf(earlier.summary) as Draft<SummaryHead>;\n', replace: '', js: { find: 'earlier.summary = summaryHeadOf(earlier.summary);', replace: '' } }],
    caughtBy: ['test/build-view.test.ts'],
  },
  {
    name: 'compacted-count-counts-summaries',
    bug: "status counts the summaries a live summary absorbed as planned nodes: the compacted count exceeds the nodes compacted, by one per milestone on a long build",
    edits: [{ file: 'src/projections/view.ts', find: '    if (!Object.hasOwn(st.summaries, id)) counted.add(id);', replace: '    counted.add(id);', js: { find: 'if (!Object.hasOwn(st.summaries, id))\n            counted.add(id);', replace: 'counted.add(id);' } }],
    caughtBy: ['test/holdings.test.ts'],
  },
  {
    name: 'upgrade-refold-silent',
    bug: "the first command after an upgrade that changed the projections' layout folds the whole log again without a word (decision 0032): on a long build, a minute of silence",
    edits: [{ file: 'src/adapters/session.ts', find: 'if (head > 0) warn(', replace: 'if (head < 0) warn(', js: { find: 'if (head > 0)\n            warn(', replace: 'if (head < 0)\n            warn(' } }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'view-drops-latest-attempts',
    bug: "the build's view keeps only open attempts (decision 0020): a reading command folding from it cannot tell which commit a validated node is integrated with, so status fails or differs",
    edits: [{ file: 'src/projections/build-state.ts', find: '  for (const id in state.nodes) if (state.nodes[id]!.attempts > 0) keep(attemptIdOf(id, state.nodes[id]!.attempts));', replace: '  for (const id in state.nodes) if (state.nodes[id]!.attempts < 0) keep(attemptIdOf(id, state.nodes[id]!.attempts));', js: { find: 'if (state.nodes[id].attempts > 0)', replace: 'if (state.nodes[id].attempts < 0)' } }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'pg-held-appends-unread',
    bug: "a PostgreSQL log holding appends (group commit) does not read them back itself: the controller would not see its own decisions until the commit (decision 0017). Needs LONGBUILD_PG_URL (without it the test is skipped and the mutant reported missed)",
    edits: [{ file: 'src/adapters/log/postgres-log.ts', find: 'const extra = held.filter(wanted) as unknown as T[];', replace: 'const extra = held.filter(wanted).slice(0, 0) as unknown as T[];', js: { find: 'const extra = held.filter(wanted);', replace: 'const extra = held.filter(wanted).slice(0, 0);' } }],
    caughtBy: ['test/postgres-group-commit.test.ts'],
  },
  {
    name: 'state-version-unchanged',
    bug: "the build state's layout changed (bucket names and revision keys no longer integer-like, decision 0017) but its state version did not: a projections.db written by the earlier longbuild has its snapshots restored and misread, every attempt and revision missing from them",
    edits: [{ file: 'src/projections/build-projection.ts', find: 'stateVersion: 12,', replace: 'stateVersion: 4,' }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'state-version-kept-at-6',
    bug: "the build state changed (checkpoints outside the window and absorbed summaries as heads, decision 0032) but its version did not: a projections.db written by the earlier longbuild is restored with every checkpoint whole, and verify calls its snapshots forged or stale",
    edits: [{ file: 'src/projections/build-projection.ts', find: 'stateVersion: 12,', replace: 'stateVersion: 6,' }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'state-version-kept-at-10',
    bug: "graph revisions' positions became a list in chunks (decision 0055) but the state version did not change: a projections.db written by the earlier longbuild has its snapshots, revisions as a sharded record, restored and misread — no revision found, and the next graph change fails to fold",
    edits: [{ file: 'src/projections/build-projection.ts', find: 'stateVersion: 12,', replace: 'stateVersion: 10,' }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'state-version-kept-at-11',
    bug: "each milestone's spend became a sharded collection (decision 0056) but the state version did not change: a projections.db written by the earlier longbuild has its snapshots, spend by milestone as a record, restored and misread — no milestone's spend found, so a milestone's budget is never reached",
    edits: [{ file: 'src/projections/build-projection.ts', find: 'stateVersion: 12,', replace: 'stateVersion: 11,' }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'spend-milestones-copied-whole',
    bug: "a worker call's fold copies every milestone's spend, as the record it replaced did (decision 0056): O(milestones) a node, a build's step slower the longer it runs",
    edits: [{ file: 'src/projections/fold-helpers.ts', find: '  shardSet(ledger.milestones as Sharded<SpendTotals>, node.milestone,', replace: '  ledger.milestones = JSON.parse(JSON.stringify(ledger.milestones));\n  shardSet(ledger.milestones as Sharded<SpendTotals>, node.milestone,', js: { find: '    shardSet(ledger.milestones, node.milestone,', replace: '    ledger.milestones = JSON.parse(JSON.stringify(ledger.milestones));\n    shardSet(ledger.milestones, node.milestone,' } }],
    caughtBy: ['test/spend-ledger.test.ts'],
  },
  {
    name: 'shard-delete-keeps-empty-leaf',
    bug: 'a delete that empties a leaf of a sharded collection keeps it: the attempts of a long build leave ~4,000 empty objects, each with the table its keys were in (decision 0056)',
    edits: [{ file: 'src/projections/sharded.ts', find: '  mid![b] = null;', replace: '  void mid;', js: { find: '    mid[b] = null;', replace: '    void mid;' } }],
    caughtBy: ['test/sharded.test.ts'],
  },
  {
    name: 'state-version-kept-at-7',
    bug: "the sharded collections' bucket levels became arrays (decision 0035) but the state version did not change: a projections.db written by the earlier longbuild has its snapshots, buckets as named objects, restored and misread — no attempt or revision found in them, and the next fold writes beside them",
    edits: [{ file: 'src/projections/build-projection.ts', find: 'stateVersion: 12,', replace: 'stateVersion: 7,' }],
    caughtBy: ['test/state-layout.test.ts'],
  },
  {
    name: 'sharded-slots-holey',
    bug: "a sharded collection's bucket array is not grown slot by slot before a bucket is put past its end (decision 0035): the arrays have holes, which V8 keeps as slow holey arrays and a copy of which is no longer a plain copy of 64 pointers",
    edits: [{ file: 'src/projections/sharded.ts', find: '  while (slots.length <= i) slots.push(null);', replace: '  void slots, void i;', js: { find: '    while (slots.length <= i)\n        slots.push(null);', replace: '    void slots, void i;' } }],
    caughtBy: ['test/sharded.test.ts'],
  },
  {
    name: 'sharded-diff-misses-new-buckets',
    bug: "the projections' diff of a sharded collection walks only the buckets the earlier version had (decision 0035): an attempt or job in a bucket created since is never written to its table",
    edits: [{ file: 'src/projections/sharded.ts', find: 'for (let a = 0; a < Math.max(before.length, after.length); a++) {', replace: 'for (let a = 0; a < before.length; a++) {' }],
    caughtBy: ['test/sharded.test.ts'],
  },
  {
    name: 'summary-of-milestone-latest',
    bug: "the summary of a milestone is the latest of the state's summaries of it, not the first (decision 0035): a compaction asked whether its milestone was compacted finds another summary than a walk of the summaries did",
    edits: [{ file: 'src/projections/summaries.ts', find: '(first === undefined || r.position < first.position)', replace: '(first === undefined || r.position > first.position)' }],
    caughtBy: ['test/summary-index.test.ts'],
  },
  {
    name: 'table-diff-first-leaf-only',
    bug: "the projections' diff of two record tables compares only the first leaf of each changed bucket (decision 0035): a checkpoint, summary or planner call in another leaf is never written to its table",
    edits: [{ file: 'src/projections/record-table.ts', find: '    for (let b = 0; b < FANOUT; b++) {', replace: '    for (let b = 0; b < 1; b++) {', js: { find: '        for (let b = 0; b < FANOUT; b++) {', replace: '        for (let b = 0; b < 1; b++) {' } }],
    caughtBy: ['test/record-table.test.ts'],
  },
  {
    name: 'sole-writer-reads-every-step',
    bug: "a controller holding the lease still reads the log's tail before every step (decision 0017): on PostgreSQL a second round trip per node",
    edits: [{ file: 'src/adapters/controller/log-cursor.ts', find: 'this.caughtUp = this.deps.soleWriter === true;', replace: 'this.caughtUp = false;' }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'sole-writer-never-reads',
    bug: "a sole writer takes the log's tail as read before it has read it: it opens on the state the projections folded and misses what the log holds beyond it",
    edits: [{ file: 'src/adapters/controller/log-cursor.ts', find: '    if (this.caughtUp) return;', replace: '    if (this.caughtUp || this.deps.soleWriter === true) return;', js: { find: 'if (this.caughtUp)', replace: 'if (this.caughtUp || this.deps.soleWriter === true)' } }],
    caughtBy: ['test/step-model-double.test.ts'],
  },
  {
    name: 'driver-state-not-copied',
    bug: "the SHA-256 state left by a driver's part is hashed on in place instead of copied: the first digest with a driver is right, every later one with it continues a finished state (or fails), so a fork never finds a parent's result again, or finds another's (R-41)",
    edits: [{ file: 'src/commands/call-input.ts', find: 'return afterDriver(driver).copy().update(rest)', replace: 'return afterDriver(driver).update(rest)' }],
    caughtBy: ['test/call-input.test.ts'],
  },
  {
    name: 'driver-state-shared',
    bug: "the SHA-256 state of a driver's part is remembered for any driver object, not for the one it was made of: a second driver (a fork's changed plan) gets the first one's digest (R-41)",
    edits: [{ file: 'src/commands/call-input.ts', find: 'let state = driverStates.get(driver);\n  if (state === undefined) driverStates.set(driver, (state = hashed()));', replace: 'let state = driverStates.get(driverStates);\n  if (state === undefined) driverStates.set(driverStates, (state = hashed()));', js: { find: 'let state = driverStates.get(driver);\n    if (state === undefined)\n        driverStates.set(driver, (state = hashed()));', replace: 'let state = driverStates.get(driverStates);\n    if (state === undefined)\n        driverStates.set(driverStates, (state = hashed()));' } }],
    caughtBy: ['test/call-input.test.ts'],
  },
  {
    name: 'full-snapshots-kept-as-before',
    bug: "a projection with a view keeps every 4th full-state snapshot as before (decision 0017): projections.db grows with the build by full states time travel never reads",
    edits: [{ file: 'src/projections/snapshot-keeper.ts', find: 'if (newestOnly && this.snapshots.keepNewest !== undefined)', replace: "if (newestOnly && this.snapshots.keepNewest !== undefined && name === '')" }],
    caughtBy: ['test/projection-engine.test.ts'],
  },
  {
    name: 'planner-input-every-checkpoint',
    bug: "the planner input carries every checkpoint of the build again, not the sealed window's (R-16, decision 0029): a prompt that grows until it outgrows the agent's context, hashed at every renewal",
    edits: [{ file: 'src/commands/effect-inputs.ts', find: 'checkpoints: windowCheckpoints.map(wholeCheckpoint),', replace: 'checkpoints: Object.values(s.checkpoints).sort((a, b) => a.position - b.position).map(wholeCheckpoint),' }],
    caughtBy: ['test/compaction-build.test.ts'],
  },
  {
    name: 'reserved-ids-allowed',
    bug: "a proposal may name a milestone, node or dependency 'constructor' again (decision 0030): a dependency on it looks satisfied, a milestone of that name looks checkpointed",
    edits: [{ file: 'src/commands/horizon.ts', find: 'if (reserved) return refuse(', replace: 'if (reserved && !reserved.includes("\'constructor\'")) return refuse(', js: { find: 'if (reserved)\n', replace: 'if (reserved && !reserved.includes("\'constructor\'"))\n' } }],
    caughtBy: ['test/horizon.test.ts'],
  },
  {
    name: 'summary-index-trusts-any-entry',
    bug: "the shared compacted-node index answers an entry a later fold added for a state that does not hold that summary: a state folded before a compaction sees the node as compacted",
    edits: [{ file: 'src/projections/summaries.ts', find: "if (typeof had === 'string') return holds(summaries, had, nodeId) ? had : undefined;", replace: "if (typeof had === 'string') return had;", js: { find: 'return holds(summaries, had, nodeId) ? had : undefined;', replace: 'return had;' } }],
    caughtBy: ['test/summary-index.test.ts'],
  },
  {
    name: 'catch-up-checks-each-page',
    bug: "catching up from the log a page at a time checks after each page that the log reaches what the tables reflect: a store whose newest snapshot is more than a page behind (a long build) is refused as a truncated log",
    edits: [{ file: 'src/adapters/log/paging.ts', find: 'count += store.catchUp(page, undefined, true);', replace: 'count += store.catchUp(page);' }],
    caughtBy: ['test/paging-catch-up.test.ts'],
  },
  {
    name: 'refold-in-place-without-copy',
    bug: "the projection store folds the events its tables already reflect in place on a state it does not own: with no snapshot to restore, that is the initial state every build's fold starts from",
    edits: [{ file: 'src/projections/projection-runtime.ts', find: 'r.state = ownedCopyOf(r.projection, r.state);', replace: 'r.state = r.state;' }],
    caughtBy: ['test/paging-catch-up.test.ts'],
  },
  {
    name: 'refold-in-place-skips-log-check',
    bug: "folding in place up to the tables' position does not check that the event there is the one the tables saw: tables written from another log are taken as this log's",
    edits: [{ file: 'src/projections/projection-runtime.ts', find: 'if (r.memPosition === r.storedPosition && r.memHash !== r.storedHash) {', replace: 'if (r.memPosition === r.storedPosition && r.memHash !== r.storedHash && false) {' }],
    caughtBy: ['test/paging-catch-up.test.ts'],
  },
  {
    name: 'summary-index-trusts-summary-id',
    bug: "the shared index's entry counts for any state holding a summary of that id, whatever that state's summary lists: a fold's result depends on what else the process folded (a log not written by the host, two builds in one process)",
    edits: [{ file: 'src/projections/summaries.ts', find: 'return Object.hasOwn(summaries, summaryId) && summaries[summaryId]!.summary.compactedNodeIds.includes(nodeId);', replace: 'return Object.hasOwn(summaries, summaryId);', js: { find: 'return Object.hasOwn(summaries, summaryId) && summaries[summaryId].summary.compactedNodeIds.includes(nodeId);', replace: 'return Object.hasOwn(summaries, summaryId);' } }],
    caughtBy: ['test/summary-index.test.ts'],
  },
  {
    name: 'summary-index-first-candidate',
    bug: "where states folded differently from one parent compacted a node into different summaries, the index answers the first one for all of them",
    edits: [{ file: 'src/projections/summaries.ts', find: 'return had.find((id) => holds(summaries, id, nodeId));', replace: 'return had[0];' }],
    caughtBy: ['test/summary-index.test.ts'],
  },
  {
    name: 'summary-index-carried-as-complete',
    bug: "a state given its parent's index takes it as holding all of its own summaries: the ones its fold added are never indexed",
    edits: [{ file: 'src/projections/summaries.ts', find: 'indexCache.set(next, { count: cached.count, index: cached.index, byMilestone: cached.byMilestone });', replace: 'indexCache.set(next, { count: Object.keys(next).length, index: cached.index, byMilestone: cached.byMilestone });' }],
    caughtBy: ['test/summary-index.test.ts'],
  },
  {
    name: 'surface-check-disabled',
    bug: 'a candidate that rewrites the test script, deletes, empties or skips existing tests, or adds a runner config is not refused (R-49 disabled)',
    edits: [{ file: 'src/adapters/git/integrate.ts', find: 'return judged === undefined ? null : surfaceProblem(repo, changed, judged);', replace: 'return null;' }],
    caughtBy: ['test/tests-authority.test.ts'],
  },
  {
    name: 'ratchet-counts-only',
    bug: 'the test ratchet compares how many tests pass, not which: a candidate that drops one passing test and adds another is promoted (R-51)',
    edits: [{ file: 'src/commands/test-ratchet.ts', find: 'const needed = [...new Set([...lost, ...failing])].sort();', replace: 'const needed: string[] = [];', js: { find: 'const needed = [...new Set([...lost, ...failing])].sort();', replace: 'const needed = [];' } }],
    caughtBy: ['test/test-ratchet.test.ts'],
  },
  {
    name: 'holdout-skipped',
    bug: 'a node that declares test changes is verified on its own tests only: no hold-out runs the base tests on its code (R-50)',
    edits: [{ file: 'src/commands/job-tests.ts', find: "(policy.holdout === 'always' || declared) ? policy.surface.tests : null", replace: "(policy.holdout === 'always' || declared) ? null : null" }],
    caughtBy: ['test/test-ratchet.test.ts', 'test/tests-authority.test.ts'],
  },
  {
    name: 'home-visible',
    bug: 'the sandbox leaves the user\'s home as it is: ~/.ssh, ~/.npmrc and ~/.config/longbuild (the signing key) are readable by every role (R-53)',
    edits: [{ file: 'src/adapters/session-execution.ts', find: 'const home = homePaths(env);', replace: 'const home: string[] = [];', js: { find: 'const home = homePaths(env);', replace: 'const home = [];' } }],
    caughtBy: ['test/key-custody.test.ts'],
  },
  {
    name: 'secrets-unmounted',
    bug: 'the signing key and the config directory are not mounted over: LONGBUILD_CONFIG_DIR and LONGBUILD_SIGNING_KEY outside the home are readable (R-53)',
    edits: [{ file: 'src/adapters/sandbox/sandbox.ts', find: 'secretMounts(policy.secret ?? [])', replace: 'secretMounts([])' }],
    caughtBy: ['test/key-custody.test.ts'],
  },
  {
    name: 'unsigned-tail-accepted',
    bug: 'the audit accepts events after the last signed checkpoint without --allow-unsigned-tail: a tail forged after a kept checkpoint passes (R-54)',
    edits: [{ file: 'src/adapters/audit/verifier.ts', find: 'if (covered < leaves.length) {', replace: 'if (covered < 0) {' }],
    caughtBy: ['test/audit-bundle.test.ts'],
  },
  {
    name: 'git-commits-only',
    bug: 'the audit\'s git check looks at the commit objects only: a git.bundle without their trees and blobs passes (R-54)',
    edits: [{ file: 'src/adapters/audit/verifier.ts', find: 'missingInTree(objects, tree, seenTrees)', replace: 'null' }],
    caughtBy: ['test/audit-bundle.test.ts'],
  },
  {
    name: 'planner-may-accept',
    bug: 'a command planner\'s proposal may mark a read-only node accepted (with its decision): the build completes with no work done (R-55)',
    edits: [{ file: 'src/commands/horizon.ts', find: "if (state.build?.driver.kind === 'command') {", replace: 'if (false) {' }],
    caughtBy: ['test/planner-authority.test.ts'],
  },
  {
    name: 'duplicate-keys-allowed',
    bug: 'a planner\'s answer with a key named twice is read as JSON.parse reads it (the last one wins) (R-55)',
    edits: [{ file: 'src/adapters/agents/presets.ts', find: "parseUntrustedJson(a, { duplicateKeys: 'refuse' })", replace: "parseUntrustedJson(a, { duplicateKeys: 'allow' })" }],
    caughtBy: ['test/planner-authority.test.ts'],
  },
  {
    name: 'depth-unbounded',
    bug: 'JSON from an untrusted party is read at any depth: a deep answer overflows the stack of what reads it next (R-55)',
    edits: [{ file: 'src/commands/untrusted-json.ts', find: 'if (stack.length >= max)', replace: 'if (stack.length < 0)' }],
    caughtBy: ['test/planner-authority.test.ts'],
  },
  {
    name: 'windows-unenforced',
    bug: 'a proposal with more detailed milestones than the build\'s detailedWindow is sealed (R-55)',
    edits: [{ file: 'src/commands/horizon.ts', find: 'p.detailed.length > settings.detailedWindow', replace: 'p.detailed.length > 2' }],
    caughtBy: ['test/planner-authority.test.ts'],
  },
  {
    name: 'symlink-lexical',
    bug: 'a symlink is judged by its own text only, not through the links it passes: a two-hop chain leaves the tree (R-31)',
    edits: [{ file: 'src/commands/tree-links.ts', find: "const next = links.get(at.join('/'));", replace: 'const next = undefined;' }],
    caughtBy: ['test/tree-links.test.ts'],
  },
  {
    name: 'redact-literal-only',
    bug: 'a secret is redacted only as written: its base64, hex or percent-encoded form reaches evidence (R-30)',
    edits: [{ file: 'src/adapters/sandbox/redact.ts', find: '.flatMap(secretForms)', replace: '.flatMap((x) => [x])' }],
    caughtBy: ['test/redact.test.ts', 'test/trust-boundary.test.ts'],
  },
  {
    name: 'ref-moves-unfenced',
    bug: 'the controller moves refs (promote, publish, repair) without checking the lease first: a deposed PostgreSQL controller rolls the integration ref back (issue 45)',
    edits: [{ file: 'src/adapters/session.ts', find: '...(opts.beforeRefMove ? { fence: opts.beforeRefMove } : {}),', replace: '' }],
    caughtBy: ['test/failover.test.ts'],
  },
  {
    name: 'setup-runs-scripts',
    bug: 'setup runs package lifecycle scripts (a project .npmrc may turn them on): the candidate\'s code runs with the network (issue 45, R-57)',
    edits: [{ file: 'src/adapters/sandbox/setup-phase.ts', find: "npm_config_ignore_scripts: 'true', ", replace: '' }],
    caughtBy: ['test/setup-phase.test.ts'],
  },
  {
    name: 'package-cache-writable',
    bug: 'verification gets the build\'s package cache read-write: the code under test can poison the next install (issue 45, R-57)',
    edits: [{ file: 'src/adapters/sandbox/setup-phase.ts', find: "rw: phase === 'setup' }", replace: 'rw: true }' }],
    caughtBy: ['test/setup-phase.test.ts'],
  },
  {
    name: 'verify-has-setup-network',
    bug: 'verification runs with the setup phase\'s network: the code under test reaches the registry (issue 45, R-57)',
    edits: [{ file: 'src/adapters/session.ts', find: "x.run(phase === 'setup' ? x.sandbox.setup : x.sandbox.verify)", replace: 'x.run(x.sandbox.setup)' }],
    caughtBy: ['test/setup-phase.test.ts'],
  },
  {
    name: 'sandbox-uncapped',
    bug: 'a sandboxed call never joins its pids cgroup: a fork bomb takes the machine (issue 45)',
    edits: [{ file: 'src/adapters/sandbox/pids-cgroup.ts', find: `'echo $$ > "$0/cgroup.procs" && exec "$@"'`, replace: `'exec "$@"'` }],
    caughtBy: ['test/fair-use.test.ts'],
  },
  {
    name: 'prove-unchecked',
    bug: 'prove hands out the proof tree.db gives without checking it: a damaged cache yields a proof that fails its own check (issue 45)',
    edits: [{ file: 'src/adapters/app/proofs.ts', find: 'void checkProofFile(text, key)', replace: 'void text' }],
    caughtBy: ['test/tree-cache.test.ts'],
  },
  {
    name: 'tree-cache-unverified',
    bug: 'verify does not compare tree.db with the log (issue 45)',
    edits: [{ file: 'src/adapters/transparency/tree-store.ts', find: 'if (!existsSync(path))', replace: 'if (true)' }],
    caughtBy: ['test/tree-cache.test.ts'],
  },
  {
    name: 'journal-loss-ignored',
    bug: 'a lost call journal reads as "never started": a worker in flight is called again and no re-invocation is recorded (issue 45)',
    edits: [{ file: 'src/adapters/controller/effects.ts', find: 'calls.lost?.() === true', replace: 'false' }],
    caughtBy: ['test/call-journal-loss.test.ts'],
  },
  {
    name: 'missed-checkpoints-unsigned',
    bug: 'a run does not sign the checkpoints an earlier run missed: promotions stay without a signature made before the next (issue 45)',
    edits: [{ file: 'src/adapters/session-notary.ts', find: 'await opened.signMissed()', replace: '[]' }],
    caughtBy: ['test/missed-checkpoints.test.ts'],
  },
  {
    name: 'integrator-damage-unchecked',
    bug: 'a run does not check the integrator\'s repository first: it records work and stops on a raw git error (issue 45)',
    edits: [{ file: 'src/adapters/session-notary.ts', find: 'const damage = head ? await integratorDamage(paths.integrator, head) : null;', replace: 'const damage = null;' }],
    caughtBy: ['test/integrator-damage.test.ts'],
  },
  {
    name: 'reading-needs-disk',
    bug: 'a reading command opens SQLite only the usual way: on a full disk WAL\'s index cannot grow and status, show, log fail (issue 45)',
    edits: [{ file: 'src/projections/storage-guard.ts', find: "memory.pragma('locking_mode = EXCLUSIVE');", replace: 'throw err;' }],
    caughtBy: ['test/storage-faults.test.ts'],
  },
  {
    name: 'replan-adds-no-asks',
    bug: 'a PlanningReopened event gives the round no more asks: replan records and the build stays blocked (issue 46)',
    edits: [{ file: 'src/commands/next-action.ts', find: 'asks += call.reopened ?? 0;', replace: 'asks += 0;' }],
    caughtBy: ['test/replan.test.ts'],
  },
  {
    name: 'budget-ignored',
    bug: 'a dispatch starts past the budget: the build never pauses (issue 46, R-59)',
    edits: [{ file: 'src/commands/next-action.ts', find: 'if (over !== null) return paused(state, running, over);', replace: 'if (over !== null && over.limit < 0) return paused(state, running, over);',
      js: { find: 'if (over !== null)\n            return paused(state, running, over);', replace: 'if (over !== null && over.limit < 0)\n            return paused(state, running, over);' } }],
    caughtBy: ['test/spend.test.ts'],
  },
  {
    name: 'planner-budget-ignored',
    bug: 'a planner call starts past the budget (issue 46, R-59)',
    edits: [{ file: 'src/commands/next-action.ts', find: 'return over === null ? plan : paused(state, running, over);', replace: 'return plan;' }],
    caughtBy: ['test/spend-budget-pure.test.ts'],
  },
  {
    name: 'lost-usage-ignored',
    bug: 'a call made again after a crash forgets what the lost invocation reported: the ledger falls short of what was billed (issue 46, R-58)',
    edits: [{ file: 'src/adapters/controller/effects.ts', find: "return read.usage !== undefined ? { lostUsage: read.usage } : {};", replace: 'return {};' }],
    caughtBy: ['test/spend.test.ts'],
  },
  {
    name: 'ledger-cost-dropped',
    bug: 'the ledger sums tokens but not costs (issue 46, R-58)',
    edits: [{ file: 'src/projections/spend-ledger.ts', find: 'costNanoUsd: t.costNanoUsd + nanoUsd(usage.costUsd ?? 0)', replace: 'costNanoUsd: t.costNanoUsd' }],
    caughtBy: ['test/spend.test.ts'],
  },
  {
    name: 'plan-gate-skipped',
    bug: 'a gated build seals its plan without waiting for approval (issue 46, R-60)',
    edits: [{ file: 'src/commands/step-results.ts', find: "if (!approved && (state.build?.settings.approve ?? []).includes('plan')) {", replace: 'if (!approved && state.build === null) {' }],
    caughtBy: ['test/approval.test.ts'],
  },
  {
    name: 'fuzz-budget-unchecked',
    bug: "the fuzzer's own check of the budget looks at nothing: a build that starts calls past its budget passes the fuzz (issue 46, R-59)",
    edits: [{ file: 'src/commands/fuzz-compare.ts', find: 'if (over !== null) budgetBreaches.push(', replace: 'if (over === undefined) budgetBreaches.push(', js: { find: 'if (over !== null)\n                budgetBreaches.push(', replace: 'if (over === undefined)\n                budgetBreaches.push(' } }],
    caughtBy: ['test/spend-budget-pure.test.ts'],
  },
  {
    name: 'notify-not-coalesced',
    bug: 'a burst of one kind is notified one by one: the interval is not kept within a run (issue 46, R-61)',
    edits: [{ file: 'src/adapters/notify/notifications.ts', find: 'this.started.set(`${due.notifier}:${due.kind}`, now);', replace: 'void now;' }],
    caughtBy: ['test/notify.test.ts'],
  },
  {
    name: 'notify-redelivered-in-run',
    bug: 'a trigger handed to a notifier is handed to it again before its record (issue 46, R-61)',
    edits: [{ file: 'src/adapters/notify/notifications.ts', find: 'for (const p of due.triggers) this.taken.add(`${due.notifier}:${due.kind}:${p}`);', replace: 'void due;',
      js: { find: 'for (const p of due.triggers)\n                this.taken.add(`${due.notifier}:${due.kind}:${p}`);', replace: 'void due;' } }],
    caughtBy: ['test/notify.test.ts'],
  },
  {
    name: 'checkpoint-gate-skipped',
    bug: 'a build gated at its checkpoints goes past them without an approval (issue 46, R-60)',
    edits: [{ file: 'src/commands/next-action.ts', find: 'if (held !== null) return atHeadGate(running, held);', replace: 'void held;',
      js: { find: 'if (held !== null)\n        return atHeadGate(running, held);', replace: 'void held;' } }],
    caughtBy: ['test/approval-heads.test.ts'],
  },
  {
    name: 'rejection-not-repaired',
    bug: 'a rejected final head is completed instead of repaired (issue 46, R-60)',
    edits: [{ file: 'src/commands/next-action.ts', find: 'const failure = rejected !== null ? rejectionFailure(rejected) :', replace: 'const failure = rejected === undefined ? rejectionFailure(rejected) :' }],
    caughtBy: ['test/approval-heads.test.ts'],
  },
  {
    name: 'land-unapproved',
    bug: '`land` publishes a head no operator approved in a build gated at land (issue 46, R-60)',
    edits: [{ file: 'src/adapters/cli/commands/land.ts', find: 'if (!landApproved(st, head)) {', replace: 'if (landApproved(st, head) && false) {' }],
    caughtBy: ['test/approval-heads.test.ts'],
  },
  {
    name: 'fuzz-notify-unaudited',
    bug: "the fuzzer's audit of notifications never finds one the log records as delivered that no notifier received (issue 46, R-61)",
    edits: [{ file: 'src/commands/fuzz-audits.ts', find: 'if (missing.length > 0) out.push(', replace: 'if (missing.length < 0) out.push(', js: { find: 'if (missing.length > 0)\n            out.push(', replace: 'if (missing.length < 0)\n            out.push(' } }],
    caughtBy: ['test/fuzz-notify-audit.test.ts'],
  },
  {
    name: 'notification-not-delivered',
    bug: 'a notification is recorded as delivered without its notifier being run (issue 46, R-61)',
    edits: [{ file: 'src/adapters/notify/notifications.ts', find: 'const r = await runProcess({ argv: notifier.command,', replace: 'const r = { exitCode: 0, spawnError: undefined, timedOut: false, signal: null, stderr: Buffer.alloc(0) } as const; void ({ argv: notifier.command,',
      js: { find: 'const r = await runProcess({ argv: notifier.command,', replace: 'const r = { exitCode: 0, spawnError: undefined, timedOut: false, signal: null, stderr: Buffer.alloc(0) }; void ({ argv: notifier.command,' } }],
    caughtBy: ['test/approval-heads.test.ts'],
  },
  {
    name: 'provenance-statement-unchecked',
    bug: '`provenance verify` accepts any note the build key signed, whatever commit its statement is about (issue 47, R-62)',
    edits: [{ file: 'src/adapters/app/commit-provenance.ts', find: 'if (!payload.equals(expected)) {', replace: 'if (payload.length < 0 && !payload.equals(expected)) {' }],
    caughtBy: ['test/provenance.test.ts'],
  },
  {
    name: 'provenance-record-unchecked',
    bug: '`provenance verify` accepts a note that is validly signed but not the one the log recorded (issue 47, R-62)',
    edits: [{ file: 'src/adapters/app/commit-provenance.ts', find: 'if (sha256Hex(note) !== record.envelopeSha256) {', replace: 'if (note.length < 0 && sha256Hex(note) !== record.envelopeSha256) {' }],
    caughtBy: ['test/provenance.test.ts'],
  },
  {
    name: 'audit-attestation-unchecked',
    bug: "`audit verify` accepts a bundle's attestation whatever its bytes, if the log records one (issue 47, R-62)",
    edits: [{ file: 'src/adapters/audit/provenance-audit.ts', find: 'if (sha256(text) !== rec.envelopeSha256)', replace: 'if (text.length < 0)' }],
    caughtBy: ['test/provenance.test.ts'],
  },
  {
    name: 'otel-failed-job-ok',
    bug: 'a failed integration job is exported as a span without the error status (issue 48)',
    edits: [{ file: 'src/commands/otel-trace.ts', find: "end('job', d.jobId, at, [str('longbuild.job.outcome', 'failed')], { code: 2,", replace: "end('job', d.jobId, at, [str('longbuild.job.outcome', 'failed')], { code: 1,", js: { find: "end('job', d.jobId, at, [str('longbuild.job.outcome', 'failed')], { code: 2,", replace: "end('job', d.jobId, at, [str('longbuild.job.outcome', 'failed')], { code: 1," } }],
    caughtBy: ['test/otel.test.ts'],
  },
  {
    name: 'otel-traceparent-other-span',
    bug: "a worker's TRACEPARENT names a span the export does not have (issue 48)",
    edits: [{ file: 'src/adapters/controller/effects.ts', find: "deps.traceparent('attempt', r.attemptId)", replace: "deps.traceparent('attempt', r.key)" }],
    caughtBy: ['test/otel.test.ts'],
  },
  {
    name: 'mcp-control-unguarded',
    bug: 'an MCP client changes the build without the server being started with --allow-control (issue 48)',
    edits: [{ file: 'src/adapters/mcp/server.ts', find: 'if (control && !o.allowControl) return failed(', replace: 'if (control && o.allowControl && !o.allowControl) return failed(', js: { find: 'if (control && !o.allowControl)\n', replace: 'if (control && o.allowControl && !o.allowControl)\n' } }],
    caughtBy: ['test/mcp.test.ts'],
  },
  {
    name: 'trailers-dropped',
    bug: "an attempt's commit does not name its build, node and attempt in trailers (issue 47, R-62)",
    edits: [{ file: 'src/commands/step-records.ts', find: 'if (t === undefined) return subject;', replace: 'if (t !== null) return subject;', js: { find: 'if (t === undefined)\n        return subject;', replace: 'if (t !== null)\n        return subject;' } }],
    caughtBy: ['test/step.test.ts', 'test/provenance.test.ts'],
  },
  {
    name: 'decider-drift',
    bug: "today's decider records a verification's evidence digest differently from the one old logs hold: replaying a recorded history would append other events (issue 49)",
    edits: [{ file: 'src/commands/step-records.ts', find: 'evidenceSha256: evidenceDigest(evidence), ...(out.tests !== undefined', replace: 'evidenceSha256: canonicalSha256(evidence), ...(out.tests !== undefined' }],
    caughtBy: ['test/golden-logs.test.ts'],
  },
  {
    name: 'event-list-page-after-index',
    bug: "the viewer's list pages the events after the stored index from the request's offset, not from what the index's rows took: a page that crosses the index's end repeats or skips events (decision 0051)",
    edits: [{ file: 'src/adapters/ui/event-list.ts', find: 'const from = Math.max(0, offset - stored.total);', replace: 'const from = offset;' }],
    caughtBy: ['test/ui-event-list.test.ts'],
  },
  {
    name: 'event-index-other-log-taken',
    bug: "the viewer takes the stored event index without the log confirming the event at its position: an index written from another log is listed as this build's (decision 0051)",
    edits: [{ file: 'src/adapters/ui/event-list.ts', find: 'if (hash !== at.hash || (this.tail.length', replace: 'if (false && hash !== at.hash || (this.tail.length' }],
    caughtBy: ['test/ui-event-list.test.ts'],
  },
  {
    name: 'event-index-unverified',
    bug: "verify compares the stored projections with a rebuild but not the stored event index: a changed row of the viewer's list passes (decision 0051)",
    edits: [{ file: 'src/adapters/app/verify-build.ts', find: 'return differs < 0 ? [] :', replace: 'return differs < 0 || true ? [] :' }],
    caughtBy: ['test/log-audit.test.ts'],
  },
  {
    name: 'event-index-time-reformatted',
    bug: "the event index stores every time as milliseconds: a time recorded in another form than toISOString's is listed reformatted, not as the event recorded it (decision 0051)",
    edits: [{ file: 'src/projections/event-index-table.ts', find: 'return Number.isFinite(ms) && new Date(ms).toISOString() === at ? ms : at;', replace: 'return Number.isFinite(ms) ? ms : at;' }],
    caughtBy: ['test/ui-event-list.test.ts'],
  },
  {
    name: 'checkpoint-pack-torn-line-kept',
    bug: "packing appends after a line a crash cut short instead of cutting it off first: the first packed note joins the torn bytes and no longer reads as a checkpoint (decision 0052)",
    edits: [{ file: 'src/adapters/transparency/checkpoint-pack.ts', find: 'ftruncateSync(fd, whole); // a line a crash cut short goes; its file is still there', replace: 'void ftruncateSync;' }],
    caughtBy: ['test/checkpoint-pack.test.ts'],
  },
  {
    name: 'checkpoint-pack-takes-newest',
    bug: "packing moves the newest checkpoint file too: the file the notary restores and reads first is gone (decision 0052)",
    edits: [{ file: 'src/adapters/transparency/checkpoint-pack.ts', find: 'const moving = loose.slice(0, -1);', replace: 'const moving = loose.slice(0);' }],
    caughtBy: ['test/checkpoint-pack.test.ts'],
  },
  {
    name: 'loose-objects-never-packed',
    bug: "the integrator's loose objects are counted in the wrong fan-out directory, so a long build never packs them (decision 0052)",
    edits: [{ file: 'src/adapters/git/integrator-repo.ts', find: "readdirSync(join(gitDir, 'objects', '17'))", replace: "readdirSync(join(gitDir, 'objects', 'pack'))" }],
    caughtBy: ['test/checkpoint-pack.test.ts'],
  },

  {
    name: 'attempt-rows-from-state',
    bug: "the attempts table is written from the state's attempts (decision 0054 undone in the table alone): the state lets go of a compacted node's attempts, so their rows are deleted — or never written, when a catch-up or a rebuild folds an attempt and its node's compaction in one batch",
    edits: [{ file: 'src/projections/build-projection.ts', find: '  fromEvent: (e) => {', replace: '  fromEventOff: (e) => {', js: { find: '    fromEvent: (e) => {', replace: '    fromEventOff: (e) => {' } }],
    caughtBy: ['test/attempt-history.test.ts'],
  },
  {
    name: 'compaction-keeps-attempts',
    bug: "a compaction keeps its nodes' attempts in the build state: the controller's memory and its stored state grow with every node the build ever ran (decision 0054)",
    edits: [{ file: 'src/projections/summaries.ts', find: 'if (!draft.openAttempts.includes(attemptId)) shardDelete(', replace: 'if (false) shardDelete(', js: { find: 'if (!draft.openAttempts.includes(attemptId))\n                shardDelete(', replace: 'if (false)\n                shardDelete(' } }],
    caughtBy: ['test/attempt-history.test.ts'],
  },
  {
    name: 'compaction-drops-open-attempts',
    bug: 'a compaction lets go of an open attempt of a node it compacts (a log no correct host writes, but the fold must not lose work in flight: R-11)',
    edits: [{ file: 'src/projections/summaries.ts', find: 'if (!draft.openAttempts.includes(attemptId)) shardDelete(', replace: 'if (true) shardDelete(', js: { find: 'if (!draft.openAttempts.includes(attemptId))\n                shardDelete(', replace: 'if (true)\n                shardDelete(' } }],
    caughtBy: ['test/attempt-history.test.ts'],
  },
  {
    name: 'event-rows-past-a-gap',
    bug: "an event-kept table applies events that do not follow what it holds (another process moved the tables back): the rows of the events in between are never written, and the table misses attempts (decision 0054)",
    edits: [{ file: 'src/projections/tables.ts', find: 'const reaches = next < events.length && events[next]!.position === held + 1;', replace: 'const reaches = next < events.length;', js: { find: 'const reaches = next < events.length && events[next].position === held + 1;', replace: 'const reaches = next < events.length;' } }],
    caughtBy: ['test/attempt-history.test.ts'],
  },
  {
    name: 'revision-chunk-overfills',
    bug: "a graph revision's chunk takes one position more than REVISION_CHUNK (decision 0055): every revision past the first full chunk answers with the position of the one after it",
    edits: [{ file: 'src/projections/revision-positions.ts', find: 'if (last === undefined || last.length === REVISION_CHUNK) r.chunks.push', replace: 'if (last === undefined || last.length > REVISION_CHUNK) r.chunks.push', js: { find: 'if (last === undefined || last.length === REVISION_CHUNK)', replace: 'if (last === undefined || last.length > REVISION_CHUNK)' } }],
    caughtBy: ['test/revision-positions.test.ts'],
  },
  {
    name: 'view-keeps-revision-history',
    bug: "the view keeps every graph revision's position (decision 0055 undone in the view): a reading command's state grows with the build's history again",
    edits: [{ file: 'src/projections/build-state.ts', find: 'revisionPositions: at === undefined ? revisionPositionsFrom(state.graphRevision + 1, []) : revisionPositionsFrom(state.graphRevision, [at]),', replace: 'revisionPositions: state.revisionPositions,' }],
    caughtBy: ['test/revision-positions.test.ts'],
  },
  {
    name: 'compact-blueprint-first-milestone',
    bug: "a compact blueprint's milestones all read the first one's nodes (decision 0055): the scripted planner proposes and the worker finds the wrong nodes",
    edits: [{ file: 'src/adapters/blueprint/blueprint.ts', find: 'get: () => nodesOf(text) });', replace: 'get: () => nodesOf(first ??= text) });', js: { find: 'get: () => nodesOf(text) });', replace: 'get: () => nodesOf(first ??= text) });' } }, { file: 'src/adapters/blueprint/blueprint.ts', find: '  const parsed = new Map<string, BlueprintNode[]>();', replace: '  const parsed = new Map<string, BlueprintNode[]>();\n  let first: string | undefined;', js: { find: '    const parsed = new Map();', replace: '    const parsed = new Map();\n    let first;' } }],
    caughtBy: ['test/compact-blueprint.test.ts'],
  },
  {
    name: 'page-cache-unbounded',
    bug: "connections keep better-sqlite3's 16,000 KiB page cache (decision 0055): a long build's native memory grows with its files again",
    edits: [{ file: 'src/projections/storage-guard.ts', find: '  const db = openGuarded(path, options);\n  boundPageCache(db);', replace: '  const db = openGuarded(path, options);', js: { find: '    const db = openGuarded(path, options);\n    boundPageCache(db);', replace: '    const db = openGuarded(path, options);' } }],
    caughtBy: ['test/page-cache.test.ts'],
  },
  {
    name: 'page-cache-before-exclusive-lock',
    bug: "a database read on a full disk bounds its page cache before taking the exclusive lock (decision 0055): setting the cache reads the schema through the shared memory file the full disk cannot hold, and status, show and log fail where they answered",
    edits: [{ file: 'src/projections/storage-guard.ts', find: '    const memory = openGuarded(path);', replace: '    const memory = openDatabase(path);' }],
    caughtBy: ['test/storage-faults.test.ts'],
  },
  {
    name: 'young-generation-grows',
    bug: "run lets V8 grow its young generation (decision 0057): each semi-space up to 16 MB, and the old generation's limit with it — a long build's memory 20 % larger for nothing",
    edits: [{ file: 'src/adapters/cli/heap-growth.ts', find: '  setFlagsFromString(`--semi-space-growth-factor=${SEMI_SPACE_GROWTH_FACTOR}`);\n', replace: '' , js: { find: '    setFlagsFromString(`--semi-space-growth-factor=${SEMI_SPACE_GROWTH_FACTOR}`);\n', replace: '' } }],
    caughtBy: ['test/heap-growth.test.ts'],
  },
];

/** @param {string} name @returns {Mutant} */
export function mutant(name) {
  const m = MUTANTS.find((x) => x.name === name);
  if (!m) throw new Error(`no mutant '${name}' (known: ${MUTANTS.map((x) => x.name).join(', ')})`);
  return m;
}

/** @param {string} path @param {string} find @param {string} replace */
function applyOnce(path, find, replace) {
  const text = readFileSync(path, 'utf8');
  const at = text.indexOf(find);
  if (at < 0 || text.indexOf(find, at + 1) >= 0) throw new Error(`mutant edit does not apply exactly once to ${path}: ${find}`);
  writeFileSync(path, text.slice(0, at) + replace + text.slice(at + find.length));
}

/** The file tsc builds from a source file: src/x.ts is dist/x.js, src/x.cts is dist/x.cjs. @param {string} file */
export function builtFile(file) {
  return file.replace(/^src\//, 'dist/').replace(/\.ts$/, '.js').replace(/\.cts$/, '.cjs');
}

/**
 * A copy of the repository's code (src and test with the mutant applied, the built bin and dist
 * with it applied too; node_modules linked), where `npx vitest run` runs the mutated product.
 * @param {Mutant | null} m  null: an unmutated copy (the control)
 * @returns {string} the copy's root
 */
export function mutatedCopy(m) {
  const dir = mkdtempSync(join(tmpdir(), `longbuild-mutant-${m?.name ?? 'control'}-`));
  for (const p of ['src', 'test', 'bin', 'dist', 'examples', 'prompts', 'schemas', 'scripts', 'ui', 'docs', 'package.json', 'tsconfig.json', 'vitest.config.ts']) cpSync(join(ROOT, p), join(dir, p), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  for (const e of m?.edits ?? []) {
    applyOnce(join(dir, e.file), e.find, e.replace);
    applyOnce(join(dir, builtFile(e.file)), e.js?.find ?? e.find, e.js?.replace ?? e.replace);
  }
  // The CLI runs from its bundle (dist/cli.cjs, decisions 0018 and 0033): bundle the mutated dist again.
  if ((m?.edits ?? []).length > 0) execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: dir, stdio: 'ignore' });
  return dir;
}

/** The mutated copy's CLI (bin/longbuild.js). @param {Mutant} m */
export function mutatedCli(m) {
  return join(mutatedCopy(m), 'bin', 'longbuild.js');
}
