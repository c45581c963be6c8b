import { NotFoundError } from '../../../events/errors.js';
import type { StoredEvent } from '../../../events/envelope.js';
import { FileEvidenceStore } from '../../evidence-store.js';
import { readPages } from '../../log/paging.js';
import { openBuildLog, pathsOf } from '../open-build.js';
import type { CommandContext } from '../types.js';

export const positionals = { min: 1, max: 1 };

export interface EvidenceStream {
  readonly name: string;
  readonly sha256: string;
  /** The recorded bytes as text, or null when the file is missing from the evidence store (or edited). */
  readonly text: string | null;
}

export interface EvidenceOutput {
  readonly id: string;
  readonly kind: 'attempt' | 'job' | 'acceptance';
  readonly position: number;
  /** For an attempt: committed, recorded or failed (and why); for a job: passed or failed. */
  readonly outcome: string;
  readonly reason?: string;
  readonly streams: EvidenceStream[];
}

/** `longbuild evidence ATTEMPT|JOB|RUN`: the recorded stdout/stderr of an attempt, a job's verification commands or an acceptance run's commands. */
export async function run(ctx: CommandContext): Promise<EvidenceOutput> {
  const id = ctx.positionals[0]!;
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  let found: StoredEvent | undefined;
  const ids = new Set<string>();
  try {
    for await (const page of readPages(log)) {
      for (const e of page) {
        const d = e.data as { attemptId?: string; jobId?: string; runId?: string };
        const key = e.type === 'AttemptFinished' ? d.attemptId : e.type === 'VerificationFinished' ? d.jobId : e.type === 'AcceptanceFinished' ? d.runId : undefined;
        if (key === undefined) continue;
        ids.add(key);
        if (key === id) found = e; // the last one counts
      }
    }
  } finally {
    await log.close();
  }
  if (found === undefined) {
    const known = [...ids].slice(-8).join(', ');
    throw new NotFoundError(`evidence: no finished attempt, verified job or acceptance run '${id}' in the log (attempts are NODE.N, jobs job-N, acceptance runs accept-N${known ? `; recent: ${known}` : ''})`);
  }
  const store = new FileEvidenceStore(paths.evidence);
  const stream = (name: string, sha256: string): EvidenceStream => ({ name, sha256, text: store.get(sha256)?.toString('utf8') ?? null });
  if (found.type === 'AttemptFinished') {
    const d = found.data as { outcome: string; reason?: string; stdoutSha256?: string; stderrSha256?: string; adopted: boolean };
    const streams = d.stdoutSha256 !== undefined && d.stderrSha256 !== undefined ? [stream('stdout', d.stdoutSha256), stream('stderr', d.stderrSha256)] : [];
    const reason = d.reason ?? (d.adopted ? 'adopted after a crash: the output of the call was not kept' : streams.length === 0 ? 'this build records no worker output files (a build from before they were kept)' : undefined);
    return { id, kind: 'attempt', position: found.position, outcome: d.outcome, ...(reason !== undefined ? { reason } : {}), streams };
  }
  const d = found.data as { passed: boolean; reason?: string; evidence: { argv: string[]; exitCode: number | null; stdoutSha256: string; stderrSha256: string }[] };
  const streams = d.evidence.flatMap((c) => {
    const cmd = `${c.argv.join(' ')} (exit ${c.exitCode ?? 'none'})`;
    return [stream(`${cmd} stdout`, c.stdoutSha256), stream(`${cmd} stderr`, c.stderrSha256)];
  });
  const kind = found.type === 'AcceptanceFinished' ? 'acceptance' : 'job';
  return { id, kind, position: found.position, outcome: d.passed ? 'passed' : 'failed', ...(d.reason !== undefined ? { reason: d.reason } : {}), streams };
}

export function render(d: EvidenceOutput): string {
  const head = `${d.kind} ${d.id}: ${d.outcome}${d.reason !== undefined ? ` (${d.reason})` : ''}, recorded at position ${d.position}\n`;
  return head + d.streams.map((s) => {
    const body = s.text === null ? `(file ${s.sha256} is missing from the evidence store)\n` : s.text.length === 0 ? '(empty)\n' : s.text.endsWith('\n') ? s.text : `${s.text}\n`;
    return `--- ${s.name} (${s.sha256.slice(0, 12)})\n${body}`;
  }).join('');
}
