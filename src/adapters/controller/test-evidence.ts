/**
 * What a verification's tests say (R-50, R-51), read where the verification ran: each command's
 * report read into counts (its passing ids kept as an evidence file), the job's tests merged, the
 * base head's tests (known from the log, else measured on the head), the base tests it no longer
 * passes, and — when asked — the hold-out run: the base's tests against the candidates' code.
 * Facts only; what they mean for the job is the pure core's verdict (src/commands/test-ratchet.ts).
 */
import type { CommandEvidence, JobTests, ReportSetting, TestCounts } from '../../events/catalogue.js';
import { countsOf, idsFile, idsOf, mergeReports, readReport, type TestReport } from '../../commands/test-report.js';
import type { VerifyTests as TestsRequest } from '../../commands/step-types.js';
import type { EvidenceStore, GitPort, VerificationRun } from './effect-ports.js';

/** The `tests` and `reportSha256` of each command's evidence, in the run's order. */
export type CommandTests = Pick<CommandEvidence, 'tests' | 'reportSha256'>;

interface ReadRun {
  readonly perCommand: CommandTests[];
  /** The reports of the last run (a retest's second), read. */
  readonly reports: TestReport[];
  /** Commands of the last run without a report (no setting, or `auto` found none). */
  readonly unreported: number;
}

/** The report file settings of the commands (for the runner, which takes the files out of the workspace). */
export const reportFilesOf = (reports: readonly (ReportSetting | null)[]): (string | undefined)[] => reports.map((r) => r?.file);

/** Every command's report read; passing ids and report files stored as evidence. */
export function readRun(v: VerificationRun, reports: readonly (ReportSetting | null)[], evidence: EvidenceStore): ReadRun {
  const start = v.lastRunStart ?? 0;
  const perCommand: CommandTests[] = [];
  const read: TestReport[] = [];
  let unreported = 0;
  v.commands.forEach((c, i) => {
    const last = i >= start;
    const setting = reports[last ? i - start : i] ?? null;
    const reportSha256 = c.report !== undefined ? evidence.put(c.report) : undefined;
    const withFile = reportSha256 !== undefined ? { reportSha256 } : {};
    if (setting === null) {
      if (last) unreported += 1;
      perCommand.push(withFile);
      return;
    }
    const bytes = setting.file !== undefined ? c.report : c.stdout;
    if (bytes === undefined) {
      perCommand.push({ tests: { format: setting.format, unreadable: `the command wrote no report file ${setting.file}` }, ...withFile });
      return;
    }
    const reading = readReport(setting.format, bytes);
    if (reading.ok) {
      evidence.put(idsFile(reading.report.passed));
      if (last) read.push(reading.report);
      perCommand.push({ tests: { format: reading.report.format, ...countsOf(reading.report) }, ...withFile });
    } else if (reading.none === true && setting.format === 'auto') {
      if (last) unreported += 1;
      perCommand.push(withFile);
    } else {
      perCommand.push({ tests: { format: setting.format, unreadable: reading.reason.slice(0, 400) }, ...withFile });
    }
  });
  return { perCommand, reports: read, unreported };
}

/** git's empty tree: the tree of a repository's empty first commit. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

/** At most this many test ids recorded in one list (more is refused as one change, R-51). */
export const MAX_NAMED = 1000;

export interface JobTestsInput {
  readonly jobId: string;
  readonly date: string;
  readonly commands: readonly (readonly string[])[];
  readonly run: VerificationRun;
  readonly read: ReadRun;
  /** The commit the candidates were applied onto, and their result. */
  readonly under: string;
  readonly result: string;
}

/**
 * The job's tests (JobTestsSchema), or undefined when there is nothing to ratchet: no command
 * reported tests, and the base head has no passing tests to lose.
 */
export async function jobTests(req: TestsRequest, i: JobTestsInput, git: GitPort, evidence: EvidenceStore, board?: { begin(key: string, label: string): void; end(key: string): void }): Promise<JobTests | undefined> {
  const reportFiles = reportFilesOf(req.reports);
  const reported = i.read.reports.length > 0;
  const candidate = mergeReports(i.read.reports);
  const shown = async <T>(key: string, label: string, work: () => Promise<T>): Promise<T> => {
    board?.begin(key, label);
    try {
      return await work();
    } finally {
      board?.end(key);
    }
  };
  // The head's tests: as the log knows them (their ids from the evidence store), else measured on the head.
  let base: { counts: TestCounts; ids: string[]; measured: string | null } | null = null;
  const knownIds = req.known != null ? evidence.get?.(req.known.passingSha256) ?? null : null;
  const measure = async (): Promise<NonNullable<typeof base>> => {
    // An empty head (a new repository's first commit) has no tests: nothing to run to know it.
    if ((await git.contentOf(req.head))?.tree === EMPTY_TREE) {
      evidence.put(idsFile([]));
      return { counts: countsOf({ passed: [], failed: [], skipped: [] }), ids: [], measured: EMPTY_TREE };
    }
    const measured = await shown(`${i.jobId}-base`, `measuring the tests of the head ${req.head.slice(0, 12)} (${i.jobId})`, () => git.checkHead(`${i.jobId}-base`, req.head, i.commands, reportFiles));
    const mine = mergeReports(readRun(measured.verification, req.reports, evidence).reports);
    evidence.put(idsFile(mine.passed));
    return { counts: countsOf(mine), ids: [...mine.passed], measured: measured.tree };
  };
  if (req.known != null && knownIds !== null) base = { counts: req.known, ids: idsOf(knownIds), measured: null };
  else if (req.known !== null) {
    if (!reported) return undefined; // nothing of the candidate's to compare: measure nothing
    base = await measure();
  }
  if (!reported && (base === null || base.ids.length === 0)) return undefined;
  const passing = new Set(candidate.passed);
  const lost = base === null ? [] : base.ids.filter((id) => !passing.has(id));
  const counts = countsOf(candidate);
  evidence.put(idsFile(candidate.passed));
  const holdout = req.holdout !== null && i.run.passed && base !== null
    ? await shown(`${i.jobId}-holdout`, `hold-out of ${i.jobId}: the base tests on the candidates' code`, () => holdoutOf(req, i, base!.ids, git, evidence))
    : undefined;
  return {
    ...counts,
    base: base === null ? null : { head: req.head, ...base.counts, ...(base.measured !== null ? { measured: true as const, tree: base.measured } : {}) },
    lost: lost.slice(0, MAX_NAMED), lostCount: lost.length,
    ...(holdout !== undefined ? { holdout } : {}),
    unreported: i.read.unreported,
  };
}

/** The hold-out run (R-50): the base's tests on the candidates' code, and the base tests it no longer passes. */
async function holdoutOf(req: TestsRequest, i: JobTestsInput, baseIds: readonly string[], git: GitPort, evidence: EvidenceStore): Promise<NonNullable<JobTests['holdout']>> {
  const commit = await git.holdoutCommit(i.under, i.result, req.holdout!, i.date);
  const ran = await git.checkHead(`${i.jobId}-holdout`, commit, i.commands, reportFilesOf(req.reports));
  const read = readRun(ran.verification, req.reports, evidence);
  const files = ran.verification.commands.flatMap((c) => [evidence.put(c.stdout), evidence.put(c.stderr)]);
  const exitCodes = ran.verification.commands.map((c) => c.exitCode);
  const common = { tree: ran.tree, exitCodes, evidence: files };
  if (read.reports.length === 0) {
    const unreadable = ran.verification.passed ? undefined : `it failed (${ran.verification.reason ?? 'a command failed'}) and reports no tests by name`;
    return { ...common, counts: null, failing: [], failingCount: 0, ...(unreadable !== undefined ? { unreadable } : {}) };
  }
  const merged = mergeReports(read.reports);
  evidence.put(idsFile(merged.passed));
  const passing = new Set(merged.passed);
  const failing = baseIds.filter((id) => !passing.has(id));
  return { ...common, counts: countsOf(merged), failing: failing.slice(0, MAX_NAMED), failingCount: failing.length };
}
