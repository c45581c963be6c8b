import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as crypto from 'node:crypto';
import { NotFoundError, ValidationError } from '../../events/errors.js';
import { ED25519, NoteError, formatSignerKey, formatVerifierKey, parseSignerKey, rawPublicKey } from '../../events/signed-note.js';

/** longbuild's per-user configuration directory (never inside a build directory). */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.LONGBUILD_CONFIG_DIR) return resolve(env.LONGBUILD_CONFIG_DIR);
  return join(env.XDG_CONFIG_HOME ? resolve(env.XDG_CONFIG_HOME) : join(env.HOME ?? homedir(), '.config'), 'longbuild');
}

/** Where the signing key is: `--signing-key FILE`, else LONGBUILD_SIGNING_KEY, else `<config>/signing.key`. */
export function signingKeyPath(explicit: string | undefined, env: NodeJS.ProcessEnv, cwd = process.cwd()): string {
  if (explicit !== undefined && explicit !== '') return resolve(cwd, explicit);
  if (env.LONGBUILD_SIGNING_KEY) return resolve(cwd, env.LONGBUILD_SIGNING_KEY);
  return join(configDir(env), 'signing.key');
}

export interface SigningKey {
  readonly path: string;
  /** The key name the file records (the build signs under its own id instead). */
  readonly name: string;
  readonly privateKey: crypto.KeyObject;
}

/** A new Ed25519 key (a build's signing key, a witness key): the randomness lives here, not in the pure core. */
export function generateSigningKey(): crypto.KeyObject {
  return crypto.generateKeyPairSync('ed25519').privateKey;
}

/** Read a signer key file (the sumdb/note `PRIVATE+KEY+…` line); one clear line when it is missing or bad. */
export function loadSigningKey(path: string, what = 'signing key'): SigningKey {
  if (!existsSync(path)) throw new NotFoundError(`${what} ${path} is missing: restore it, or pass --signing-key FILE (or set LONGBUILD_SIGNING_KEY)`);
  try {
    return { path, ...parseSignerKey(readFileSync(path, 'utf8')) };
  } catch (err) {
    throw new ValidationError(`${what} ${path} is not a signer key: ${err instanceof NoteError ? err.message : String(err)}`);
  }
}

/** The key at `path`, created (0600, in a 0700 directory) when there is none yet. */
export function loadOrCreateSigningKey(path: string, name = 'longbuild'): SigningKey & { created: boolean } {
  if (existsSync(path)) return { ...loadSigningKey(path), created: false };
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const privateKey = generateSigningKey();
  try {
    writeFileSync(path, `${formatSignerKey(name, privateKey)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { ...loadSigningKey(path), created: false }; // another init made it first
    throw err;
  }
  return { path, name, privateKey, created: true };
}

/**
 * Where this machine keeps a copy of the last checkpoint it signed for the build in `buildDir`
 * outside the build directory, so a log cut back together with its later checkpoint
 * files is still caught. Keyed by the build directory's real path.
 */
export function signedHeadPath(env: NodeJS.ProcessEnv, buildDir: string): string {
  let real = buildDir;
  try {
    real = realpathSync(buildDir);
  } catch {
    // not created yet: the path as given
  }
  return join(configDir(env), 'heads', `${crypto.createHash('sha256').update(real).digest('hex').slice(0, 32)}.checkpoint`);
}

/** The verifier key a build records: the key named by the build's origin (its id). */
export function buildVerifierKey(origin: string, privateKey: crypto.KeyObject): string {
  return formatVerifierKey(origin, ED25519, rawPublicKey(privateKey));
}
