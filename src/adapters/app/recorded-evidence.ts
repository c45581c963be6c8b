import { NotFoundError } from '../../events/errors.js';
import type { StoredEvent } from '../../events/envelope.js';
import type { JobTests } from '../../events/catalogue.js';
import { FileEvidenceStore } from '../evidence-store.js';
import { readPages } from '../log/paging.js';
import { pathsOf, type AppContext } from './context.js';
import { openBuildLog } from './build-log.js';

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
  /** A job's tests (R-50, R-51): what its reports said, what they were compared with, and the ratchet's verdict. */
  readonly tests?: EvidenceTests;
  readonly streams: EvidenceStream[];
}

export interface EvidenceTests extends Omit<JobTests, 'passingSha256' | 'base' | 'holdout'> {
  readonly base: { readonly head: string; readonly passed: number; readonly measured: boolean } | null;
  readonly holdout?: { readonly tree: string; readonly passed: number | null; readonly failing: readonly string[]; readonly failingCount: number; readonly unreadable?: string };
  /** What became of the job: promoted (with the tests it retired), refused by the ratchet or otherwise failed (the reason), or not decided yet. */
  readonly verdict: { readonly kind: 'promoted'; readonly retired: readonly string[] } | { readonly kind: 'failed' | 'split'; readonly reason: string } | { readonly kind: 'open' };
  /** Each command's report: its format and counts, or why it could not be read. */
  readonly commands: readonly { readonly argv: readonly string[]; readonly report: string }[];
}

/** The recorded stdout/stderr of an attempt (NODE.N), a job's verification commands (job-N) or an acceptance run's commands (accept-N). */
export async function evidenceOf(ctx: AppContext, id: string): Promise<EvidenceOutput> {
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  let found: StoredEvent | undefined;
  let ended: StoredEvent | undefined;
  const ids = new Set<string>();
  try {
    for await (const page of readPages(log)) {
      for (const e of page) {
        const d = e.data as { attemptId?: string; jobId?: string; runId?: string };
        if (d.jobId === id && (e.type === 'IntegrationPromoted' || e.type === 'IntegrationFailed' || e.type === 'BatchSplit')) ended = e;
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
  const d = found.data as { passed: boolean; reason?: string; tests?: JobTests; evidence: { argv: string[]; exitCode: number | null; stdoutSha256: string; stderrSha256: string; tests?: { format: string; passed?: number; failed?: number; skipped?: number; unreadable?: string } }[] };
  const streams = d.evidence.flatMap((c) => {
    const cmd = `${c.argv.join(' ')} (exit ${c.exitCode ?? 'none'})`;
    return [stream(`${cmd} stdout`, c.stdoutSha256), stream(`${cmd} stderr`, c.stderrSha256)];
  });
  // The hold-out run's output (R-50): the base tests against the candidates' code.
  const h = d.tests?.holdout;
  if (h !== undefined) h.evidence.forEach((sha, i) => streams.push(stream(`hold-out ${d.evidence[Math.floor(i / 2)]?.argv.join(' ') ?? `command ${Math.floor(i / 2) + 1}`} (exit ${h.exitCodes[Math.floor(i / 2)] ?? 'none'}) ${i % 2 === 0 ? 'stdout' : 'stderr'}`, sha)));
  const kind = found.type === 'AcceptanceFinished' ? 'acceptance' : 'job';
  const tests = kind === 'job' && (d.tests !== undefined || d.evidence.some((c) => c.tests !== undefined)) ? testsOf(d, ended) : undefined;
  return { id, kind, position: found.position, outcome: d.passed ? 'passed' : 'failed', ...(d.reason !== undefined ? { reason: d.reason } : {}), ...(tests !== undefined ? { tests } : {}), streams };
}

function testsOf(d: { tests?: JobTests; evidence: { argv: string[]; tests?: { format: string; passed?: number; failed?: number; skipped?: number; unreadable?: string } }[] }, ended: StoredEvent | undefined): EvidenceTests {
  const t = d.tests;
  const e = ended?.data as { receipt?: { tests?: { retired?: string[] } }; reason?: string } | undefined;
  const verdict: EvidenceTests['verdict'] = ended === undefined ? { kind: 'open' }
    : ended.type === 'IntegrationPromoted' ? { kind: 'promoted', retired: e?.receipt?.tests?.retired ?? [] }
    : { kind: ended.type === 'BatchSplit' ? 'split' : 'failed', reason: e?.reason ?? '' };
  return {
    passed: t?.passed ?? 0, failed: t?.failed ?? 0, skipped: t?.skipped ?? 0,
    base: t?.base == null ? null : { head: t.base.head, passed: t.base.passed, measured: t.base.measured === true },
    lost: t?.lost ?? [], lostCount: t?.lostCount ?? 0, unreported: t?.unreported ?? 0,
    ...(t?.holdout !== undefined ? { holdout: { tree: t.holdout.tree, passed: t.holdout.counts?.passed ?? null, failing: t.holdout.failing, failingCount: t.holdout.failingCount, ...(t.holdout.unreadable !== undefined ? { unreadable: t.holdout.unreadable } : {}) } } : {}),
    verdict,
    commands: d.evidence.map((c) => ({
      argv: c.argv,
      report: c.tests === undefined ? 'no test report (exit code only)' : c.tests.unreadable !== undefined ? `${c.tests.format} report unreadable: ${c.tests.unreadable}` : `${c.tests.format}: ${c.tests.passed} passed, ${c.tests.failed} failed, ${c.tests.skipped} skipped`,
    })),
  };
}

