import type { PlannerInput, WorkPacket } from '../../commands/ports.js';
import type { EvidenceStore } from './effect-ports.js';

/** How much of a failure's output a retry's packet carries (its end: where test runners report). */
export const FAILURE_OUTPUT_CHARS = 6000;

/**
 * A retry's packet with the failure's evidence: the tail of the recorded output (stdout, then
 * stderr) of the failed attempt or the failing verification command, the candidate the worker's
 * directory starts from when it reworks it, and the files where that candidate conflicted with
 * the new base (left with conflict markers). Read from the evidence store, whose files
 * are checked against their SHA-256; a missing file is left out, never guessed.
 */
export function withFailureEvidence(packet: WorkPacket, evidence: readonly string[] | undefined, store: EvidenceStore, reworks: string | undefined, conflicts: readonly string[] = []): WorkPacket {
  const failure = packet.previousFailure;
  if (failure === undefined) return packet;
  const output = outputTail(evidence, store);
  return {
    ...packet,
    previousFailure: {
      ...failure, ...(output !== '' ? { output } : {}), ...(reworks !== undefined ? { reworks } : {}),
      ...(reworks !== undefined && conflicts.length > 0 ? { conflicts: [...conflicts] } : {}),
    },
  };
}

/** The tail of what a failure's evidence files hold (stdout, then stderr), at most FAILURE_OUTPUT_CHARS. */
function outputTail(evidence: readonly string[] | undefined, store: EvidenceStore): string {
  const texts = (evidence ?? []).map((sha) => store.get?.(sha) ?? null).filter((b): b is Uint8Array => b !== null && b.length > 0)
    .map((b) => Buffer.from(b).toString('utf8'));
  const all = texts.join('\n');
  return all.length > FAILURE_OUTPUT_CHARS ? `[…${all.length - FAILURE_OUTPUT_CHARS} characters before]\n${all.slice(-FAILURE_OUTPUT_CHARS)}` : all;
}

/** A planner's input with the output tail of each failed acceptance run, its evidence files read. */
export function withAcceptanceOutput(input: PlannerInput, store: EvidenceStore): PlannerInput {
  if (input.acceptance === undefined) return input;
  return {
    ...input,
    acceptance: input.acceptance.map(({ evidence, ...run }) => {
      const output = outputTail(evidence, store);
      return output === '' ? run : { ...run, output };
    }),
  };
}

/** The most paths a dependency lists in a work packet. */
export const DEPENDENCY_FILES_MAX = 200;

/**
 * A packet whose dependencies name the files they produced: the paths each accepted commit
 * changed (a summary's: all its nodes' commits), sorted, at most DEPENDENCY_FILES_MAX.
 */
export async function withDependencyFiles(packet: WorkPacket, filesOf: (commit: string) => Promise<string[]>): Promise<WorkPacket> {
  if (packet.dependencies === undefined || packet.dependencies.length === 0) return packet;
  const dependencies = await Promise.all(packet.dependencies.map(async (d) => {
    const commits = d.summary ? d.summary.acceptedCommits.map((c) => c.commit) : d.commit !== null && d.kind === 'writable' ? [d.commit] : [];
    if (commits.length === 0) return d;
    const files = new Set<string>();
    for (const c of commits) for (const f of await filesOf(c)) files.add(f);
    return { ...d, files: [...files].sort().slice(0, DEPENDENCY_FILES_MAX) };
  }));
  return { ...packet, dependencies };
}
