/**
 * The one verification pipeline (R-26, R-27, R-30): commands re-parsed strictly, run one after
 * the other in the workspace by the given runner (the sandbox), with exactly the trusted env,
 * stopping at the first failure; the workspace clean before, between and after (git-ignored
 * files count unless `ignoredFiles: 'allowed'`). The cache is asked for the whole sequence: when
 * every command of it is a cached pass on this tree (in this same sequence) all are replayed
 * (exact cached bytes, cacheHit true); otherwise every command runs, and the sequence is stored
 * only when all of it passed: exit 0, no timeout, no process left behind, the workspace still
 * clean. Failures are never stored; a dirty workspace is never a hit.
 */
import { readUntrustedFile } from '../untrusted-file.js';
import { existsSync, lstatSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, sep } from 'node:path';
import { sha256Hex } from '../../events/hash.js';
import { trustedEnvSha256, type CacheKeyInput } from '../../commands/cache-key.js';
import { verificationResult, workspaceStatus, type CommandRun, type VerificationResult } from '../git/git.js';
import { parseTrustedCommand, type ProcessResult } from '../process/run-process.js';
import type { VerificationCache } from './verification-cache.js';

export interface CachedCommandRun extends CommandRun {
  readonly cacheHit: boolean;
  /** The report file the command wrote (R-51), taken out of the workspace; absent when it writes none or wrote none. */
  readonly report?: Buffer;
}

export interface CachedVerificationResult extends VerificationResult {
  readonly commands: readonly CachedCommandRun[];
}

/** The phase a verification command runs in (R-57): setup (an install) or the verification proper. */
export type VerificationPhase = 'setup' | 'verify';

/** Runs one trusted command in the workspace (sandboxed in production), in its phase's sandbox. */
export type VerificationRunner = (o: { argv: readonly string[]; cwd: string; env: Readonly<Record<string, string>>; timeoutMs: number; phase: VerificationPhase }) => Promise<ProcessResult>;

/**
 * The setup phase of a command sequence (R-57): its first `count` commands are setup; each phase
 * adds its own variables to the trusted environment (part of each command's cache key) and has
 * the network or not (a command without it that fails on the network says so).
 */
export interface VerificationPhases {
  readonly setup: number;
  readonly env: Readonly<Record<VerificationPhase, Readonly<Record<string, string>>>>;
  readonly network: Readonly<Record<VerificationPhase, boolean>>;
}

/** What a command prints when it wanted the network and had none (npm offline, DNS, a refused route). */
const NO_NETWORK = /\b(ENOTCACHED|EAI_AGAIN|ENOTFOUND|ENETUNREACH|Temporary failure in name resolution|Network is unreachable|Could not resolve host|only-if-cached)\b/;

/** The one line a failed command gets when its output says it needed the network its phase does not have. */
export function networkHint(r: Pick<ProcessResult, 'stdout' | 'stderr'>, phase: VerificationPhase, phases: VerificationPhases | undefined): string {
  if (phases === undefined || phases.network[phase]) return '';
  const out = `${r.stdout.subarray(-65_536).toString('utf8')}\n${r.stderr.subarray(-65_536).toString('utf8')}`;
  if (!NO_NETWORK.test(out)) return '';
  return phase === 'setup'
    ? ': it needs the network, and setup has none (sandbox.network.setup is false)'
    : ': it needs the network, and verification has none (install dependencies in "setup", which has it; R-57)';
}

export interface CachedVerificationOptions {
  readonly workspace: string;
  /** The workspace's git directory, named explicitly (never discovered from its `.git` file). */
  readonly gitDir: string;
  /** The git tree checked out in `workspace` (the cache key's tree). */
  readonly tree: string;
  readonly commands: readonly (readonly string[])[];
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** null: the cache is off — every command runs, receipts keep the same shape (cacheHit false). */
  readonly cache: VerificationCache | null;
  readonly run: VerificationRunner;
  /** Git-ignored files a command leaves: `allowed` (an install's output, a coverage report) or `dirty` (the default). */
  readonly ignoredFiles?: 'allowed' | 'dirty';
  /** The workspace was just checked out by the host (nothing ran there yet): clean by construction, not checked before. */
  readonly fresh?: boolean;
  /**
   * The report file each command writes (R-51), relative to the workspace, by index: it must not
   * exist before the command runs, and is read and removed after (a hit replays the cached bytes).
   */
  readonly reportFiles?: readonly (string | undefined)[];
  /** The setup phase (R-57); absent: every command is verification, with `env` alone. */
  readonly phases?: VerificationPhases;
}

/** The largest report file read (a JUnit XML of a very large suite). */
const MAX_REPORT_BYTES = 64 * 1024 * 1024;

/**
 * Read and remove the report file a command wrote (R-51): undefined when it wrote none; a problem
 * when the path leaves the workspace (a directory on the way is a symlink planted by the code
 * under test), is a symlink or not a regular file, or is too large. Every process of the command
 * has ended, so nothing can swap the file meanwhile.
 */
export function takeReportFile(workspace: string, rel: string): Buffer | undefined | { problem: string } {
  const root = realpathSync(workspace);
  let dir: string;
  try {
    dir = realpathSync(dirname(join(workspace, rel)));
  } catch {
    return undefined;
  }
  if (dir !== root && !dir.startsWith(root + sep)) return { problem: `the report file ${rel} leaves the workspace (a directory on its path is a symlink)` };
  const path = join(dir, basename(rel));
  const read = readUntrustedFile(path, MAX_REPORT_BYTES);
  if (read.kind === 'missing') return undefined;
  if (read.kind === 'refused') return { problem: `the report file ${rel} cannot be read (${read.why})` };
  unlinkSync(path);
  return read.bytes;
}

/** True when something (a file, a symlink, a directory) is at the report path before the command ran. */
function reportPathTaken(workspace: string, rel: string): boolean {
  try {
    lstatSync(join(workspace, rel));
    return true;
  } catch {
    return false;
  }
}

/** SHA-256 of every existing file an argv names by absolute path (a script outside the tree). */
export function argvFileDigests(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of argv) {
    if (!isAbsolute(a) || !existsSync(a)) continue;
    try {
      if (statSync(a).isFile()) out[a] = sha256Hex(readFileSync(a));
    } catch {
      /* unreadable: not part of the key, and the command will say so */
    }
  }
  return out;
}

export async function verifyWithCache(o: CachedVerificationOptions): Promise<CachedVerificationResult> {
  const argvs = o.commands.map((c) => parseTrustedCommand(c));
  const status = () => workspaceStatus(o.workspace, { gitDir: o.gitDir, includeIgnored: o.ignoredFiles !== 'allowed' });
  const before = o.fresh === true ? [] : await status();
  if (before.length > 0) {
    return { passed: false, reason: `workspace not clean before verification: ${before.slice(0, 5).join('; ')}`, commands: [], cleanBefore: false, cleanAfter: false, dirty: before };
  }
  const phaseOf = (i: number): VerificationPhase => (i < (o.phases?.setup ?? 0) ? 'setup' : 'verify');
  const envOf = (i: number): Readonly<Record<string, string>> => (o.phases === undefined ? o.env : { ...o.env, ...o.phases.env[phaseOf(i)] });
  // Each command is known by its place in the whole sequence: a later one may need what an
  // earlier one made (an install, then the tests), so the sequence is replayed only whole.
  const identities = argvs.map((argv, index) => ({
    tree: o.tree, argv, envSha256: trustedEnvSha256(envOf(index)), argvFiles: argvFileDigests(argv), ...(argvs.length > 1 ? { sequence: { argvs, index } } : {}),
    ...(o.ignoredFiles === 'allowed' ? { ignoredFiles: 'allowed' as const } : {}),
    ...(o.reportFiles?.[index] !== undefined ? { reportFile: o.reportFiles[index] } : {}),
  }));
  const replay = replayWhole(o.cache, identities);
  if (replay !== null) {
    // The hits stand only on a workspace that is still clean (nothing ran, but check: R-27).
    const after = await status();
    return verificationResult(replay, after.length > 0 ? `workspace not clean after verification: ${after.slice(0, 5).join('; ')}` : undefined, after);
  }
  const runs: CachedCommandRun[] = [];
  const passed: { identity: (typeof identities)[number]; run: ProcessResult & { report?: Buffer } }[] = [];
  let reason: string | undefined;
  let after: string[] = [];
  for (const [i, argv] of argvs.entries()) {
    const label = JSON.stringify(argv);
    const reportFile = o.reportFiles?.[i];
    // The report is the command's own: a file already there (from the tree, or an earlier command) is never read as it.
    if (reportFile !== undefined && reportPathTaken(o.workspace, reportFile)) {
      reason = `the report file ${reportFile} of ${label} exists before the command runs (it must not be in the tree; R-51)`;
      break;
    }
    const phase = phaseOf(i);
    const r = await o.run({ argv, cwd: o.workspace, env: envOf(i), timeoutMs: o.timeoutMs, phase });
    const taken = reportFile === undefined ? undefined : takeReportFile(o.workspace, reportFile);
    const report = taken instanceof Buffer ? taken : undefined;
    runs.push({ argv, exitCode: r.exitCode, signal: r.signal, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs, timedOut: r.timedOut, leftover: r.leftover, cacheHit: false, ...(report !== undefined ? { report } : {}) });
    if (taken !== undefined && !(taken instanceof Buffer)) reason = `${label}: ${(taken as { problem: string }).problem}`;
    else if (r.spawnError !== undefined) reason = `${label} could not start: ${r.spawnError}`;
    else if (r.timedOut) reason = `${label} timed out after ${o.timeoutMs} ms`;
    else if (r.exitCode !== 0) reason = `${label} exited with ${r.exitCode === null ? `signal ${r.signal}` : r.exitCode}${networkHint(r, phase, o.phases)}`;
    else if (r.leftover) reason = `${label} left processes behind (killed)`;
    if (reason !== undefined) break;
    // Clean between commands as well as after the last: what one leaves, the next one reads.
    after = await status();
    if (after.length > 0) {
      reason = `workspace not clean after verification: ${after.slice(0, 5).join('; ')}`;
      break;
    }
    passed.push({ identity: identities[i]!, run: { ...r, ...(report !== undefined ? { report } : {}) } });
  }
  // Stored only when the whole sequence passed: never a part of it to replay.
  if (reason === undefined) for (const p of passed) o.cache?.store(p.identity, p.run);
  if (reason !== undefined && after.length === 0) after = await status();
  return verificationResult(runs, reason, after);
}

/** Every command of the sequence as cached passes, or null when any misses (then all of them run). */
function replayWhole(cache: VerificationCache | null, identities: readonly Omit<CacheKeyInput, 'policyVersion'>[]): CachedCommandRun[] | null {
  if (cache === null) return null;
  const runs: CachedCommandRun[] = [];
  for (const identity of identities) {
    const hit = cache.lookup(identity);
    if (hit === null) return null;
    runs.push({
      argv: [...identity.argv], exitCode: 0, signal: null, stdout: hit.stdout, stderr: hit.stderr, durationMs: hit.durationMs, timedOut: false, leftover: false, cacheHit: true,
      ...(hit.report !== undefined && hit.report.length > 0 ? { report: hit.report } : {}),
    });
  }
  return runs;
}
