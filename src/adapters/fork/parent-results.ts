/**
 * A fork's parent's results: the planner answers and worker outcomes the parent recorded
 * after the fork point, by input digest. Read once, on the first call that asks, from the parent's
 * log where the fork says it lives; a parent that cannot be read (moved, removed) has no results
 * to give, and every call is made. Evidence files a reused outcome names are copied into the
 * fork's own store (checked against their SHA-256), or the outcome is not reused.
 */
import { join } from 'node:path';
import type { JsonValue } from '../../events/canonical.js';
import type { DataOf } from '../../events/catalogue.js';
import type { StoredEvent } from '../../events/envelope.js';
import type { KeptWorkerOutcome } from '../../commands/step-types.js';
import type { ForkRecord } from '../../projections/build-state.js';
import { buildPaths, openBuildLog } from '../build-dir.js';
import { FileEvidenceStore } from '../evidence-store.js';
import type { ReuseSource } from '../controller/effects.js';
import type { EvidenceStore } from '../controller/ports.js';

interface Indexed {
  readonly planner: Map<string, StoredEvent>;
  readonly worker: Map<string, StoredEvent>;
}

/** The parent's recorded results after `fork.position`, by the input digest each recorded. */
export async function readParentResults(fork: Pick<ForkRecord, 'repo' | 'dir' | 'position'>): Promise<Indexed> {
  const index: Indexed = { planner: new Map(), worker: new Map() };
  const log = await openBuildLog(buildPaths({ repo: fork.repo, dir: fork.dir }));
  try {
    for (let from = fork.position + 1; ; ) {
      const page = await log.readAll({ from, limit: 1000 });
      if (page.length === 0) break;
      for (const e of page) {
        const input = (e.data as { inputSha256?: unknown }).inputSha256;
        if (typeof input !== 'string') continue;
        const into = e.type === 'PlannerReturned' ? index.planner : e.type === 'AttemptFinished' ? index.worker : null;
        if (into !== null && !into.has(input)) into.set(input, e);
      }
      from = page.at(-1)!.position + 1;
    }
  } finally {
    await log.close();
  }
  return index;
}

/** The reuse source of a fork whose parent is `fork`; `warn` is told once when the parent cannot be read. */
export function parentResults(fork: ForkRecord, evidence: EvidenceStore, warn: (line: string) => void): ReuseSource {
  let loaded: Promise<Indexed> | null = null;
  const index = (): Promise<Indexed> => (loaded ??= readParentResults(fork).catch((err: unknown) => {
    warn(`the parent build at ${fork.dir} cannot be read (${(err as Error).message}); this fork makes every call itself`);
    return { planner: new Map(), worker: new Map() };
  }));
  const parentEvidence = new FileEvidenceStore(join(fork.dir, 'evidence'));
  /** Copy one evidence file from the parent's store; false when it is missing there. */
  const copied = (sha: string | undefined): boolean => {
    if (sha === undefined) return false;
    if (evidence.get?.(sha) != null) return true;
    const bytes = parentEvidence.get(sha);
    if (bytes === null) return false;
    return evidence.put(bytes) === sha;
  };
  return {
    async planner(inputSha256) {
      const e = (await index()).planner.get(inputSha256);
      if (e === undefined) return null;
      return { answer: (e.data as DataOf<'PlannerReturned'>).proposal as JsonValue, from: { position: e.position, hash: e.hash } };
    },
    async worker(inputSha256) {
      const e = (await index()).worker.get(inputSha256);
      if (e === undefined) return null;
      const d = e.data as DataOf<'AttemptFinished'>;
      if (!copied(d.stdoutSha256) || !copied(d.stderrSha256)) return null;
      if (d.outcome === 'committed' && d.commit === undefined) return null;
      const kept: KeptWorkerOutcome = {
        outcome: d.outcome, stdoutSha256: d.stdoutSha256!, stderrSha256: d.stderrSha256!,
        ...(d.reason !== undefined && d.outcome === 'failed' ? { reason: d.reason } : {}), ...(d.decision !== undefined ? { decision: d.decision } : {}),
        ...(d.durationMs !== undefined ? { durationMs: d.durationMs } : {}),
      };
      const commit = d.outcome === 'committed' ? { sha: d.commit!, repo: join(fork.dir, 'integrator.git') } : null;
      return { kept, commit, from: { position: e.position, hash: e.hash } };
    },
  };
}
