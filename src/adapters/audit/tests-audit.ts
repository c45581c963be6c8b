/**
 * The audit of a build's tests: every test summary the log records is read again from the
 * evidence it names — each command's report (its output, or the report file it wrote), the job's
 * passing tests, the base tests it no longer passes, the hold-out's — and every promotion is held
 * to the ratchet: no base test stopped passing that its receipt does not retire, and its base is
 * the tests the head it was promoted onto recorded. Read with the same parsers the host used,
 * from files the auditor holds; nothing of the machine that ran the build is trusted.
 */
import { createHash } from 'node:crypto';
import type { StoredEvent } from '../../events/envelope.js';
import type { CommandEvidence, JobTests, ReportSetting, TestCounts } from '../../events/catalogue.js';
import { countsOf, idsFile, idsOf, mergeReports, readReport, type TestReport } from '../../commands/test-report.js';

/** An evidence file's bytes by SHA-256 (checked against it by the caller), or null when missing. */
export type EvidenceReader = (sha256: string) => Uint8Array | null;

export interface TestsAuditResult {
  readonly problem: { readonly position: number; readonly message: string } | null;
  /** Jobs whose tests were checked, promotions held to the ratchet, tests retired. */
  readonly jobs: number;
  readonly promotions: number;
  readonly retired: number;
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Evidence files a VerificationFinished's tests name: ids files, report files, the hold-out's output. */
export function testEvidenceNamed(d: { evidence: readonly Pick<CommandEvidence, 'tests' | 'reportSha256'>[]; tests?: JobTests }): string[] {
  const out: string[] = [];
  for (const c of d.evidence) {
    if (c.reportSha256 !== undefined) out.push(c.reportSha256);
    if (c.tests !== undefined && 'passingSha256' in c.tests) out.push(c.tests.passingSha256);
  }
  const t = d.tests;
  if (t !== undefined) {
    out.push(t.passingSha256);
    if (t.base !== null) out.push(t.base.passingSha256);
    if (t.holdout !== undefined) {
      out.push(...t.holdout.evidence);
      if (t.holdout.counts !== null) out.push(t.holdout.counts.passingSha256);
    }
  }
  return out;
}

class Problem extends Error {
  constructor(readonly position: number, message: string) {
    super(message);
  }
}

/** Check every test summary and promotion of `events` against the evidence `read` gives. */
export function auditTests(events: readonly StoredEvent[], read: EvidenceReader): TestsAuditResult {
  let reports: readonly (ReportSetting | null)[] = [];
  let verifyCount = 0;
  const jobTests = new Map<string, JobTests | undefined>();
  /** The passing-ids digest each promoted head recorded. */
  const headTests = new Map<string, string | null>();
  /** Every promotion so far, in order: its result and the tests its receipt retired. */
  const promoted: { result: string; retired: readonly string[] }[] = [];
  let jobs = 0;
  let promotions = 0;
  let retired = 0;
  try {
    for (const e of events) {
      const d = e.data as Record<string, unknown>;
      if (e.type === 'BuildInitialized' || e.type === 'ForkedFrom') {
        const policy = d.tests as { reports: (ReportSetting | null)[] } | undefined;
        reports = policy?.reports ?? [];
        verifyCount = (d.verify as unknown[]).length;
      } else if (e.type === 'VerificationFinished') {
        const v = d as unknown as { jobId: string; passed: boolean; evidence: CommandEvidence[]; tests?: JobTests };
        const checked = checkVerification(e.position, v, reports, verifyCount, read);
        if (checked) jobs += 1;
        jobTests.set(v.jobId, v.tests);
        if (v.tests?.base != null && v.tests.base.measured !== true) {
          const recorded = headTests.get(v.tests.base.head);
          if (recorded !== undefined && recorded !== v.tests.base.passingSha256) {
            throw new Problem(e.position, `${v.jobId} compared its tests with ${v.tests.base.head.slice(0, 12)}'s as ${v.tests.base.passingSha256.slice(0, 12)}…, but that head's receipt recorded ${recorded?.slice(0, 12) ?? 'no tests'}`);
          }
        }
      } else if (e.type === 'IntegrationPromoted') {
        const r = (d as { receipt: { jobId: string; resultCommit: string; tests?: TestCounts & { retired?: string[] } } }).receipt;
        const t = jobTests.get(r.jobId);
        headTests.set(r.resultCommit, r.tests?.passingSha256 ?? null);
        if (t === undefined) {
          promoted.push({ result: r.resultCommit, retired: [] });
          if (r.tests !== undefined) throw new Problem(e.position, `the receipt of ${r.jobId} records tests its verification did not`);
          continue;
        }
        if (r.tests === undefined || r.tests.passingSha256 !== t.passingSha256 || r.tests.passed !== t.passed) throw new Problem(e.position, `the receipt of ${r.jobId} records other tests than its verification`);
        // Retired by this receipt, or by the promotions since the head its tests were compared with
        // (jobs it was stacked on): those tests were gone from the head it was promoted onto.
        const gone = new Set([...(r.tests.retired ?? []), ...retiredSince(promoted, t.base?.head ?? null)]);
        const kept = [...t.lost, ...(t.holdout?.failing ?? [])].filter((id) => !gone.has(id));
        if (kept.length > 0) {
          throw new Problem(e.position, `${r.jobId} was promoted though ${kept.length} test(s) of its base stopped passing and its receipt retires none of them (${kept.slice(0, 3).map((x) => JSON.stringify(x)).join(', ')}): the ratchet was not held`);
        }
        if (t.lostCount > t.lost.length) throw new Problem(e.position, `${r.jobId} was promoted though it stopped passing ${t.lostCount} tests, more than a plan may retire`);
        promoted.push({ result: r.resultCommit, retired: r.tests.retired ?? [] });
        promotions += 1;
        retired += r.tests.retired?.length ?? 0;
      }
    }
  } catch (err) {
    if (err instanceof Problem) return { problem: { position: err.position, message: err.message }, jobs, promotions, retired };
    throw err;
  }
  return { problem: null, jobs, promotions, retired };
}

/** The tests the promotions after the one that made `head` retired (all of them when `head` is no promotion's). */
function retiredSince(promoted: readonly { result: string; retired: readonly string[] }[], head: string | null): string[] {
  let from = 0;
  for (let i = promoted.length - 1; i >= 0; i--) {
    if (promoted[i]!.result === head) {
      from = i + 1;
      break;
    }
  }
  return promoted.slice(from).flatMap((p) => p.retired);
}

/** One verification's summaries read again from its evidence; true when it had any. */
function checkVerification(
  position: number, v: { jobId: string; passed: boolean; evidence: CommandEvidence[]; tests?: JobTests },
  reports: readonly (ReportSetting | null)[], verifyCount: number, read: EvidenceReader,
): boolean {
  const need = (sha: string, what: string): Uint8Array => {
    const b = read(sha);
    if (b === null) throw new Problem(position, `${v.jobId}: the evidence file ${sha.slice(0, 12)}… (${what}) is missing`);
    if (sha256(b) !== sha) throw new Problem(position, `${v.jobId}: the evidence file ${sha.slice(0, 12)}… (${what}) does not hash to its name`);
    return b;
  };
  const start = Math.max(0, v.evidence.length - verifyCount);
  const lastRun: TestReport[] = [];
  let any = false;
  v.evidence.forEach((c, i) => {
    const setting = reports[i >= start ? i - start : i] ?? null;
    if (c.tests === undefined || setting === null) return;
    any = true;
    const bytes = setting.file !== undefined ? (c.reportSha256 !== undefined ? need(c.reportSha256, 'a report file') : null) : need(c.stdoutSha256, 'a command\'s output');
    if (bytes === null) {
      if ('unreadable' in c.tests) return;
      throw new Problem(position, `${v.jobId}: ${JSON.stringify(c.argv)} records a report read from a file the evidence does not hold`);
    }
    const reading = readReport(setting.format, bytes);
    if ('unreadable' in c.tests) {
      if (reading.ok) throw new Problem(position, `${v.jobId}: ${JSON.stringify(c.argv)} records its report as unreadable, but it reads as ${reading.report.format}`);
      return;
    }
    if (!reading.ok) throw new Problem(position, `${v.jobId}: ${JSON.stringify(c.argv)} records ${c.tests.passed} passing tests, but its report does not read: ${reading.reason}`);
    const counts = countsOf(reading.report);
    if (counts.passed !== c.tests.passed || counts.failed !== c.tests.failed || counts.skipped !== c.tests.skipped || counts.passingSha256 !== c.tests.passingSha256) {
      throw new Problem(position, `${v.jobId}: ${JSON.stringify(c.argv)} records ${c.tests.passed} passed, ${c.tests.failed} failed, ${c.tests.skipped} skipped (${c.tests.passingSha256.slice(0, 12)}…); its report says ${counts.passed}, ${counts.failed}, ${counts.skipped} (${counts.passingSha256.slice(0, 12)}…)`);
    }
    need(c.tests.passingSha256, 'a command\'s passing test ids');
    if (i >= start) lastRun.push(reading.report);
  });
  const t = v.tests;
  if (t === undefined) return any;
  // The job's tests are every reporting command's of the last run together.
  const merged = mergeReports(lastRun);
  const counts = countsOf(merged);
  if (counts.passingSha256 !== t.passingSha256 || counts.passed !== t.passed || counts.failed !== t.failed || counts.skipped !== t.skipped) {
    throw new Problem(position, `${v.jobId} records ${t.passed} passing tests (${t.passingSha256.slice(0, 12)}…), its commands' reports give ${counts.passed} (${counts.passingSha256.slice(0, 12)}…)`);
  }
  need(t.passingSha256, 'the job\'s passing test ids');
  if (t.base !== null) {
    const base = idsOf(need(t.base.passingSha256, 'the base head\'s passing test ids'));
    if (base.length !== t.base.passed) throw new Problem(position, `${v.jobId}: the base head's ids file lists ${base.length} tests, its summary says ${t.base.passed}`);
    const passing = new Set(merged.passed);
    const lost = base.filter((id) => !passing.has(id));
    if (lost.length !== t.lostCount || lost.slice(0, t.lost.length).join('\n') !== t.lost.join('\n')) {
      throw new Problem(position, `${v.jobId} records ${t.lostCount} base tests no longer passing, its evidence gives ${lost.length}`);
    }
    if (t.holdout !== undefined && t.holdout.counts !== null) {
      const held = idsOf(need(t.holdout.counts.passingSha256, 'the hold-out\'s passing test ids'));
      if (sha256(idsFile(held)) !== t.holdout.counts.passingSha256 || held.length !== t.holdout.counts.passed) throw new Problem(position, `${v.jobId}: the hold-out's ids file does not match its summary`);
      const heldSet = new Set(held);
      const failing = base.filter((id) => !heldSet.has(id));
      if (failing.length !== t.holdout.failingCount || failing.slice(0, t.holdout.failing.length).join('\n') !== t.holdout.failing.join('\n')) {
        throw new Problem(position, `${v.jobId} records ${t.holdout.failingCount} base tests failing in its hold-out, its evidence gives ${failing.length}`);
      }
    }
  }
  if (t.holdout !== undefined) for (const sha of t.holdout.evidence) need(sha, 'the hold-out\'s output');
  return true;
}
