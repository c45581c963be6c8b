import type { KeyObject } from 'node:crypto';
import { CorruptLogError, ValidationError } from '../events/errors.js';
import { parseVerifierKey } from '../events/signed-note.js';
import type { BuildPaths } from './build-dir.js';
import type { DriverFile } from './driver-file.js';
import type { TransferableEventLog } from './log/verbatim.js';
import { assertCallable } from './command/invocation.js';
import { integratorDamage, integratorRecovery } from './git/integrator-repo.js';
import { Notary } from './transparency/notary.js';
import { buildKeyFrom, loadSigningKey, signedHeadPath, signingKeyPath } from './transparency/keys.js';
import type { InitData } from './session-execution.js';
import type { OpenOptions } from './session-types.js';

/**
 * What is checked before a session's first append (R-36), and the notary that signs its
 * checkpoints from then on: the agents' credentials, the build's signing key, the log against its
 * chain head and last signed checkpoint, the integrator's repository holding the head whole, and
 * the checkpoints an earlier run missed, signed now.
 */
export async function firstStepChecks(o: {
  readonly paths: BuildPaths; readonly log: TransferableEventLog; readonly driver: DriverFile; readonly initData: InitData;
  readonly env: NodeJS.ProcessEnv; readonly opts: OpenOptions; readonly head: string | null; readonly warn: (line: string) => void;
}): Promise<Notary> {
  const { paths, log, driver, initData, env, opts, head, warn } = o;
  // An agent without credentials is refused before anything is recorded (reading commands need none).
  if (driver.kind === 'command') for (const [role, c] of [['planner', driver.config.planner], ['worker', driver.config.worker]] as const) assertCallable(role, c, env);
  const opened = openNotary(paths, log, initData, env);
  try {
    opened.useKey(loadBuildKey(opts, env, initData));
    await opened.check();
    // The integrator's repository holds the integration head whole, or the run stops before recording anything.
    const damage = head ? await integratorDamage(paths.integrator, head) : null;
    if (damage !== null) throw new ValidationError(`${paths.integrator} is damaged: ${damage}; ${integratorRecovery(paths.integrator)}`, 'R-31');
    if (opened.restored !== null) warn(`${opened.restored} did not verify (damaged): written again from this machine's copy of the last signature`);
    // Checkpoints a stopped run missed (an unwritable checkpoints/, a kill before the signature) are signed now.
    const missed = await opened.signMissed();
    if (missed.length > 0) warn(`signed ${missed.length} checkpoint${missed.length === 1 ? '' : 's'} an earlier run missed (at size${missed.length === 1 ? '' : 's'} ${missed.join(', ')})`);
  } catch (err) {
    opened.close();
    throw err;
  }
  return opened;
}

/** Events after which a checkpoint is signed: promotions, milestone checkpoints, the end. */

function openNotary(paths: BuildPaths, log: TransferableEventLog, initData: { buildId: string; signing?: { vkey: string } }, env: NodeJS.ProcessEnv): Notary {
  if (initData.signing === undefined) {
    throw new CorruptLogError(1, 'the log names no signing key (the build predates signed checkpoints, R-35): it can be read and verified, not extended');
  }
  return Notary.open(paths, log, initData.buildId, parseVerifierKey(initData.signing.vkey), null, signedHeadPath(env, paths.dir));
}

/** The signing key for appending: it must be the key the build recorded. */
function loadBuildKey(opts: OpenOptions, env: NodeJS.ProcessEnv, initData: { buildId: string; signing?: { vkey: string } }): KeyObject {
  const key = loadSigningKey(signingKeyPath(opts.signingKey, env, opts.cwd));
  const buildKey = buildKeyFrom(key.privateKey, initData.buildId, initData.signing!.vkey);
  if (buildKey === null) {
    throw new ValidationError(`the signing key ${key.path} is not this build's key (the log records ${initData.signing!.vkey}); pass the build's key with --signing-key FILE, or set LONGBUILD_SIGNING_KEY`, 'R-35');
  }
  return buildKey;
}

