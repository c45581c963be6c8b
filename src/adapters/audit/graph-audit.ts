import { isMainThread, Worker, workerData, parentPort } from 'node:worker_threads';
import type { StoredEvent } from '../../events/envelope.js';
import { initialBuildState } from '../../projections/build-state.js';
import { graphRecordProblems } from '../../projections/graph-record.js';

// The audit's graph check on a second thread: reconstructing every graph revision is the
// longest check and needs nothing the others compute, so the verifier starts it first and collects
// it last. The worker runs this very file (the compiled module, or the bundled verify.mjs), which
// is why the worker's side is at the top level below; from TypeScript sources (tests run in
// process) the check runs in this thread instead.

type GraphProblem = { position: number; problem: string } | null;
type Reply = { ok: true; problem: GraphProblem } | { ok: false; error: string };

const KIND = 'longbuild-graph-audit';

/** The graph check over the log's NDJSON text, running while the caller does other checks. */
export function startGraphAudit(logText: string): { result(): Promise<GraphProblem>; stop(): void } {
  let url = new URL(import.meta.url);
  // In the CLI's bundle (dist/cli.cjs) this file is not a module of its own: the worker runs the
  // compiled one beside it (dist/adapters/audit/graph-audit.js).
  if (url.pathname.endsWith('/cli.cjs')) url = new URL('adapters/audit/graph-audit.js', url);
  if (url.protocol !== 'file:' || !/\.m?js$/.test(url.pathname)) {
    return { result: async () => graphCheck(logText), stop: () => {} };
  }
  const worker = new Worker(url, { workerData: { kind: KIND, logText } });
  const done = new Promise<GraphProblem>((resolve, reject) => {
    worker.once('message', (m: Reply) => (m.ok ? resolve(m.problem) : reject(new Error(`graph check: ${m.error}`))));
    worker.once('error', (err) => reject(new Error(`graph check: the worker failed: ${err.message}`)));
    worker.once('exit', (code) => reject(new Error(`graph check: the worker exited (code ${code}) without an answer`)));
  });
  done.catch(() => {}); // collected by result(); a check that failed earlier never asks
  return { result: () => done, stop: () => void worker.terminate() };
}

/** The check itself, on either thread: every line of the log parsed, then every revision rebuilt. */
function graphCheck(text: string): GraphProblem {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return graphRecordProblems(lines.map((l) => JSON.parse(l) as StoredEvent), initialBuildState);
}

if (!isMainThread && (workerData as { kind?: unknown } | null)?.kind === KIND) {
  let reply: Reply;
  try {
    reply = { ok: true, problem: graphCheck((workerData as { logText: string }).logText) };
  } catch (err) {
    reply = { ok: false, error: (err as Error).message };
  }
  parentPort!.postMessage(reply);
}
