import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RandomDag } from './arbitraries.js';
import { cliJson, tempDir } from './cli.js';

/**
 * A blueprint of a random DAG: read-only work nodes (no git, cheap) and the `writable` ones, each
 * writing one file, with no verification commands, so a run takes a second or two.
 */
export function blueprintOf(dag: RandomDag, writable: readonly number[], detailedWindow: 1 | 2, title = 'random dag'): Record<string, unknown> {
  return {
    request: { title, nodes: dag.nodes.length },
    verify: [],
    detailedWindow,
    milestones: dag.milestones.map((m, mi) => ({
      id: m,
      title: `Milestone ${m}`,
      nodes: dag.listing.map((i) => ({ i, n: dag.nodes[i]! })).filter(({ n }) => n.milestone === mi).map(({ i, n }) => (
        writable.includes(i)
          ? { id: n.id, kind: 'writable', deps: n.deps, files: { [`src/${n.id}.txt`]: `${n.id}\n` } }
          : { id: n.id, kind: 'read-only', deps: n.deps, decision: `decided ${n.id}` }
      )),
    })),
  };
}

/** `n` read-only nodes in milestones of 20, each milestone a chain (`m<M>-n<K>`): a long build that runs in seconds. */
export function chainBlueprint(n: number, title: string): Record<string, unknown> {
  const milestones = Array.from({ length: Math.ceil(n / 20) }, (_, m) => ({
    id: `m${m}`,
    title: `Milestone ${m}`,
    nodes: Array.from({ length: Math.min(20, n - m * 20) }, (_, k) => ({ id: `m${m}-n${k}`, kind: 'read-only', deps: k === 0 ? [] : [`m${m}-n${k - 1}`], decision: 'ok' })),
  }));
  return { request: { title }, verify: [], detailedWindow: 2, milestones };
}

/**
 * A new git repository (one empty commit) with a build of `chainBlueprint(n, title)` initialised
 * in it: the repository, and what `init --json` printed.
 */
export function chainBuild<T = any>(n: number, title: string): { repo: string; init: T } {
  const repo = tempDir();
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'base']);
  const bp = join(repo, '..', `${repo.split('/').pop()}-bp.json`);
  writeFileSync(bp, JSON.stringify(chainBlueprint(n, title)));
  return { repo, init: cliJson<T>(['init', '--blueprint', bp], { cwd: repo }) };
}
