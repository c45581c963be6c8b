/**
 * Test runners' own reports, read into what the test ratchet compares (R-51): which tests passed,
 * failed and were skipped, each known by a stable id (its suite path and name). Pure: bytes in,
 * a report or one line saying why it cannot be read. A report that cannot be read is never a pass.
 *
 * Formats: TAP (`node --test`, tape, node-tap; nested subtests as Node.js prints them), mocha's
 * JSON reporter, mocha's spec reporter (its marks and summary), JUnit XML (pytest --junitxml,
 * go-junit-report, mocha's xunit, most CI tools). `auto` recognises TAP, mocha JSON and the mocha
 * spec summary in a command's output, and says there is none when it finds none.
 */
import { parseUntrustedJson } from './untrusted-json.js';
import { SaxesParser } from 'saxes';
import { sha256Hex } from '../events/hash.js';

export const REPORT_FORMATS = ['tap', 'mocha-json', 'mocha-spec', 'junit', 'auto'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

/** What one run's report says, each list sorted (code-point order) and without repeats. */
export interface TestReport {
  /** The format the report was read as (`auto` resolves to the one it found). */
  readonly format: Exclude<ReportFormat, 'auto'>;
  readonly passed: readonly string[];
  readonly failed: readonly string[];
  /** Skipped, pending and TODO tests: none of them counts as passing. */
  readonly skipped: readonly string[];
}

/** A report, or why it cannot be read (`none`: `auto` found no report in the output). */
export type ReportReading = { readonly ok: true; readonly report: TestReport } | { readonly ok: false; readonly none?: true; readonly reason: string };

/** The longest test id kept whole; a longer one is cut and keeps a digest of the rest. */
const MAX_ID = 300;

/**
 * An absolute path into a verification workspace (`…/workspaces/job-3/`), as runners name a test
 * file: each job runs in its own workspace, so the id keeps the path inside it only.
 */
const WORKSPACE_PATH = /(?:\/[^\s/]+)*\/workspaces\/[a-z0-9][a-z0-9._-]*\//g;

/**
 * A test id from its path of names: a verification workspace's absolute path made relative,
 * control characters (a terminal's escapes among them) U+FFFD, runs of white space one space, the
 * parts joined by ` > `; over MAX_ID characters it is cut and ends with 12 hex digits of the whole
 * id's SHA-256, so two long ids stay apart.
 */
export function testId(parts: readonly string[]): string {
  const clean = parts
    .map((p) => p.replace(WORKSPACE_PATH, '').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '\ufffd').replace(/\s+/g, ' ').trim())
    .filter((p) => p !== '')
    .join(' > ');
  const whole = clean === '' ? '(unnamed)' : clean;
  if (whole.length <= MAX_ID) return whole;
  return `${whole.slice(0, MAX_ID - 14)}… ${sha256Hex(whole).slice(0, 12)}`;
}

/** Collects results under their ids; a repeated id gets ` #2`, ` #3`, … in the order met. */
class Results {
  private readonly seen = new Map<string, number>();
  readonly passed: string[] = [];
  readonly failed: string[] = [];
  readonly skipped: string[] = [];

  add(parts: readonly string[], outcome: 'passed' | 'failed' | 'skipped'): void {
    const base = testId(parts);
    const n = (this.seen.get(base) ?? 0) + 1;
    this.seen.set(base, n);
    this[outcome].push(n === 1 ? base : `${base} #${n}`);
  }

  report(format: TestReport['format']): TestReport {
    const sorted = (xs: string[]) => [...xs].sort(compareIds);
    return { format, passed: sorted(this.passed), failed: sorted(this.failed), skipped: sorted(this.skipped) };
  }
}

/** Code-point order (never the locale's): the order ids are stored and digested in. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Read a report of `format` from `bytes` (a command's stdout, or the report file it wrote). */
export function readReport(format: ReportFormat, bytes: Uint8Array): ReportReading {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  switch (format) {
    case 'tap':
      return readTap(text);
    case 'mocha-json':
      return readMochaJson(text);
    case 'mocha-spec':
      return readMochaSpec(text);
    case 'junit':
      return readJunit(text);
    case 'auto':
      return readAuto(text);
  }
}

function fail(reason: string): ReportReading {
  return { ok: false, reason };
}

// ---- TAP --------------------------------------------------------------------

const TEST_POINT = /^(not ok|ok)\b(?:\s+(\d+))?(?:\s*-)?\s*(.*)$/;
const PLAN = /^1\.\.(\d+)(?:\s*#.*)?$/;

/** A TAP description and its directive: `name # SKIP why` (a `\#` is a literal `#`). */
function tapDescription(rest: string): { name: string; directive: 'skip' | 'todo' | null } {
  const m = /^(.*?)(?<!\\)#\s*(skip|todo)(?:ped|ping)?\b.*$/i.exec(rest);
  const name = (m ? m[1]! : rest).replace(/\\#/g, '#').trim();
  const directive = m ? (m[2]!.toLowerCase() as 'skip' | 'todo') : null;
  return { name, directive };
}

/**
 * TAP 13/14 as Node.js's test runner, tape and node-tap print it. A subtest is indented four
 * spaces under its parent and printed before it (`# Subtest: name` first); only leaves count as
 * tests, a parent's own line is a summary of them. Without subtests (tape), a test point is named
 * under the last comment before it (tape's `# test name`). YAML blocks are skipped. The top
 * level's plan must match its test points (a run cut short does not pass for a shorter one).
 */
function readTap(text: string): ReportReading {
  const lines = text.split(/\r?\n/);
  const hasSubtests = lines.some((l) => /^\s*# Subtest: /.test(l));
  const results = new Results();
  const subtest: string[] = [];
  /** Whether a test point was seen one level deeper since the last test point at each level. */
  const childSeen: boolean[] = [];
  let version = false;
  let plan: number | null = null;
  let topPoints = 0;
  let anyPoint = false;
  let lastComment = '';
  let yamlEnd: string | null = null;
  for (const raw of lines) {
    if (yamlEnd !== null) {
      if (raw.trimEnd() === yamlEnd) yamlEnd = null;
      continue;
    }
    const indent = raw.length - raw.trimStart().length;
    const line = raw.trim();
    if (line === '') continue;
    const level = Math.floor(indent / 4);
    if (/^TAP version \d+$/.test(line)) {
      version = true;
      continue;
    }
    if (line.startsWith('Bail out!')) return fail(`the TAP stream bailed out: ${line.slice(0, 200)}`);
    if (line === '---') {
      yamlEnd = `${' '.repeat(indent)}...`;
      continue;
    }
    const sub = /^# Subtest: (.*)$/.exec(line);
    if (sub) {
      subtest.length = level;
      subtest[level] = sub[1]!;
      continue;
    }
    if (line.startsWith('#')) {
      if (level === 0) lastComment = line.slice(1).trim();
      continue;
    }
    const p = PLAN.exec(line);
    if (p) {
      if (level === 0) {
        if (plan !== null) return fail('the TAP stream has two top-level plans');
        plan = Number(p[1]);
      }
      continue;
    }
    const t = TEST_POINT.exec(line);
    if (!t) continue; // anything else (a program's own output) is not TAP
    anyPoint = true;
    const { name, directive } = tapDescription(t[3]!);
    const isParent = childSeen[level] === true;
    childSeen[level] = false;
    if (level > 0) childSeen[level - 1] = true;
    if (level === 0) topPoints += 1;
    if (isParent) continue;
    const path = hasSubtests ? [...subtest.slice(0, level), name] : level === 0 && lastComment !== '' ? [lastComment, name] : [name];
    const outcome = directive !== null ? 'skipped' : t[1] === 'ok' ? 'passed' : 'failed';
    results.add(path, outcome);
  }
  if (!anyPoint && plan === null) return { ok: false, none: true, reason: `no TAP report in the output (${version ? 'a version line but no plan and no test point' : 'no plan and no test point'})` };
  if (plan === null) return fail(`the TAP stream has ${topPoints} test points and no plan (the run was cut short?)`);
  if (plan !== topPoints) return fail(`the TAP plan is 1..${plan}, the stream has ${topPoints} top-level test points (the run was cut short?)`);
  return { ok: true, report: results.report('tap') };
}

// ---- mocha ------------------------------------------------------------------

interface MochaTest {
  readonly fullTitle?: unknown;
  readonly title?: unknown;
}

/** mocha's JSON reporter: the last `{ "stats": … }` object of the output (a test's own output may come before it). */
function readMochaJson(text: string): ReportReading {
  const at = text.lastIndexOf('{\n  "stats": {');
  if (at < 0) return { ok: false, none: true, reason: 'no mocha JSON report ({"stats": …}) in the output' };
  let doc: { stats?: unknown; passes?: unknown; failures?: unknown; pending?: unknown };
  // Written by the code under test's process: read within the bound of R-55.
  const read = parseUntrustedJson(text.slice(at), { duplicateKeys: 'allow' });
  if (!read.ok) return fail(`the mocha JSON report is refused: ${read.problem.slice(0, 160)}`);
  doc = read.value as typeof doc;
  if (doc === null || typeof doc !== 'object') return fail('the mocha JSON report is not an object');
  const lists = [doc.passes, doc.failures, doc.pending];
  if (typeof doc.stats !== 'object' || doc.stats === null || !lists.every(Array.isArray)) return fail('the mocha JSON report lacks stats, passes, failures or pending');
  const results = new Results();
  const title = (t: MochaTest) => (typeof t.fullTitle === 'string' ? t.fullTitle : typeof t.title === 'string' ? t.title : '');
  for (const t of doc.passes as MochaTest[]) results.add([title(t)], 'passed');
  for (const t of doc.failures as MochaTest[]) results.add([title(t)], 'failed');
  for (const t of doc.pending as MochaTest[]) results.add([title(t)], 'skipped');
  const stats = doc.stats as { passes?: unknown; failures?: unknown; pending?: unknown };
  if (stats.passes !== results.passed.length || stats.failures !== results.failed.length || stats.pending !== results.skipped.length) {
    return fail(`the mocha JSON report's stats (${String(stats.passes)} passes, ${String(stats.failures)} failures, ${String(stats.pending)} pending) do not match its lists`);
  }
  return { ok: true, report: results.report('mocha-json') };
}

const SPEC_SUMMARY = /^\s+(\d+) (passing|pending|failing)\b/;

/**
 * mocha's spec reporter: each test a line under its suites (two spaces a level) marked ✔/✓/√
 * (passed), `-` (pending) or `N)` (failed), then the summary (`N passing`, `N pending`,
 * `N failing`). The marks must add up to the summary: output of the tests themselves that looks
 * like a mark makes the report unreadable, never a different set of passes.
 */
function readMochaSpec(text: string): ReportReading {
  const lines = text.replace(/\u001b\[[0-9;]*m/g, '').split(/\r?\n/);
  const summaryAt = lines.findIndex((l) => /^\s+\d+ passing\b/.test(l));
  if (summaryAt < 0) return { ok: false, none: true, reason: 'no mocha spec summary ("N passing") in the output' };
  const counts = { passing: 0, pending: 0, failing: 0 };
  for (const l of lines.slice(summaryAt, summaryAt + 4)) {
    const m = SPEC_SUMMARY.exec(l);
    if (m) counts[m[2] as keyof typeof counts] = Number(m[1]);
  }
  const results = new Results();
  const suites: { indent: number; name: string }[] = [];
  for (const raw of lines.slice(0, summaryAt)) {
    const indent = raw.length - raw.trimStart().length;
    const line = raw.trim();
    if (line === '' || indent < 2) continue;
    const mark = /^(?:[✔✓√]\s+(.*?)(?:\s+\(\d+ms\))?|-\s+(.*)|\d+\)\s+(.*))$/.exec(line);
    while (suites.length > 0 && suites.at(-1)!.indent >= indent) suites.pop();
    const path = suites.map((s) => s.name);
    if (mark === null) {
      suites.push({ indent, name: line });
      continue;
    }
    if (mark[1] !== undefined) results.add([...path, mark[1]], 'passed');
    else if (mark[2] !== undefined) results.add([...path, mark[2]], 'skipped');
    else results.add([...path, mark[3]!], 'failed');
  }
  if (results.passed.length !== counts.passing || results.skipped.length !== counts.pending || results.failed.length !== counts.failing) {
    return fail(`the mocha spec output marks ${results.passed.length} passing, ${results.skipped.length} pending, ${results.failed.length} failing, its summary says ${counts.passing}, ${counts.pending}, ${counts.failing}`);
  }
  return { ok: true, report: results.report('mocha-spec') };
}

// ---- JUnit XML --------------------------------------------------------------

/**
 * JUnit XML: every `<testcase>` (under any nesting of `<testsuites>`/`<testsuite>`), known by
 * `classname > name`; a `<failure>` or `<error>` child fails it, a `<skipped>` skips it.
 */
function readJunit(text: string): ReportReading {
  const results = new Results();
  const parser = new SaxesParser({ xmlns: false });
  let current: { classname: string; name: string; outcome: 'passed' | 'failed' | 'skipped' } | null = null;
  let depth = 0;
  let caseDepth = -1;
  let root: string | null = null;
  let error: string | null = null;
  parser.on('error', (e) => {
    error ??= e.message.split('\n')[0]!;
  });
  parser.on('opentag', (tag) => {
    depth += 1;
    root ??= tag.name;
    const attr = (n: string) => {
      const v = tag.attributes[n];
      return typeof v === 'string' ? v : '';
    };
    if (tag.name === 'testcase' && current === null) {
      current = { classname: attr('classname'), name: attr('name'), outcome: 'passed' };
      caseDepth = depth;
    } else if (current !== null && depth === caseDepth + 1) {
      if (tag.name === 'failure' || tag.name === 'error') current.outcome = 'failed';
      else if (tag.name === 'skipped' && current.outcome !== 'failed') current.outcome = 'skipped';
    }
  });
  parser.on('closetag', (tag) => {
    if (tag.name === 'testcase' && current !== null && depth === caseDepth) {
      results.add([current.classname, current.name], current.outcome);
      current = null;
      caseDepth = -1;
    }
    depth -= 1;
  });
  try {
    parser.write(text).close();
  } catch (e) {
    error ??= (e as Error).message.split('\n')[0]!;
  }
  if (error !== null) return fail(`the JUnit XML report is not well-formed XML: ${error.slice(0, 160)}`);
  if (root !== 'testsuites' && root !== 'testsuite') return fail(`the JUnit XML report's root element is <${root ?? 'nothing'}>, not <testsuites> or <testsuite>`);
  return { ok: true, report: results.report('junit') };
}

// ---- auto -------------------------------------------------------------------

/** TAP (with its version line), mocha JSON or a mocha spec summary, whichever the output holds; `none` when it holds none. */
function readAuto(text: string): ReportReading {
  if (/^TAP version \d+\s*$/m.test(text)) return readTap(text);
  if (text.includes('{\n  "stats": {')) return readMochaJson(text);
  if (/^\s+\d+ passing\b/m.test(text.replace(/\u001b\[[0-9;]*m/g, ''))) return readMochaSpec(text);
  return { ok: false, none: true, reason: 'no test report (TAP, mocha JSON or a mocha spec summary) in the output' };
}

// ---- what is kept ----------------------------------------------------------

/** The counts of a report and the SHA-256 of its passing ids. */
export interface TestCounts {
  readonly passed: number;
  readonly failed: number;
  readonly skipped: number;
  /** SHA-256 of `idsFile(passing ids)`: the evidence file that lists them. */
  readonly passingSha256: string;
}

/** The one byte form of a list of test ids (an evidence file): sorted, one per line, each line ended. */
export function idsFile(ids: readonly string[]): Buffer {
  const sorted = [...new Set(ids)].sort(compareIds);
  return Buffer.from(sorted.map((id) => `${id}\n`).join(''), 'utf8');
}

/** The ids an ids file lists (the inverse of idsFile). */
export function idsOf(file: Uint8Array): string[] {
  const text = Buffer.from(file.buffer, file.byteOffset, file.byteLength).toString('utf8');
  return text === '' ? [] : text.slice(0, text.endsWith('\n') ? -1 : undefined).split('\n');
}

/** A report's counts and passing-ids digest. */
export function countsOf(r: Pick<TestReport, 'passed' | 'failed' | 'skipped'>): TestCounts {
  return { passed: r.passed.length, failed: r.failed.length, skipped: r.skipped.length, passingSha256: sha256Hex(idsFile(r.passed)) };
}

/**
 * Several commands' reports as one (a job's): a test passes when some command passed it and
 * none failed it; it fails when any failed it; it is skipped otherwise. Ids stay as each runner
 * named them.
 */
export function mergeReports(reports: readonly Pick<TestReport, 'passed' | 'failed' | 'skipped'>[]): Pick<TestReport, 'passed' | 'failed' | 'skipped'> {
  const failed = new Set(reports.flatMap((r) => r.failed));
  const passed = new Set(reports.flatMap((r) => r.passed).filter((id) => !failed.has(id)));
  const skipped = new Set(reports.flatMap((r) => r.skipped).filter((id) => !failed.has(id) && !passed.has(id)));
  const sorted = (s: Set<string>) => [...s].sort(compareIds);
  return { passed: sorted(passed), failed: sorted(failed), skipped: sorted(skipped) };
}
