import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { canonicalJson } from '../../../events/canonical.js';
import { hashedPart } from '../../../events/envelope.js';
import { NotFoundError, UsageError, ValidationError } from '../../../events/errors.js';
import { consistencyProof, inclusionProof, type TreeSource } from '../../../events/merkle.js';
import { checkProofFile, formatConsistencyProof, formatInclusionProof, type CheckedProof } from '../../../events/proof-file.js';
import { NoteError, parseVerifierKey } from '../../../events/signed-note.js';
import { Notary, readCheckpoint, type SignedCheckpoint } from '../../transparency/notary.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import { checkedProof, verifierKeyFor } from '../../app/proofs.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = {
  position: { type: 'int' }, since: { type: 'string' }, out: { type: 'string' }, check: { type: 'string' }, key: { type: 'string' },
};

export type ProveOutput =
  | { readonly action: 'prove'; readonly kind: 'inclusion' | 'consistency'; readonly size: number; readonly from?: number; readonly position?: number; readonly proof: string; readonly file: string | null }
  | { readonly action: 'check'; readonly file: string; readonly result: CheckedProof };

/**
 * R-34: `--position N` proves event N is in the tree of the last signed checkpoint; `--since
 * FILE` proves that tree extends the one of a checkpoint held before; `--check FILE` verifies a
 * proof file offline (against `--key`, or the build's own key when run in the build).
 */
export async function run(ctx: CommandContext): Promise<ProveOutput> {
  const { position, since, check, out } = ctx.flags;
  const given = [position !== undefined, since !== undefined, check !== undefined].filter(Boolean).length;
  if (given !== 1) throw new UsageError('prove: give exactly one of --position N, --since CHECKPOINT_FILE or --check PROOF_FILE');
  if (typeof check === 'string') return checkFile(ctx, resolve(ctx.cwd, check));
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    const [first] = await log.readAll({ from: 1, limit: 1 });
    const init = first?.data as { buildId?: string; signing?: { vkey: string } } | undefined;
    if (!init?.signing || !init.buildId) throw new ValidationError('prove: this build records no signing key, so it has no signed checkpoints to prove against');
    const key = parseVerifierKey(init.signing.vkey);
    const notary = Notary.open(paths, log, init.buildId, key, null);
    try {
      const cp = notary.latest();
      if (cp === null) throw new NotFoundError(`prove: no signed checkpoint in ${paths.checkpoints}`);
      // What is asked is read and checked once; only the proof is made again when it does not check.
      let make: (tree: TreeSource) => string;
      let extra: { kind: 'inclusion' | 'consistency'; from?: number; position?: number };
      if (typeof position === 'number') {
        if (position < 1 || position > cp.size) throw new UsageError(`prove: --position must be in 1..${cp.size} (the last signed checkpoint's size)`);
        const [e] = await log.readAll({ from: position, limit: 1 });
        const leaf = canonicalJson(hashedPart(e!));
        make = (tree) => formatInclusionProof(position - 1, leaf, inclusionProof(tree, position - 1, cp.size), cp.note);
        extra = { kind: 'inclusion', position };
      } else {
        const file = resolve(ctx.cwd, String(since));
        if (!existsSync(file)) throw new NotFoundError(`prove: --since ${file} does not exist`);
        let held: SignedCheckpoint;
        try {
          held = readCheckpoint(readFileSync(file, 'utf8'), key, init.buildId, file);
        } catch (err) {
          throw new ValidationError(`prove: ${file} is not a checkpoint of this build: ${(err as Error).message}`);
        }
        if (held.size > cp.size) throw new ValidationError(`prove: ${file} (size ${held.size}) is newer than the last signed checkpoint (size ${cp.size}): the log was cut`);
        make = (tree) => formatConsistencyProof(held.size, held.root, consistencyProof(tree, held.size, cp.size), cp.note);
        extra = { kind: 'consistency', from: held.size };
      }
      const proof = await checkedProof(notary, cp.size, make, key, ctx.stderr, paths.tree);
      const target = typeof out === 'string' ? resolve(ctx.cwd, out) : null;
      if (target !== null) writeFileSync(target, proof);
      return { action: 'prove', ...extra, size: cp.size, proof, file: target };
    } finally {
      notary.close();
    }
  } finally {
    await log.close();
  }
}

async function checkFile(ctx: CommandContext, file: string): Promise<ProveOutput> {
  if (!existsSync(file)) throw new NotFoundError(`prove: --check ${file} does not exist`);
  const key = await verifierKeyFor(ctx, typeof ctx.flags.key === 'string' ? ctx.flags.key : undefined);
  try {
    return { action: 'check', file, result: checkProofFile(readFileSync(file, 'utf8'), key) };
  } catch (err) {
    if (err instanceof NoteError) throw new ValidationError(`prove: ${file} does not verify: ${err.message}`, 'R-34');
    throw err;
  }
}

export function render(d: ProveOutput): string {
  if (d.action === 'check') {
    const r = d.result;
    return r.kind === 'inclusion'
      ? `ok: event ${r.position} (${r.event.type}, hash ${r.eventHash}) is in the signed tree of size ${r.size}\n`
      : `ok: the signed tree of size ${r.size} extends the tree of size ${r.size1} (root ${r.root1})\n`;
  }
  if (d.file === null) return d.proof;
  return `${d.kind} proof ${d.kind === 'inclusion' ? `of position ${d.position}` : `from size ${d.from}`} to the signed tree of size ${d.size} written to ${d.file}\n`;
}
