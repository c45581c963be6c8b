import * as crypto from 'node:crypto';

// C2SP signed notes (c2sp.org/signed-note), Ed25519 signatures (type 0x01), timestamped Ed25519
// cosignatures (c2sp.org/tlog-cosignature, type 0x04), and the checkpoint body of a transparency
// log (c2sp.org/tlog-checkpoint): origin, tree size, base64 root, optional extension lines.

export const ED25519 = 0x01;
export const COSIGNATURE_V1 = 0x04;

export interface Signature {
  readonly name: string;
  /** The 4-byte key ID, 8 lower-case hex digits. */
  readonly keyId: string;
  /** The signature bytes after the key ID. */
  readonly bytes: Buffer;
}

export interface ParsedNote {
  /** The signed text, ending in a newline. */
  readonly text: string;
  readonly signatures: readonly Signature[];
}

export interface VerifierKey {
  readonly name: string;
  readonly keyId: string;
  readonly type: number;
  /** The 32-byte Ed25519 public key. */
  readonly publicKey: Buffer;
}

export class NoteError extends Error {
  override readonly name = 'NoteError';
}

function validName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** SHA-256(name || "\n" || type || public key)[:4] as hex (signed-note §Signatures). */
export function keyIdOf(name: string, type: number, publicKey: Uint8Array): string {
  return crypto.createHash('sha256').update(Buffer.from(`${name}\n`, 'utf8')).update(Buffer.from([type])).update(publicKey).digest().subarray(0, 4).toString('hex');
}

/** `<name>+<hex key ID>+<base64(type || public key)>`. */
export function formatVerifierKey(name: string, type: number, publicKey: Uint8Array): string {
  if (!validName(name)) throw new NoteError(`key name '${name}' must be non-empty, without spaces or '+'`);
  return `${name}+${keyIdOf(name, type, publicKey)}+${Buffer.concat([Buffer.from([type]), publicKey]).toString('base64')}`;
}

export function parseVerifierKey(vkey: string): VerifierKey {
  const m = /^([^+]+)\+([^+]+)\+(.+)$/s.exec(vkey.trim());
  if (!m) throw new NoteError(`verifier key '${vkey.slice(0, 40)}' is not <name>+<key id>+<base64 key>`);
  const [, name, keyId, b64] = m as unknown as [string, string, string, string];
  const raw = Buffer.from(b64, 'base64');
  if (!validName(name) || !/^[0-9a-f]{8}$/.test(keyId) || raw.length !== 33 || (raw[0] !== ED25519 && raw[0] !== COSIGNATURE_V1)) {
    throw new NoteError(`verifier key '${vkey.slice(0, 40)}' is not an Ed25519 key (signature type 0x01 or 0x04)`);
  }
  const publicKey = raw.subarray(1);
  if (keyIdOf(name, raw[0]!, publicKey) !== keyId) throw new NoteError(`verifier key '${name}': its key ID does not match the key`);
  return { name, keyId, type: raw[0]!, publicKey };
}

export function parseNote(note: string): ParsedNote {
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new NoteError('a signed note must not hold control characters other than newline');
  const split = note.lastIndexOf('\n\n');
  if (split < 0 || !note.endsWith('\n')) throw new NoteError('not a signed note: no blank line before the signatures');
  const text = note.slice(0, split + 1);
  const signatures: Signature[] = [];
  for (const line of note.slice(split + 2, -1).split('\n')) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/=]+)$/u.exec(line);
    if (!m) throw new NoteError(`malformed signature line '${line.slice(0, 60)}'`);
    const raw = Buffer.from(m[2]!, 'base64');
    // Strict base64: a signature whose text is not the canonical encoding of its bytes is refused
    // (lenient decoding would let a changed character verify).
    if (raw.toString('base64') !== m[2]) throw new NoteError(`signature of '${m[1]}' is not canonical base64`);
    if (raw.length < 5) throw new NoteError(`signature of '${m[1]}' is too short`);
    signatures.push({ name: m[1]!, keyId: raw.subarray(0, 4).toString('hex'), bytes: raw.subarray(4) });
  }
  if (signatures.length === 0) throw new NoteError('a signed note needs at least one signature');
  return { text, signatures };
}

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the raw 32-byte key follows it. */
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/*
 * Keys go in and out as DER, never as JWK: Node.js 20 can deadlock exporting a JWK (the key's
 * mutex held while it allocates; a collection then destroys the key generation job that shares
 * that mutex), seen as a test process hung in `ExportJWK` -> GC -> `~KeyGenJob`.
 */
export function publicKeyObject(raw: Uint8Array): crypto.KeyObject {
  return crypto.createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** The raw 32-byte public key of an Ed25519 private key. */
export function rawPublicKey(privateKey: crypto.KeyObject): Buffer {
  const der = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return Buffer.from(der.subarray(der.length - 32));
}

/** Sign `text` (ending in a newline) as a note with one Ed25519 signature. */
export function signNote(text: string, name: string, privateKey: crypto.KeyObject): string {
  if (!text.endsWith('\n')) throw new NoteError('the note text must end in a newline');
  const id = Buffer.from(keyIdOf(name, ED25519, rawPublicKey(privateKey)), 'hex');
  const sig = crypto.sign(null, Buffer.from(text, 'utf8'), privateKey);
  return `${text}\n\u2014 ${name} ${Buffer.concat([id, sig]).toString('base64')}\n`;
}

/** The signatures of `note` made by `key` that verify (signed-note: unknown keys are ignored). */
function verifiedBy(parsed: ParsedNote, key: VerifierKey): 'verified' | 'absent' | 'bad' {
  const mine = parsed.signatures.filter((s) => s.name === key.name && s.keyId === key.keyId);
  if (mine.length === 0) return 'absent';
  const pub = publicKeyObject(key.publicKey);
  for (const s of mine) {
    const ok = key.type === ED25519
      ? s.bytes.length === 64 && crypto.verify(null, Buffer.from(parsed.text, 'utf8'), pub, s.bytes)
      : s.bytes.length === 72 && crypto.verify(null, cosignedMessage(parsed.text, s.bytes.readBigUInt64BE(0)), pub, s.bytes.subarray(8));
    if (!ok) return 'bad';
  }
  return 'verified';
}

/** Verify `note` under `key`; throws NoteError naming why it does not. Returns the parsed note. */
export function verifyNote(note: string | ParsedNote, key: VerifierKey): ParsedNote {
  const parsed = typeof note === 'string' ? parseNote(note) : note;
  const v = verifiedBy(parsed, key);
  if (v === 'absent') throw new NoteError(`the note carries no signature by ${key.name}+${key.keyId}`);
  if (v === 'bad') throw new NoteError(`the signature by ${key.name}+${key.keyId} does not verify (the note was changed, or the signature forged)`);
  return parsed;
}

/** The Ed25519 cosignature message: `cosignature/v1\ntime T\n` then the checkpoint body. */
function cosignedMessage(text: string, timestamp: bigint): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp.toString()}\n${text}`, 'utf8');
}

/** Add a timestamped Ed25519 cosignature (c2sp.org/tlog-cosignature) to a signed checkpoint. */
export function cosignNote(note: string, name: string, privateKey: crypto.KeyObject, timestampSeconds: number): string {
  const parsed = parseNote(note);
  const ts = BigInt(Math.floor(timestampSeconds));
  const id = Buffer.from(keyIdOf(name, COSIGNATURE_V1, rawPublicKey(privateKey)), 'hex');
  const tsBytes = Buffer.alloc(8);
  tsBytes.writeBigUInt64BE(ts);
  const sig = crypto.sign(null, cosignedMessage(parsed.text, ts), privateKey);
  // A newer cosignature by the same key replaces the older one (one line per cosigner).
  const others = parsed.signatures.filter((s) => !(s.name === name && s.keyId === id.toString('hex')));
  const lines = [...others.map((s) => `\u2014 ${s.name} ${Buffer.concat([Buffer.from(s.keyId, 'hex'), s.bytes]).toString('base64')}`), `\u2014 ${name} ${Buffer.concat([id, tsBytes, sig]).toString('base64')}`];
  return `${parsed.text}\n${lines.join('\n')}\n`;
}

// ---- checkpoints ------------------------------------------------------------------

export interface CheckpointBody {
  readonly origin: string;
  readonly size: number;
  readonly root: Buffer;
  readonly extensions: readonly string[];
}

export function checkpointText(origin: string, size: number, root: Uint8Array, extensions: readonly string[] = []): string {
  if (origin === '' || origin.includes('\n')) throw new NoteError('a checkpoint origin must be one non-empty line');
  return [origin, String(size), Buffer.from(root).toString('base64'), ...extensions].join('\n') + '\n';
}

export function parseCheckpointText(text: string): CheckpointBody {
  const lines = text.split('\n');
  if (lines.pop() !== '' || lines.length < 3) throw new NoteError('a checkpoint needs an origin, a size and a root hash line');
  const [origin, sizeLine, rootLine, ...extensions] = lines as [string, string, string, ...string[]];
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine) || !Number.isSafeInteger(Number(sizeLine))) throw new NoteError(`checkpoint size '${sizeLine.slice(0, 30)}' is not a decimal number`);
  const root = Buffer.from(rootLine, 'base64');
  if (root.length !== 32 || root.toString('base64') !== rootLine) throw new NoteError('checkpoint root hash is not 32 bytes of base64');
  if (origin === '' || extensions.some((l) => l === '')) throw new NoteError('checkpoint lines must not be empty');
  return { origin, size: Number(sizeLine), root, extensions };
}


const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** An Ed25519 private key from its 32-byte RFC 8032 seed. */
export function privateKeyFromSeed(seed: Uint8Array): crypto.KeyObject {
  if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
  return crypto.createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** The 32-byte seed of an Ed25519 private key. */
export function seedOf(privateKey: crypto.KeyObject): Buffer {
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  return Buffer.from(der.subarray(der.length - 32));
}

/** A signer key as golang.org/x/mod/sumdb/note writes it: `PRIVATE+KEY+<name>+<key id>+<base64(0x01 || seed)>`. */
export function formatSignerKey(name: string, privateKey: crypto.KeyObject): string {
  const id = keyIdOf(name, ED25519, rawPublicKey(privateKey));
  return `PRIVATE+KEY+${name}+${id}+${Buffer.concat([Buffer.from([ED25519]), seedOf(privateKey)]).toString('base64')}`;
}

export function parseSignerKey(text: string): { name: string; privateKey: crypto.KeyObject } {
  const m = /^PRIVATE\+KEY\+([^+]+)\+([^+]+)\+(.+)$/s.exec(text.trim());
  if (!m) throw new NoteError('not a signer key (PRIVATE+KEY+<name>+<key id>+<base64 key>)');
  const [, name, keyId, b64] = m as unknown as [string, string, string, string];
  const raw = Buffer.from(b64, 'base64');
  if (!validName(name) || raw.length !== 33 || raw[0] !== ED25519) throw new NoteError('not an Ed25519 signer key');
  const privateKey = privateKeyFromSeed(raw.subarray(1));
  if (keyIdOf(name, ED25519, rawPublicKey(privateKey)) !== keyId) throw new NoteError(`signer key '${name}': its key ID does not match the key`);
  return { name, privateKey };
}
