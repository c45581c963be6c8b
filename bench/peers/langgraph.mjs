// LangGraph (JS) with its SqliteSaver checkpointer: one graph whose node runs once per step and
// loops N times, every superstep checkpointed; the state keeps the results, as a build's would.
// node langgraph.mjs DIR N [full|shipped]   (full: synchronous=FULL set on the saver's connection)
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { join } from 'node:path';
import { bytesUnder, ownCpuMs, report, stepResult } from './lib.mjs';

const [dir, nArg, mode = 'full'] = process.argv.slice(2);
const n = Number(nArg ?? 1000);
const saver = SqliteSaver.fromConnString(join(dir, 'langgraph.db'));
// The saver switches the file to WAL on first use, and this build of SQLite then defaults to
// synchronous=NORMAL unless it was set: set FULL after that switch, and report what was in effect
// when the steps ran (read after them, not before the switch: that read said FULL and was wrong).
saver.setup();
if (mode === 'full') saver.db.pragma('synchronous = FULL');
const State = Annotation.Root({
  i: Annotation({ reducer: (_, b) => b, default: () => 0 }),
  results: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
});
const graph = new StateGraph(State)
  .addNode('step', (s) => ({ i: s.i + 1, results: [stepResult(s.i)] }))
  .addEdge(START, 'step')
  .addConditionalEdges('step', (s) => (s.i < n ? 'step' : END))
  .compile({ checkpointer: saver });
const cpu0 = ownCpuMs();
const t0 = performance.now();
const out = await graph.invoke({ i: 0 }, { configurable: { thread_id: 'bench' }, recursionLimit: n + 10 });
const ms = performance.now() - t0;
const cpuMs = ownCpuMs() - cpu0;
if (out.i !== n || out.results.length !== n) throw new Error(`langgraph ran ${out.i} steps`);
const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][saver.db.pragma('synchronous', { simple: true })] ?? 'unknown';
saver.db.pragma('wal_checkpoint(TRUNCATE)');
report({ ms, cpuMs, bytes: bytesUnder(dir), synchronous });
