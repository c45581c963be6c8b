import { CorruptLogError } from '../../events/errors.js';
import type { TreeSource } from '../../events/merkle.js';
import { checkProofFile } from '../../events/proof-file.js';
import { NoteError, type VerifierKey } from '../../events/signed-note.js';
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
