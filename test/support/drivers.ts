/** Planner and worker wrappers the resume tests share (real scripted worker, counted). */
import { readFileSync } from 'node:fs';
import type { Planner, Worker } from '../../src/commands/ports.js';
import { ScriptedWorker } from '../../src/adapters/blueprint/scripted-worker.js';
import { parseBlueprint } from '../../src/adapters/blueprint/blueprint.js';

/** A planner that must never be called: the resumed controller has everything it needs in the log. */
export const throwingPlanner: Planner = {
  route: 'scripted:blueprint',
  propose: async (input) => {
    throw new Error(`planner called after resume (${input.callId})`);
  },
};

/** The blueprint's scripted worker, recording each node it is asked to implement. */
export function countingWorker(blueprintPath: string, calls: string[]): Worker {
  const inner = new ScriptedWorker(parseBlueprint(JSON.parse(readFileSync(blueprintPath, 'utf8'))));
  return { implement: (packet, wt) => (calls.push(packet.nodeId), inner.implement(packet, wt)) };
}
