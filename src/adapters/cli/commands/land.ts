import { NotFoundError, RefusedTransitionError, UsageError } from '../../../events/errors.js';
import { git } from '../../git/exec.js';
import { landApproved } from '../../../commands/gates.js';
import { PROVENANCE_NOTES_REF } from '../../../commands/provenance-statement.js';
import { readNote } from '../../provenance/attestations.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { withBuild } from '../../app/with-build.js';

export const flags: Record<string, FlagSpec> = { into: { type: 'string' } };

export interface LandOutput {
  readonly into: string;
  readonly integrationHead: string;
  /** The branch's tip before (null: the branch did not exist) and after. */
  readonly from: string | null;
  readonly to: string;
  readonly mode: 'created' | 'up-to-date' | 'fast-forward' | 'merge';
  readonly completed: boolean;
  /** Whether the integration head has its provenance note in the repository, under `ref` (null: nothing was integrated). */
  readonly provenance: { readonly noted: boolean | null; readonly ref: string };
}

/**
 * `longbuild land [--into BRANCH]`: bring the integration head (the log's, R-1) into the user's
 * branch — the one checked out unless --into names another: fast-forward when it can, a merge
 * commit when the branch moved on (only on the checked-out branch, where a conflict can be seen
 * and is aborted). It changes the user's branch, never the build: nothing is appended.
 */
export async function run(ctx: CommandContext): Promise<LandOutput> {
  return withBuild(ctx, async (s) => {
    const st = s.controller.current;
    const head = st.integrationHead;
    if (!st.build || head === null) throw new NotFoundError('land: the build has no integration head yet');
    // a build that asks for approval of what lands publishes only a head an operator approved.
    if (!landApproved(st, head)) {
      throw new RefusedTransitionError(`land: the integration head ${head.slice(0, 12)} is not approved (config approve: "land"); the build asks for it once its work is done: \`longbuild run\`, then \`longbuild approve\``);
    }
    const repo = s.paths.repo;
    const current = (await git(repo, ['symbolic-ref', '-q', '--short', 'HEAD'], { allowFail: true })).stdout.trim();
    const into = typeof ctx.flags.into === 'string' ? ctx.flags.into : current;
    if (into === '') throw new UsageError('land: the repository has no branch checked out (detached HEAD); give --into BRANCH');
    const ref = `refs/heads/${into}`;
    if ((await git(repo, ['check-ref-format', ref], { allowFail: true })).code !== 0) throw new UsageError(`land: '${into}' is not a valid branch name`);
    if (ref === st.build.integrationRef || into.startsWith('longbuild/')) throw new UsageError(`land: '${into}' is longbuild's own; give the branch to land into with --into BRANCH`);
    if ((await git(repo, ['cat-file', '-e', `${head}^{commit}`], { allowFail: true })).code !== 0) {
      throw new NotFoundError(`land: the integration head ${head} is not in ${repo}; run \`longbuild verify\` (it repairs the published ref)`);
    }
    const tip = (await git(repo, ['rev-parse', '-q', '--verify', `${ref}^{commit}`], { allowFail: true })).stdout.trim() || null;
    // R-62: the landed commits' attestations are git notes in this same repository; said, with how to share them.
    const noted = head === st.build.baseHead ? null : (await readNote(repo, head)) !== null;
    const out = (mode: LandOutput['mode'], to: string): LandOutput => ({ into, integrationHead: head, from: tip, to, mode, completed: st.completed, provenance: { noted, ref: PROVENANCE_NOTES_REF } });
    if (tip === null) {
      await git(repo, ['update-ref', ref, head, '']);
      return out('created', head);
    }
    if ((await git(repo, ['merge-base', '--is-ancestor', head, tip], { allowFail: true })).code === 0) return out('up-to-date', tip);
    const checkedOut = into === current;
    const fastForward = (await git(repo, ['merge-base', '--is-ancestor', tip, head], { allowFail: true })).code === 0;
    if (!checkedOut) {
      if (!fastForward) throw new RefusedTransitionError(`land: ${into} has commits the integration head lacks; check it out and run \`longbuild land\` there to merge`);
      await git(repo, ['update-ref', ref, head, tip]); // compare-and-set: a concurrent move of the branch fails it
      return out('fast-forward', head);
    }
    const merged = await git(repo, ['merge', '-q', fastForward ? '--ff-only' : '--no-ff', '--no-edit', '-m', `longbuild: land ${head.slice(0, 12)} (${st.build.integrationRef})`, head], { allowFail: true });
    if (merged.code !== 0) {
      await git(repo, ['merge', '--abort'], { allowFail: true });
      throw new RefusedTransitionError(`land: merging into ${into} failed, nothing changed: ${firstLine(merged.stderr || merged.stdout)}`);
    }
    const to = (await git(repo, ['rev-parse', 'HEAD'])).stdout.trim();
    return out(fastForward ? 'fast-forward' : 'merge', to);
  });
}

function firstLine(text: string): string {
  return text.trim().split('\n').find((l) => l.trim() !== '')?.trim() ?? 'git gave no reason';
}

export function render(d: LandOutput): string {
  const what = d.mode === 'created' ? `created ${d.into} at ${d.to}`
    : d.mode === 'up-to-date' ? `${d.into} already has the integration head ${d.integrationHead}`
      : d.mode === 'fast-forward' ? `fast-forwarded ${d.into} ${d.from} -> ${d.to}` : `merged the integration head into ${d.into}: ${d.to}`;
  const provenance = d.provenance.noted === null ? '' : d.provenance.noted
    ? `\nprovenance: the landed commits' attestations are notes under ${d.provenance.ref} (git log --notes=longbuild/provenance); share them with: git push REMOTE ${d.provenance.ref}`
    : '\nnote: the integration head has no provenance note yet: `longbuild provenance publish` writes them';
  return `${what}${d.completed ? '' : '\nnote: the build is not complete; this lands what is integrated so far'}${provenance}\n`;
}
