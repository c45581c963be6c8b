/**
 * `longbuild cache stats|verify|gc` (R-27). The cache is never authority: these only inspect or
 * shrink the build's cache (`<build dir>/cache/`, or the shared directory its config names);
 * nothing here touches the log.
 *
 * gc policy: an entry is kept only while (a) its tree was verified by this build — some
 * VerificationFinished event in the log names that tree; not asked of a cache several builds
 * share — and (b) it was used (stored or hit) within the last `--max-age-days` days (default 30;
 * 0 keeps nothing). Corrupt, truncated and dangling files are always removed.
 */
import { UsageError } from '../../../events/errors.js';
import { VerificationCache, type CacheProblem, type CacheStats } from '../../cache/verification-cache.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import { buildExists } from '../../build-dir.js';
import { cacheDirOfBuild } from '../../session.js';
import { readPages } from '../../log/paging.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = { 'max-age-days': { type: 'int' } };
export const positionals = { min: 1, max: 1 };

export type CacheOutput =
  | { readonly action: 'stats'; readonly dir: string; readonly stats: CacheStats }
  | { readonly action: 'verify'; readonly dir: string; readonly ok: boolean; readonly checked: number; readonly problems: CacheProblem[] }
  | { readonly action: 'gc'; readonly dir: string; readonly maxAgeDays: number; readonly removedKeys: number; readonly removedEntries: number; readonly kept: number };

export const DEFAULT_MAX_AGE_DAYS = 30;

export async function run(ctx: CommandContext): Promise<CacheOutput> {
  const action = ctx.positionals[0];
  const paths = pathsOf(ctx);
  if (!buildExists(paths)) await openBuildLog(paths); // throws the usual "no build" error
  const dir = cacheDirOfBuild(paths, ctx.env as NodeJS.ProcessEnv);
  const cache = new VerificationCache(dir);
  switch (action) {
    case 'stats':
      return { action, dir, stats: cache.stats() };
    case 'verify':
      return { action, dir, ...cache.verify() };
    case 'gc': {
      const raw = ctx.flags['max-age-days'];
      if (raw !== undefined && (typeof raw !== 'number' || raw < 0)) throw new UsageError('cache gc: --max-age-days must be a non-negative integer');
      const maxAgeDays = typeof raw === 'number' ? raw : DEFAULT_MAX_AGE_DAYS;
      // A cache other builds share keeps what they verified too: there, only age decides.
      const trees = dir === paths.cache ? await verifiedTrees(paths) : null;
      const cutoff = Date.now() - maxAgeDays * 86_400_000;
      return { action, dir, maxAgeDays, ...cache.gc((e) => (trees === null || trees.has(e.tree)) && maxAgeDays > 0 && e.lastUsedMs >= cutoff) };
    }
    default:
      throw new UsageError(`cache: unknown action '${action ?? ''}' (expected stats, verify or gc)`);
  }
}

/** Every tree a VerificationFinished event of the log names (the tests' measured base and hold-out trees too, R-50, R-51). */
async function verifiedTrees(paths: ReturnType<typeof pathsOf>): Promise<Set<string>> {
  const log = await openBuildLog(paths);
  try {
    const trees = new Set<string>();
    for await (const page of readPages(log)) for (const e of page) {
      if (e.type !== 'VerificationFinished') continue;
      const d = e.data as { tree: string | null; tests?: { base: { tree?: string } | null; holdout?: { tree: string } } };
      for (const tree of [d.tree, d.tests?.base?.tree, d.tests?.holdout?.tree]) if (typeof tree === 'string') trees.add(tree);
    }
    return trees;
  } finally {
    await log.close();
  }
}

export function render(d: CacheOutput): string {
  switch (d.action) {
    case 'stats':
      return `cache ${d.dir}: ${d.stats.keys} keys, ${d.stats.entries} entries, ${d.stats.bytes} bytes\n`;
    case 'verify':
      return `${d.ok ? 'ok' : 'FAILED'}: ${d.checked} keys checked\n${d.problems.map((p) => `  ${p.file}: ${p.problem}\n`).join('')}`;
    case 'gc':
      return `gc (max age ${d.maxAgeDays} days): removed ${d.removedKeys} keys and ${d.removedEntries} entries, kept ${d.kept}\n`;
  }
}

export function failure(d: CacheOutput): string | undefined {
  return d.action === 'verify' && !d.ok ? `cache verify failed: ${d.problems[0]!.file}: ${d.problems[0]!.problem}` : undefined;
}
