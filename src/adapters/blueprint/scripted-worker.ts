/**
 * The scripted worker: implements a node by writing the blueprint's files into the attempt's own
 * clone; the host commits them with the packet's fixed date, so the same packet
 * gives the same commit. A node's first `failAttempts` attempts write `failFiles` (default: a
 * `node --test` file that fails) so verification fails; a read-only node records its decision.
 */
import { lstatSync, mkdirSync, realpathSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import type { WorkPacket, Worker, WorkerResult } from '../../commands/ports.js';
import { findBlueprintNode, relativePathProblem, type Blueprint, type BlueprintNode } from './blueprint.js';
import { appendLedger, ledgerPathFrom } from './effects-ledger.js';

/** The test file a failing attempt writes when the node has no `failFiles`. */
export function defaultFailFiles(nodeId: string): Record<string, string> {
  return {
    [`test/longbuild-fail-${nodeId}.test.js`]:
      '"use strict";\n' +
      'const test = require("node:test");\n' +
      'const assert = require("node:assert");\n' +
      `test("scripted failing attempt of ${nodeId}", () => assert.fail("failAttempts: this attempt is meant to fail verification"));\n`,
  };
}

/** A writable node without `files` still needs a change to commit: one marker file. */
export function defaultFiles(nodeId: string): Record<string, string> {
  return { [`nodes/${nodeId}.txt`]: `${nodeId}\n` };
}

/** The files attempt `attempt` (1-based) of `node` writes. */
export function filesForAttempt(node: BlueprintNode, attempt: number): Record<string, string> {
  if (attempt <= (node.failAttempts ?? 0)) return node.failFiles ?? defaultFailFiles(node.id);
  return node.files ?? defaultFiles(node.id);
}

function failed(reason: string): WorkerResult {
  return { outcome: 'failed', reason, stdout: '', stderr: reason };
}

export class ScriptedWorker implements Worker {
  readonly #blueprint: Blueprint;
  readonly #ledgerPath: string | undefined;

  constructor(blueprint: Blueprint, opts: { ledgerPath?: string } = {}) {
    this.#blueprint = blueprint;
    this.#ledgerPath = opts.ledgerPath;
  }

  async implement(packet: WorkPacket, worktree: string): Promise<WorkerResult> {
    const ledger = ledgerPathFrom(this.#ledgerPath);
    if (ledger !== undefined) appendLedger(ledger, { kind: 'worker', key: packet.idempotencyKey, nodeId: packet.nodeId, pid: process.pid });
    const found = findBlueprintNode(this.#blueprint, packet.nodeId);
    if (found === undefined) return failed(`node '${packet.nodeId}' is not in the blueprint`);
    const { node } = found;
    if (node.kind !== packet.kind) return failed(`node '${node.id}' is ${node.kind} in the blueprint but the packet says ${packet.kind}`);
    if (node.kind === 'read-only') {
      return { outcome: 'recorded', ...(node.decision === undefined ? {} : { decision: node.decision }), stdout: '', stderr: '' };
    }
    const files = filesForAttempt(node, packet.attempt);
    const root = realpathSync(worktree);
    for (const [path, content] of Object.entries(files)) {
      const problem = relativePathProblem(path);
      if (problem !== null) return failed(`unsafe file path ${JSON.stringify(path)}: ${problem}`);
      const target = resolve(root, path);
      const rel = relative(root, target);
      if (rel.startsWith('..') || rel === '' || rel.split(sep).includes('..')) return failed(`file path ${JSON.stringify(path)} leaves the worktree`);
      mkdirSync(dirname(target), { recursive: true });
      // Refuse to follow a symlinked directory out of the worktree.
      const realDir = realpathSync(dirname(target));
      if (realDir !== root && !realDir.startsWith(root + sep)) return failed(`file path ${JSON.stringify(path)} resolves outside the worktree`);
      const dest = join(realDir, basename(target));
      // Never write through a symlink (a committed one could point anywhere).
      if (lstatSync(dest, { throwIfNoEntry: false })?.isSymbolicLink() === true) unlinkSync(dest);
      writeFileSync(dest, content);
    }
    // The host commits what the worker left in its clone: the worker only writes files.
    const names = Object.keys(files).sort().join(', ');
    return { outcome: 'committed', stdout: `wrote ${names}\n`, stderr: '' };
  }
}
