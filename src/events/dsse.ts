/**
 * DSSE envelopes (github.com/secure-systems-lab/dsse, v1.0): a payload and its type, signed over
 * the Pre-Authentication Encoding `DSSEv1 SP LEN(type) SP type SP LEN(body) SP body` (lengths in
 * ASCII decimal bytes). longbuild signs with the build's Ed25519 key; the key id is the
 * hex key ID of the build's verifier key (c2sp.org/signed-note), so a verifier holding the
 * `vkey` knows which signature is the build's. Ed25519 is deterministic: the same payload signed
 * again gives the same envelope, byte for byte.
 */
import * as crypto from 'node:crypto';
import { ED25519, keyIdOf, publicKeyObject, rawPublicKey, type VerifierKey } from './signed-note.js';

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export interface Envelope {
  readonly payload: string;
  readonly payloadType: string;
  readonly signatures: readonly { readonly keyid: string; readonly sig: string }[];
}

/** The bytes a DSSE signature covers. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, 'utf8'), type, Buffer.from(` ${payload.length} `, 'utf8'), payload]);
}

/** Sign `payload` as `payloadType` with an Ed25519 key named `name` (the build id). */
export function signEnvelope(payloadType: string, payload: Uint8Array, name: string, privateKey: crypto.KeyObject): Envelope {
  const sig = crypto.sign(null, pae(payloadType, payload), privateKey);
  return { payload: Buffer.from(payload).toString('base64'), payloadType, signatures: [{ keyid: keyIdOf(name, ED25519, rawPublicKey(privateKey)), sig: sig.toString('base64') }] };
}

export class EnvelopeError extends Error {
  override readonly name = 'EnvelopeError';
}

/** Parse an envelope's JSON text; throws EnvelopeError naming what is wrong. */
export function parseEnvelope(text: string): Envelope {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new EnvelopeError('the envelope is not JSON');
  }
  const e = v as Partial<Envelope>;
  if (typeof e !== 'object' || e === null || typeof e.payload !== 'string' || typeof e.payloadType !== 'string' || !Array.isArray(e.signatures)
    || !e.signatures.every((s) => typeof s === 'object' && s !== null && typeof s.keyid === 'string' && typeof s.sig === 'string')) {
    throw new EnvelopeError('the envelope is not a DSSE envelope (payload, payloadType, signatures[{ keyid, sig }])');
  }
  return { payload: e.payload, payloadType: e.payloadType, signatures: e.signatures };
}

/** The payload of `envelope` when a signature of `key` verifies over it; throws EnvelopeError otherwise. */
export function verifyEnvelope(envelope: Envelope, key: VerifierKey): Buffer {
  if (key.type !== ED25519) throw new EnvelopeError(`verifier key '${key.name}' is not an Ed25519 signing key`);
  const mine = envelope.signatures.filter((s) => s.keyid === key.keyId);
  if (mine.length === 0) throw new EnvelopeError(`no signature by ${key.name}+${key.keyId}`);
  const payload = Buffer.from(envelope.payload, 'base64');
  if (payload.toString('base64') !== envelope.payload) throw new EnvelopeError('the payload is not canonical base64');
  const signed = pae(envelope.payloadType, payload);
  const pub = publicKeyObject(key.publicKey);
  for (const s of mine) {
    const sig = Buffer.from(s.sig, 'base64');
    if (sig.length !== 64 || !crypto.verify(null, signed, pub, sig)) throw new EnvelopeError(`the signature by ${key.name}+${key.keyId} does not verify`);
  }
  return payload;
}
