import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as crypto from 'node:crypto';
import { NotFoundError, ValidationError } from '../../events/errors.js';
import { ED25519, NoteError, formatSignerKey, formatVerifierKey, parseSignerKey, parseVerifierKey, privateKeyFromSeed, rawPublicKey, seedOf, type VerifierKey } from '../../events/signed-note.js';

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

/**
 * What no sandboxed process may read: longbuild's config directory (the default signing
 * key, the heads copies of R-36), the signing key file in use and LONGBUILD_SIGNING_KEY's.
 */
export function secretPaths(env: NodeJS.ProcessEnv, explicitKey: string | undefined, cwd = process.cwd()): string[] {
  const out = [configDir(env), signingKeyPath(explicitKey, env, cwd)];
  if (env.LONGBUILD_SIGNING_KEY) out.push(resolve(cwd, env.LONGBUILD_SIGNING_KEY));
  return [...new Set(out)];
}

/** The user's home directories (HOME and the account's), hidden from every role: never `/`. */
export function homePaths(env: NodeJS.ProcessEnv): string[] {
  let account: string | undefined;
  try {
    account = userInfo().homedir;
  } catch {
    // no passwd entry for this uid (a container): HOME alone
  }
  return [...new Set([env.HOME, homedir(), account].filter((h): h is string => h !== undefined && h !== '').map((h) => resolve(h)))].filter((h) => h !== '/');
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

/**
 * A build's own signing key (R-53, decision 0037): HKDF-SHA256 of the user's key's seed, with the
 * build id as its info. The user keeps one key file; each build signs under a key no other build
 * shares, and the build key itself is never written to disk.
 */
export function deriveBuildKey(userKey: crypto.KeyObject, buildId: string): crypto.KeyObject {
  return privateKeyFromSeed(Buffer.from(crypto.hkdfSync('sha256', seedOf(userKey), 'longbuild build key v1', buildId, 32)));
}

/**
 * The key that extends build `buildId`, whose log records `vkey`, from a key file's key: the key
 * derived for the build, or the file's key itself (a build from before per-build keys, or a
 * build's key given on purpose); null when it is neither.
 */
export function buildKeyFrom(key: crypto.KeyObject, buildId: string, vkey: string): crypto.KeyObject | null {
  const derived = deriveBuildKey(key, buildId);
  if (buildVerifierKey(buildId, derived) === vkey) return derived;
  return buildVerifierKey(buildId, key) === vkey ? key : null;
}

/** A `--key VKEY|FILE` argument: a verifier key, or a file (relative to `cwd`) holding one. Throws NoteError when it is neither. */
export function verifierKeyArg(arg: string, cwd: string): VerifierKey {
  const file = resolve(cwd, arg);
  return parseVerifierKey(existsSync(file) ? readFileSync(file, 'utf8') : arg);
}
