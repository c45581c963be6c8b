/**
 * Verification commands as a config or a blueprint gives them: an argv array, or
 * `{ "run": argv, "report": FORMAT, "reportFile": PATH }` naming how its test report is read —
 * and the test policy settings beside them (`tests`, `verificationSurface`, `testChanges`,
 * `holdout`). One schema for both drivers; what a build records of them is `TestPolicy`.
 */
import { z } from 'zod';
import type { ReportSetting, TestPolicy } from '../events/catalogue.js';
import { surfaceEntryProblem, type VerificationSurface } from '../commands/test-surface.js';

const REPORT_NAMES = ['tap', 'mocha-json', 'mocha-spec', 'junit', 'auto', 'none'] as const;

/** A glob or path of the surface (`package.json#scripts`, `pyproject.toml#[tool.pytest]`, `.mocharc*`). */
const SurfaceEntrySchema = z.string().max(1024).superRefine((e, ctx) => {
  const problem = surfaceEntryProblem(e);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(e)}: ${problem}` });
});

const ReportFileSchema = z.string().min(1).max(1024).superRefine((p, ctx) => {
  if (p.startsWith('/') || p.split('/').some((s) => s === '..' || s === '' || s === '.git')) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)}: a relative path inside the workspace (no '..', no '.git')` });
});

/** A verification command with its report: `{ "run": ["npm", "test"], "report": "tap" }`. */
export function verifyEntrySchema<A extends z.ZodType<string[]>>(argv: A) {
  const withReport = z.strictObject({
    run: argv,
    report: z.enum(REPORT_NAMES).optional().describe('how its test report is read (R-51): tap, mocha-json, mocha-spec, junit (with reportFile), auto (default: TAP, mocha JSON or a mocha spec summary when the output holds one) or none (its exit code alone decides)'),
    reportFile: ReportFileSchema.optional().describe('the file the command writes its report to, relative to the workspace (a JUnit XML file); default: its standard output'),
  }).superRefine((c, ctx) => {
    if (c.report === 'junit' && c.reportFile === undefined) ctx.addIssue({ code: 'custom', path: ['reportFile'], message: 'a junit report is read from a file: give reportFile' });
    if (c.reportFile !== undefined && (c.report === undefined || c.report === 'auto' || c.report === 'none')) ctx.addIssue({ code: 'custom', path: ['report'], message: 'reportFile needs the report format it holds (tap, mocha-json, mocha-spec or junit)' });
  });
  return z.union([argv, withReport]);
}

export type VerifyEntry = string[] | { run: string[]; report?: (typeof REPORT_NAMES)[number]; reportFile?: string };

/** The test policy fields a config and a blueprint share (R-48..R-51). */
export const testPolicyFields = {
  tests: z.array(SurfaceEntrySchema).max(500).optional()
    .describe('globs of the test files candidates are judged by (an existing one is changed only where the plan declares "tests"; new ones may always be added); default: detected per ecosystem (test/**, **/*.test.*, **/*_test.go, tests/**, ...)'),
  verificationSurface: z.array(SurfaceEntrySchema).max(500).optional()
    .describe('the files that decide what verification runs and how (globs; FILE#KEY protects one key of a JSON file, FILE#[SECTION] one TOML/INI section); changed only where the plan declares "verification"; default: detected per ecosystem (package.json scripts and dependencies, lock files, test runner configs, Makefile, ...)'),
  testChanges: z.enum(['strict', 'review', 'record']).optional()
    .describe('when a declared test change makes tests of the base head fail: strict (default) refuses unless the node retires exactly those tests; review waits for an operator (acts as strict until approval gates exist); record accepts and records them as retired'),
  holdout: z.enum(['declared', 'always']).optional()
    .describe('when the base head\'s tests also run against a candidate\'s code: for nodes that declare test changes (default), or for every candidate'),
};

/** The argv of each entry, in order. */
export const argvsOf = (entries: readonly VerifyEntry[]): string[][] => entries.map((e) => (Array.isArray(e) ? e : e.run));

/** The report setting of each entry (`auto` unless it says otherwise; `none`: null). */
export function reportsOf(entries: readonly VerifyEntry[]): (ReportSetting | null)[] {
  return entries.map((e) => {
    if (Array.isArray(e)) return { format: 'auto' };
    if (e.report === 'none') return null;
    return { format: e.report ?? 'auto', ...(e.reportFile !== undefined ? { file: e.reportFile } : {}) };
  });
}

/** What a driver gives for its test policy; the surface is detected at init from the base head. */
export interface TestPolicyInput {
  readonly reports: readonly (ReportSetting | null)[];
  readonly given: { readonly files?: readonly string[]; readonly tests?: readonly string[] };
  readonly testChanges: TestPolicy['testChanges'];
  readonly holdout: TestPolicy['holdout'];
}

/** A driver's test policy fields as a TestPolicyInput (setup commands report nothing). */
export function testPolicyInput(
  o: { tests?: string[]; verificationSurface?: string[]; testChanges?: TestPolicy['testChanges']; holdout?: TestPolicy['holdout'] },
  setup: number, verify: readonly VerifyEntry[],
): TestPolicyInput {
  return {
    reports: [...Array.from({ length: setup }, () => null), ...reportsOf(verify)],
    given: { ...(o.verificationSurface !== undefined ? { files: o.verificationSurface } : {}), ...(o.tests !== undefined ? { tests: o.tests } : {}) },
    testChanges: o.testChanges ?? 'strict',
    holdout: o.holdout ?? 'declared',
  };
}

/** The policy a build records, once its surface is known. */
export function testPolicyOf(input: TestPolicyInput, surface: VerificationSurface): TestPolicy {
  return {
    surface: { files: [...surface.files], tests: [...surface.tests], ecosystems: [...surface.ecosystems], source: surface.source },
    testChanges: input.testChanges, holdout: input.holdout, reports: input.reports.map((r) => (r === null ? null : { ...r })),
  };
}
