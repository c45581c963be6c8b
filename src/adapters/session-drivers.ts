import type { JsonValue } from '../events/canonical.js';
import type { Planner, Worker } from '../commands/ports.js';
import type { BuildPaths } from './build-dir.js';
import type { DriverFile } from './driver-file.js';
import type { SandboxedRun } from './sandbox/sandbox.js';
import type { ProcessResult } from './process/run-process.js';
import type { Blueprint } from './blueprint/blueprint.js';
import { proposedNode, ScriptedPlanner } from './blueprint/scripted-planner.js';
import { findBlueprintNode } from './blueprint/blueprint.js';
import type { CallDrivers } from './controller/effects.js';
import { HashedDriver } from '../commands/call-input.js';
import { ScriptedWorker } from './blueprint/scripted-worker.js';
import { CommandPlanner } from './command/command-planner.js';
import { CommandWorker } from './command/command-worker.js';
import { defaultRoute, styleFor } from './command/invocation.js';

/** How a session runs one untrusted process: in its role's sandbox, within the process cap, output redacted. */
export type Runner = (o: SandboxedRun) => Promise<ProcessResult>;

/** The planner a build's driver names: the scripted one of a blueprint, or its configured command or agent. */
export function plannerFor(driver: DriverFile, paths: BuildPaths, env: NodeJS.ProcessEnv, run: Runner): Planner {
  if (driver.kind === 'blueprint') return new ScriptedPlanner(driver.blueprint);
  const c = driver.config;
  return new CommandPlanner({
    style: styleFor('planner', c.planner, env, [...c.env.allow, ...(c.env.secretTo.planner ? c.env.secret : [])]),
    route: c.planner.route ?? defaultRoute(c.planner), timeoutMs: c.planner.timeoutSeconds * 1000, repo: paths.integrator, answers: paths.answers, run,
  });
}

/**
 * The driver of each planner and worker call: a blueprint's plan (what the scripted planner
 * proposes from) and a node's entry; a command build's planner or worker configuration and the
 * environment names it passes. Part of every call's input digest.
 */
export function callDrivers(driver: DriverFile): CallDrivers {
  const plain = (v: unknown): JsonValue => JSON.parse(JSON.stringify(v ?? null)) as JsonValue;
  if (driver.kind === 'blueprint') {
    const bp = driver.blueprint;
    const planned = (ms: Blueprint['milestones']) => ms.map((m) => ({ id: m.id, title: m.title, ...(m.intent !== undefined ? { intent: m.intent } : {}), nodes: m.nodes.map(proposedNode) }));
    // The plan is digested at the first planner call and not kept (decision 0054): a copy of every node.
    let plan: HashedDriver | undefined;
    const planner = (): HashedDriver => (plan ??= new HashedDriver(plain({ kind: 'blueprint', detailedWindow: bp.detailedWindow, coarseWindow: bp.coarseWindow, milestones: planned(bp.milestones), repairs: planned(bp.repairs ?? []) })));
    return { planner, worker: (nodeId) => plain({ kind: 'blueprint', node: findBlueprintNode(bp, nodeId)?.node ?? null }) };
  }
  const c = driver.config;
  const planner = plain({ kind: 'command', planner: c.planner, env: c.env });
  const worker = plain({ kind: 'command', worker: c.worker, env: c.env });
  return { planner: () => planner, worker: () => worker };
}

/** The worker a build's driver names. */
export function workerFor(driver: DriverFile, env: NodeJS.ProcessEnv, run: Runner): Worker {
  if (driver.kind === 'blueprint') return new ScriptedWorker(driver.blueprint, env.LONGBUILD_EFFECTS_LEDGER ? { ledgerPath: env.LONGBUILD_EFFECTS_LEDGER } : {});
  const c = driver.config;
  return new CommandWorker({
    style: styleFor('worker', c.worker, env, [...c.env.allow, ...(c.env.secretTo.worker ? c.env.secret : [])]), timeoutMs: c.worker.timeoutSeconds * 1000, run,
    rework: c.worker.rework ?? c.worker.agent !== undefined,
  });
}

