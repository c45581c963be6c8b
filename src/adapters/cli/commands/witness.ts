import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { NotFoundError, UsageError, ValidationError } from '../../../events/errors.js';
import { consistencyProof, verifyConsistency } from '../../../events/merkle.js';
import { COSIGNATURE_V1, cosignNote, formatVerifierKey, parseVerifierKey, rawPublicKey } from '../../../events/signed-note.js';
import { loadOrCreateSigningKey } from '../../transparency/keys.js';
import { Notary } from '../../transparency/notary.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';

export const flags: Record<string, FlagSpec> = {
  'witness-key': { type: 'string' }, state: { type: 'string' }, 'log-key': { type: 'string' }, name: { type: 'string' }, out: { type: 'string' },
};
export const positionals = { min: 1, max: 1 };

/** What a witness remembers of each log it cosigns: the log's key and the largest tree it saw. */
const StateSchema = z.strictObject({
  origin: z.string(),
  logKey: z.string(),
  size: z.number().int().positive(),
  root: z.string(),
  cosignedAt: z.number().int(),
});
type WitnessState = z.infer<typeof StateSchema>;

export interface WitnessOutput {
  readonly origin: string;
  readonly size: number;
  /** The size the witness had cosigned before (null: first cosignature). */
  readonly from: number | null;
  readonly witnessKey: string;
  readonly checkpoint: string;
  readonly file: string;
}

/**
 * `longbuild witness cosign` (R-35, c2sp.org/tlog-cosignature): check that the build's latest
 * checkpoint is signed by the log key the witness knows and is an extension (a verified
 * consistency proof) of the largest tree it cosigned before; then add a timestamped Ed25519
 * cosignature to the checkpoint file and remember the new size and root. A smaller tree, a
 * different root at the same size, another log key or a failing proof is refused: the witness
 * never cosigns two views of one log.
 */
export async function run(ctx: CommandContext): Promise<WitnessOutput> {
  if (ctx.positionals[0] !== 'cosign') throw new UsageError(`witness: unknown action '${ctx.positionals[0]}' (expected: cosign)`);
  const keyFile = ctx.flags['witness-key'];
  if (typeof keyFile !== 'string') throw new UsageError('witness cosign: --witness-key FILE is required (created when missing)');
  const keyPath = resolve(ctx.cwd, keyFile);
  const name = typeof ctx.flags.name === 'string' ? ctx.flags.name : `witness/${hostname().replace(/[^A-Za-z0-9._-]/g, '-')}`;
  const key = loadOrCreateSigningKey(keyPath, name);
  const statePath = resolve(ctx.cwd, typeof ctx.flags.state === 'string' ? ctx.flags.state : `${keyPath}.state.json`);
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    const [first] = await log.readAll({ from: 1, limit: 1 });
    const init = first?.data as { buildId?: string } | undefined;
    if (!init?.buildId) throw new ValidationError('witness cosign: the log does not start with BuildInitialized');
    const state = readState(statePath, init.buildId);
    const logKeyText = typeof ctx.flags['log-key'] === 'string' ? ctx.flags['log-key'] : state?.logKey;
    if (logKeyText === undefined) throw new UsageError('witness cosign: the first cosignature of a log needs --log-key VKEY (the key the build printed at init, obtained out of band)');
    if (state && logKeyText !== state.logKey) throw new ValidationError(`witness cosign: --log-key differs from the key this witness knows for ${init.buildId} (${state.logKey}); refusing`, 'R-35');
    const logKey = parseVerifierKey(logKeyText);
    const notary = Notary.open(paths, log, init.buildId, logKey, null);
    try {
      let cp;
      try {
        cp = notary.latest();
      } catch (err) {
        throw new ValidationError(`witness cosign: ${(err as Error).message}; refusing to cosign`, 'R-35');
      }
      if (cp === null) throw new NotFoundError(`witness cosign: no signed checkpoint in ${paths.checkpoints}`);
      if (state) {
        const root = Buffer.from(state.root, 'base64');
        if (cp.size < state.size) throw new ValidationError(`witness cosign: the latest checkpoint has size ${cp.size}, smaller than the ${state.size} this witness cosigned (the log was cut); refusing`, 'R-35');
        if (cp.size === state.size && !cp.root.equals(root)) throw new ValidationError(`witness cosign: a checkpoint of size ${cp.size} with another root than the one this witness cosigned (a split view); refusing`, 'R-35');
        if (cp.size > state.size) {
          const proof = consistencyProof((await notary.tree(cp.size)).source(), state.size, cp.size);
          if (!verifyConsistency(state.size, cp.size, root, cp.root, proof)) {
            throw new ValidationError(`witness cosign: the tree of size ${cp.size} is not an extension of the tree of size ${state.size} this witness cosigned (the log was rewritten); refusing`, 'R-35');
          }
        }
      }
      const now = Math.floor(Date.now() / 1000);
      const cosigned = cosignNote(cp.note, key.name, key.privateKey, now);
      writeAtomic(cp.file, cosigned);
      if (typeof ctx.flags.out === 'string') writeFileSync(resolve(ctx.cwd, ctx.flags.out), cosigned);
      writeAtomic(statePath, `${JSON.stringify({ origin: init.buildId, logKey: logKeyText, size: cp.size, root: cp.root.toString('base64'), cosignedAt: now } satisfies WitnessState, null, 1)}\n`);
      return { origin: init.buildId, size: cp.size, from: state?.size ?? null, witnessKey: formatVerifierKey(key.name, COSIGNATURE_V1, rawPublicKey(key.privateKey)), checkpoint: cosigned, file: cp.file };
    } finally {
      notary.close();
    }
  } finally {
    await log.close();
  }
}

function readState(path: string, origin: string): WitnessState | null {
  if (!existsSync(path)) return null;
  let parsed;
  try {
    parsed = StateSchema.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    throw new ValidationError(`witness state ${path} is not JSON; restore it or pass another --state`);
  }
  if (!parsed.success) throw new ValidationError(`witness state ${path} is not a witness state file; restore it or pass another --state`);
  if (parsed.data.origin !== origin) throw new ValidationError(`witness state ${path} is for log ${parsed.data.origin}, not ${origin}; pass --state FILE per log`);
  return parsed.data;
}

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
}

export function render(d: WitnessOutput): string {
  return `cosigned ${d.origin} at size ${d.size}${d.from === null ? ' (first cosignature)' : ` (consistent with size ${d.from})`}\nwitness key ${d.witnessKey}\ncheckpoint ${d.file}\n`;
}
