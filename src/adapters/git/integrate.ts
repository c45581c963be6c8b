/** Integration: protected paths, candidates onto head, verification, CAS promotion. See git.ts. */
import { linkEscape } from '../../commands/tree-links.js';
import { readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { EffectError, ValidationError } from '../../events/errors.js';
import type { ProcessResult } from '../process/run-process.js';
import { assertRefName, assertSha, git } from './exec.js';
import { commitParents, copyLooseObjects, hasLooseObject, isAncestor, looseBlob, objectsBetween, readRef, treeOf } from './repo.js';
import { looseDiff, type TreeChange } from './tree-diff.js';
import { addDetachedWorkspace, assertEffectId, removeWorkspace } from './worktrees.js';
import { updateOwnRef } from './own-refs.js';
import { surfaceMatcher, touchesOf, touchesReason, type PathChangeKind, type SurfaceJudgement, type SurfaceTouch } from '../../commands/test-surface.js';

/** Paths no candidate may touch, whatever the configuration adds (R-29). */
export const ALWAYS_PROTECTED: readonly string[] = ['.longbuild/'];

/** Paths changed between two commits (added, modified, deleted; renames as delete + add). */
export async function changedPaths(repo: string, base: string, commit: string): Promise<string[]> {
  assertSha(base, 'base');
  assertSha(commit, 'commit');
  const out = (await git(repo, ['diff', '--name-only', '-z', '--no-renames', base, commit])).stdout;
  return out.split('\0').filter((p) => p !== '');
}

/** True when `path` is `protectedPath` or inside it (a trailing `/` marks a directory). */
function isUnder(path: string, protectedPath: string): boolean {
  const p = protectedPath.replace(/\/+$/, '');
  return path === p || path.startsWith(p + '/');
}

export type IntegrationResult =
  | {
    readonly kind: 'applied'; readonly workspace: string; readonly gitDir: string; readonly resultCommit: string; readonly tree: string; readonly fastForward: boolean;
    /** The commit this job's own candidates were applied onto: the head with the layers below it (R-50's base tests). */
    readonly under: string;
  }
  | {
    readonly kind: 'conflict'; readonly candidate: string; readonly index: number; readonly detail: string;
    /** The job whose candidates conflicted: this one, or one it is stacked on (a layer). */
    readonly layer: string | null;
    /** What git printed, and the conflicted files with their conflict markers (`git diff`): the evidence. */
    readonly output: string;
    readonly paths: readonly string[];
    readonly durationMs: number;
  };

/** The candidates of one job, applied in order with that job's date (speculative integration stacks several). */
export interface CandidateLayer {
  readonly jobId: string;
  readonly commits: readonly string[];
  readonly date: string;
}

/**
 * Apply candidates onto `head` in a clean detached workspace `<workspacesDir>/<jobId>` (replacing
 * any leftover of a crashed run). One candidate whose only parent is the tip is a fast-forward
 * (result = candidate). Otherwise each candidate is cherry-picked in order with the fixed
 * committer and `date`, so the same inputs give the same result commit. `layers`: the candidates
 * of the jobs this one is stacked on, applied first, each as its own job applies them — so the
 * tip under this job's candidates is exactly the commit those jobs promote. On a conflict the
 * cherry-pick is aborted, the workspace removed, and the conflicting candidate named with git's
 * output and the conflicted files (with their markers) as evidence.
 */
export async function integrateCandidates(
  repo: string,
  workspacesDir: string,
  jobId: string,
  head: string,
  candidates: readonly string[],
  date: string,
  layers: readonly CandidateLayer[] = [],
): Promise<IntegrationResult> {
  assertEffectId(jobId, 'job id');
  assertSha(head, 'head');
  if (candidates.length === 0) throw new ValidationError('integrateCandidates needs at least one candidate commit');
  candidates.forEach((c, i) => assertSha(c, `candidate ${i}`));
  for (const l of layers) l.commits.forEach((c, i) => assertSha(c, `${l.jobId} candidate ${i}`));
  const workspace = resolve(workspacesDir, jobId);
  const all = [...layers, { jobId, commits: candidates, date }];
  // The tip under the layers still to apply: fast-forwards and layers this process already
  // applied (another job of the same stack did) need no workspace and no git process.
  let tip = head;
  let fastForward = false;
  let under = head;
  let next = 0;
  for (; next < all.length; next++) {
    const l = all[next]!;
    const known = (await fastForwardOf(repo, tip, l.commits)) ?? appliedLayers.get(layerKey(repo, tip, l));
    if (known === undefined) break;
    fastForward = l.jobId === jobId && known === l.commits[0];
    if (l.jobId === jobId) under = tip;
    tip = known;
  }
  await addDetachedWorkspace(repo, workspace, tip);
  // Read while the workspace is still the host's alone: later git calls name this directory
  // explicitly instead of following a `.git` file the verified code could rewrite (R-31).
  const gitDir = workspaceGitDir(workspace);
  for (const layer of all.slice(next)) {
    const base = tip;
    if (layer.jobId === jobId) under = tip;
    const ff = await fastForwardOf(repo, tip, layer.commits);
    if (ff !== undefined) {
      await git(workspace, ['checkout', '-q', '--detach', ff]);
      tip = ff;
      fastForward = layer.jobId === jobId;
      continue;
    }
    for (const [index, candidate] of layer.commits.entries()) {
      const started = performance.now();
      const r = await git(workspace, ['cherry-pick', '--allow-empty', '--keep-redundant-commits', candidate], { date: layer.date, allowFail: true });
      if (r.code !== 0) {
        const unmerged = await git(workspace, ['diff', '--name-only', '--diff-filter=U', '-z'], { allowFail: true });
        const paths = unmerged.stdout.split('\0').filter((p) => p !== '');
        const markers = paths.length > 0 ? (await git(workspace, ['diff', '--', ...paths], { allowFail: true })).stdout : '';
        const durationMs = performance.now() - started;
        await git(workspace, ['cherry-pick', '--abort'], { allowFail: true });
        await removeWorkspace(repo, workspace);
        const detail = (r.stdout + r.stderr).trim();
        return {
          kind: 'conflict', candidate, index, detail, layer: layer.jobId === jobId ? null : layer.jobId, paths, durationMs,
          output: `${detail}\n${paths.length > 0 ? `\nconflicting files: ${paths.join(', ')}\n\n${markers}` : ''}`,
        };
      }
    }
    tip = (await git(workspace, ['rev-parse', '--verify', 'HEAD'])).stdout.trim();
    remember(appliedLayers, layerKey(repo, base, layer), tip);
  }
  return { kind: 'applied', workspace, gitDir, resultCommit: tip, tree: await treeOf(repo, tip), fastForward, under };
}

/** A lone candidate whose only parent is `tip` is applied as itself (a fast-forward); else undefined. */
async function fastForwardOf(repo: string, tip: string, commits: readonly string[]): Promise<string | undefined> {
  if (commits.length !== 1) return undefined;
  const parents = await commitParents(repo, commits[0]!);
  return parents.length === 1 && parents[0] === tip ? commits[0] : undefined;
}

/**
 * What applying a layer onto a tip gave (cherry-picks with fixed identity and date are
 * deterministic): a job stacked on others starts its workspace from the commit the jobs below
 * it already made instead of cherry-picking their candidates again. A cache of this process only.
 */
const appliedLayers = new Map<string, string>();
const layerKey = (repo: string, tip: string, l: CandidateLayer): string => `${resolve(repo)}\0${tip}\0${l.date}\0${l.commits.join(',')}`;

function remember(cache: Map<string, string>, key: string, value: string): void {
  if (cache.size >= 4096) cache.delete(cache.keys().next().value!);
  cache.set(key, value);
}

/** One verification command's run: the process runner's result (R-26). */
export type CommandRun = Omit<ProcessResult, 'spawnError'>;

export interface VerificationResult {
  /** Every command exited 0, none left a process behind, the workspace was clean before and after. */
  readonly passed: boolean;
  /** Why it did not pass (first reason), absent when passed. */
  readonly reason?: string;
  readonly commands: readonly CommandRun[];
  readonly cleanBefore: boolean;
  readonly cleanAfter: boolean;
  /** `git status --porcelain` lines of a dirty workspace (before, else after). */
  readonly dirty: readonly string[];
}

/** The git directory of a linked workspace, from its `.git` file (read before anything untrusted ran there). */
export function workspaceGitDir(workspace: string): string {
  const text = readFileSync(join(workspace, '.git'), 'utf8');
  const m = /^gitdir: (.+)$/m.exec(text);
  if (m === null) throw new EffectError(`${workspace}/.git does not name a git directory`);
  return resolve(workspace, m[1]!.trim());
}

/**
 * `git status --porcelain` entries of a workspace, untracked files included, and ignored ones
 * unless `includeIgnored` is false. The git directory is given explicitly, never discovered.
 */
export async function workspaceStatus(workspace: string, opts: { gitDir: string; includeIgnored?: boolean }): Promise<string[]> {
  const args = ['status', '--porcelain=v1', '-z', '--untracked-files=all'];
  if (opts.includeIgnored !== false) args.push('--ignored=matching');
  const env = { GIT_DIR: opts.gitDir, GIT_WORK_TREE: resolve(workspace) };
  return (await git(workspace, args, { env })).stdout.split('\0').filter((l) => l !== '');
}

/** The result of a verification whose workspace was clean before: passed unless `reason`. */
export function verificationResult<R extends CommandRun>(runs: readonly R[], reason: string | undefined, dirtyAfter: readonly string[]): VerificationResult & { readonly commands: readonly R[] } {
  return {
    passed: reason === undefined,
    ...(reason === undefined ? {} : { reason }),
    commands: runs,
    cleanBefore: true,
    cleanAfter: dirtyAfter.length === 0,
    dirty: dirtyAfter,
  };
}

/**
 * Move `ref` from `expectedOld` (null: must not exist) to `newCommit` with ONE compare-and-set
 * `git update-ref` (R-24). Returns 'promoted', or `{ conflict: actual }` when the ref was
 * elsewhere (actual null: the ref does not exist). Other failures throw EffectError.
 */
export async function promote(repo: string, ref: string, newCommit: string, expectedOld: string | null): Promise<'promoted' | { conflict: string | null }> {
  await assertRefName(repo, ref);
  assertSha(newCommit, 'newCommit');
  if (expectedOld !== null) assertSha(expectedOld, 'expectedOld');
  const own = await updateOwnRef(repo, ref, newCommit, expectedOld);
  if (own === 'updated') return 'promoted';
  if (own !== null) return own;
  const old = expectedOld ?? '0'.repeat(newCommit.length);
  const r = await git(repo, ['update-ref', '-m', 'longbuild: promote', ref, newCommit, old], { allowFail: true });
  if (r.code === 0) return 'promoted';
  const actual = await readRef(repo, ref);
  if (actual === expectedOld) {
    throw new EffectError(`update-ref ${ref} failed although it is at the expected ${expectedOld ?? '(absent)'}: ${r.stderr.trim()}`);
  }
  return { conflict: actual };
}

/** True when `ref` is at `commit` or has moved past it (commit is an ancestor): the promotion happened (R-18 adoption). */
export async function isPromoted(repo: string, ref: string, commit: string): Promise<boolean> {
  await assertRefName(repo, ref);
  assertSha(commit, 'commit');
  const tip = await readRef(repo, ref);
  if (tip === null) return false;
  if (tip === commit) return true;
  const exists = await git(repo, ['cat-file', '-e', `${commit}^{commit}`], { allowFail: true });
  return exists.code === 0 && (await isAncestor(repo, commit, tip));
}

/** What the integrator checks on every candidate (R-31), besides protected paths. */
export interface CandidateLimits {
  /** Largest file a candidate may add or change, in bytes. */
  readonly maxFileBytes: number;
  /** Files a candidate may hold beyond the base's (absent: no limit). */
  readonly maxFiles?: number;
  /** Paths no candidate may touch (configured, plus the build directory). */
  readonly protectedPaths: readonly string[];
  /** The trusted verification commands: every in-tree file they name is protected too. */
  readonly verify: readonly (readonly string[])[];
}

/**
 * The in-tree files a verification argv names (R-31): every argument that is not an option and
 * looks like a relative file path (`test/run.js`, `./verify.sh`), normalised, unless it names a
 * directory of the base tree (a test directory stays open for new tests).
 */
export function verifyNamedPaths(verify: readonly (readonly string[])[]): string[] {
  const out = new Set<string>();
  for (const argv of verify) {
    for (const a of argv.slice(1)) {
      if (a.startsWith('-') || a.includes('=') || a.includes(':') || isAbsoluteLike(a)) continue;
      if (!a.includes('/') && !/\.[A-Za-z0-9]+$/.test(a)) continue;
      const p = posix.normalize(a).replace(/\/+$/, '');
      if (p === '.' || p.startsWith('../') || p === '..') continue;
      out.add(p);
    }
  }
  return [...out].sort();
}

const isAbsoluteLike = (a: string): boolean => a.startsWith('/') || a.startsWith('~');

/**
 * Why a candidate commit is refused (R-29, R-31, R-49), or null: a changed path under a protected
 * path or naming a file a verification command runs; a symlink whose target leaves the tree; a
 * submodule (gitlink); a file over the size limit; a change to the verification surface (an
 * existing test modified or deleted, a surface file or part changed) its node does not declare.
 */
export async function candidateProblem(repo: string, base: string, commit: string, limits: CandidateLimits, judged?: SurfaceJudgement): Promise<{ rule: string; reason: string } | null> {
  assertSha(base, 'base');
  assertSha(commit, 'commit');
  // The candidate's objects were just written by the host (loose): read in-process when they are.
  let changed: readonly TreeChange[] | null = await looseDiff(repo, base, commit);
  if (changed === null) {
    const out = (await git(repo, ['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', base, commit])).stdout.split('\0');
    const listed: TreeChange[] = [];
    for (let i = 0; i + 1 < out.length; i += 2) {
      const meta = out[i]!.split(' ');
      const added = /^:?0+$/.test(meta[0]!);
      listed.push({ mode: meta[1]!, sha: meta[3]!, path: out[i + 1]!, ...(added ? {} : { old: meta[2]! }) });
    }
    changed = listed;
  }
  const protectedPaths = [...ALWAYS_PROTECTED, ...limits.protectedPaths];
  const namedPaths = verifyNamedPaths(limits.verify);
  const baseDirs = namedPaths.length === 0 ? new Set<string>() : new Set((await git(repo, ['ls-tree', '-r', '-d', '-z', '--name-only', base])).stdout.split('\0').filter((p) => p !== ''));
  const named = namedPaths.filter((p) => !baseDirs.has(p));
  for (const c of changed) {
    const prot = protectedPaths.find((pp) => isUnder(c.path, pp));
    if (prot !== undefined) return { rule: 'R-29', reason: `the candidate changes protected path '${c.path}'` };
    if (named.includes(c.path)) return { rule: 'R-31', reason: `the candidate changes '${c.path}', which a verification command runs` };
    if (c.mode === '000000') continue; // deleted
    if (c.mode === '160000') return { rule: 'R-31', reason: `the candidate adds a submodule (gitlink) at '${c.path}'` };
    const loose = await looseBlob(repo, c.sha);
    if (c.mode === '120000') continue; // judged below, with every other link of the tree

    const size = loose?.length ?? Number((await git(repo, ['cat-file', '-s', c.sha])).stdout.trim());
    if (size > limits.maxFileBytes) return { rule: 'R-31', reason: `the candidate's file '${c.path}' is ${size} bytes, over the limit of ${limits.maxFileBytes}` };
  }
  // A changed link is judged where its whole chain leads, through every link of the candidate's tree.
  if (changed.some((c) => c.mode === '120000')) {
    const links = await treeLinks(repo, commit);
    for (const [path] of links) {
      const escape = linkEscape(links, path);
      if (escape !== null) return { rule: 'R-31', reason: `the candidate's symlink '${path}' points outside the tree: ${escape}` };
    }
  }
  return judged === undefined ? null : surfaceProblem(repo, changed, judged);
}

/** Every symbolic link of `commit`'s tree: path to target. */
async function treeLinks(repo: string, commit: string): Promise<Map<string, string>> {
  const entries = (await git(repo, ['ls-tree', '-r', '-z', '--full-tree', commit])).stdout.split('\0').filter((e) => e.startsWith('120000 '));
  const out = new Map<string, string>();
  for (const e of entries) {
    const tab = e.indexOf('\t');
    const sha = e.slice(0, tab).split(' ')[2]!;
    out.set(e.slice(tab + 1), (await looseBlob(repo, sha))?.toString('utf8') ?? (await git(repo, ['cat-file', 'blob', sha])).stdout);
  }
  return out;
}

/** The candidate's changes to the verification surface its node does not declare (R-49), as one refusal, or null. */
async function surfaceProblem(repo: string, changed: readonly TreeChange[], judged: SurfaceJudgement): Promise<{ rule: string; reason: string } | null> {
  const m = surfaceMatcher(judged.surface);
  const undeclared: SurfaceTouch[] = [];
  for (const c of changed) {
    const change: PathChangeKind = c.old === undefined ? 'added' : c.mode === '000000' ? 'deleted' : 'modified';
    // The texts are read only when an entry protects a part of the file (a key of package.json).
    let texts: { base: string | null; candidate: string | null } | null = null;
    const read = async () => (texts ??= { base: c.old === undefined ? null : await blobText(repo, c.old), candidate: c.mode === '000000' ? null : await blobText(repo, c.sha) });
    const needsTexts = m.entriesFor(c.path).some((e) => e.part !== null);
    if (needsTexts) await read();
    for (const t of touchesOf(m, c.path, change, () => texts!)) if (!judged.allow[t.kind]) undeclared.push(t);
  }
  return undeclared.length === 0 ? null : { rule: 'R-49', reason: touchesReason(undeclared) };
}

async function blobText(repo: string, sha: string): Promise<string> {
  return (await looseBlob(repo, sha))?.toString('utf8') ?? (await git(repo, ['cat-file', 'blob', sha])).stdout;
}

/**
 * The objects a promotion adds, copied as loose files from the integrator's repository into the
 * user's when the user's repository holds the previous head as a loose object (it was published
 * the same way) and every new object is loose in the integrator's: the fetch's two git processes
 * saved at every promotion. False: fetch instead.
 */
async function copyNewObjects(userRepo: string, integratorRepo: string, oldHead: string | null, commit: string): Promise<boolean> {
  if (oldHead === null || !(await hasLooseObject(userRepo, oldHead))) return false;
  const ids = await objectsBetween(integratorRepo, oldHead, commit);
  return ids !== null && (await copyLooseObjects(integratorRepo, userRepo, ids));
}

/**
 * Publish the integration head to the user's repository (R-33): fetch its objects from the
 * integrator's repository, then move the user's ref with one compare-and-set from `expectedOld`
 * (null: force it, a repair). Returns false when the user's ref was elsewhere.
 */
export async function publishRef(userRepo: string, integratorRepo: string, ref: string, commit: string, expectedOld: string | null): Promise<boolean> {
  await assertRefName(userRepo, ref);
  assertSha(commit, 'commit');
  // Its objects, by id, without a temporary ref (the ref update below makes them reachable); a
  // promotion's commit is new to the user's repository, so it is fetched without asking first.
  const had = expectedOld === null && (await git(userRepo, ['cat-file', '-e', `${commit}^{commit}`], { allowFail: true })).code === 0;
  if (!had && !(await copyNewObjects(userRepo, integratorRepo, expectedOld, commit))) {
    await git(userRepo, ['fetch', '-q', '--no-tags', '--no-write-fetch-head', resolve(integratorRepo), commit]);
  }
  const args = ['update-ref', '-m', 'longbuild: publish', ref, commit];
  if (expectedOld !== null) args.push(expectedOld);
  const r = await git(userRepo, args, { allowFail: true });
  return r.code === 0;
}
