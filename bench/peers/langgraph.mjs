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
if (mode === 'full') saver.db.pragma('synchronous = FULL');
const synchronous = saver.db.pragma('synchronous', { simple: true });
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
saver.db.pragma('wal_checkpoint(TRUNCATE)');
report({ ms, cpuMs, bytes: bytesUnder(dir), synchronous });
