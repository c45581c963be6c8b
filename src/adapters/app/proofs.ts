import { CorruptLogError, UsageError } from '../../events/errors.js';
import { buildExists } from '../build-dir.js';
import { verifierKeyArg } from '../transparency/keys.js';
import { openBuildLog } from './build-log.js';
import { pathsOf, type AppContext } from './context.js';
import type { TreeSource } from '../../events/merkle.js';
import { checkProofFile } from '../../events/proof-file.js';
import { NoteError, parseVerifierKey, type VerifierKey } from '../../events/signed-note.js';
import type { Notary } from '../transparency/notary.js';

/**
 * A proof is handed out only once it checks, as `prove --check` would check it: a tree.db damaged
 * on disk (a cache) is built again from the log first.
 */
export async function checkedProof(notary: Notary, size: number, make: (tree: TreeSource) => string, key: VerifierKey, stderr: (s: string) => void, treeFile: string): Promise<string> {
  const checks = (text: string): void => void checkProofFile(text, key);
  let proof = make((await notary.tree(size)).source());
  try {
    checks(proof);
  } catch (err) {
    if (!(err instanceof NoteError)) throw err;
    stderr(`longbuild: ${treeFile} gave a proof that does not check: building it again from the log (it is a cache)\n`);
    proof = make((await notary.rebuildTree(size)).source());
    try {
      checks(proof);
    } catch (again) {
      if (!(again instanceof NoteError)) throw again;
      throw new CorruptLogError(size, `prove: no proof from this log checks against the checkpoint signed at size ${size} (${again.message}); run \`longbuild verify\``);
    }
  }
  return proof;
}

/** The verifier key given (`--key VKEY|FILE`), else the one the build records. */
export async function verifierKeyFor(ctx: AppContext, k: string | undefined): Promise<VerifierKey> {
  try {
    if (typeof k === 'string') return verifierKeyArg(k, ctx.cwd);
  } catch (err) {
    throw new UsageError(`prove: --key must be a verifier key or a file holding one: ${(err as Error).message}`);
  }
  const paths = pathsOf(ctx);
  if (!buildExists(paths)) throw new UsageError('prove: --check needs --key VKEY (the log\'s verifier key) outside a build');
  const log = await openBuildLog(paths);
  try {
    const [first] = await log.readAll({ from: 1, limit: 1 });
    const vkey = (first?.data as { signing?: { vkey: string } } | undefined)?.signing?.vkey;
    if (!vkey) throw new UsageError('prove: this build records no signing key; pass --key VKEY');
    return parseVerifierKey(vkey);
  } finally {
    await log.close();
  }
}
