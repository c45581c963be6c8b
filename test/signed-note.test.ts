import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COSIGNATURE_V1, ED25519, checkpointText, cosignNote, formatSignerKey, formatVerifierKey, parseCheckpointText, parseNote,
  parseSignerKey, parseVerifierKey, rawPublicKey, signNote, verifyNote,
} from '../src/events/signed-note.js';
import { generateSigningKey } from '../src/adapters/transparency/keys.js';

// Interop: the examples of c2sp.org/signed-note and tlog-checkpoint, and the signer key of
// golang.org/x/mod/sumdb/note's ExampleSign (Ed25519 is deterministic: the same bytes).
const C2SP_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k';
const C2SP_NOTE = 'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';
const GO_SKEY = 'PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz';
const GO_VKEY = 'PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW';
const GO_TEXT = "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const GO_SIGNED = `${GO_TEXT}\n\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n`;

describe('R-35 signed checkpoints (C2SP signed-note, tlog-checkpoint, tlog-cosignature)', () => {
  it('R-35 the C2SP signed-note example verifies under its verifier key; one changed byte of text or signature does not', () => {
    const key = parseVerifierKey(C2SP_VKEY);
    expect(verifyNote(C2SP_NOTE, key).text).toBe('This is an example message.\n');
    expect(() => verifyNote(C2SP_NOTE.replace('example message', 'exampl3 message'), key)).toThrow(/does not verify/);
    expect(() => verifyNote(C2SP_NOTE.replace('Uw2QOkn8', 'Uw2QOkn9'), key)).toThrow(/does not verify/);
    // A signature line of an unknown key is ignored, and a note with only that is refused.
    expect(() => verifyNote(C2SP_NOTE.replace('example.com/foo U', 'example.com/bar U'), key)).toThrow(/no signature by example.com\/foo/);
  });

  it('R-35 the Go sumdb/note signer key signs its example text to the same bytes, and its verifier key is ours', () => {
    const { name, privateKey } = parseSignerKey(GO_SKEY);
    expect(signNote(GO_TEXT, name, privateKey)).toBe(GO_SIGNED);
    expect(formatVerifierKey(name, ED25519, rawPublicKey(privateKey))).toBe(GO_VKEY);
    expect(formatSignerKey(name, privateKey)).toBe(GO_SKEY);
    expect(verifyNote(GO_SIGNED, parseVerifierKey(GO_VKEY)).text).toBe(GO_TEXT);
  });

  it('R-35 the C2SP checkpoint example parses to origin, size and root; malformed bodies are refused', () => {
    const body = parseCheckpointText('example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n');
    expect(body.origin).toBe('example.com/behind-the-sofa');
    expect(body.size).toBe(20852163);
    expect(checkpointText(body.origin, body.size, body.root)).toBe('example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n');
    expect(() => parseCheckpointText('o\n012\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n')).toThrow(/size/);
    expect(() => parseCheckpointText('o\n12\nCsUY\n')).toThrow(/root/);
    expect(() => parseCheckpointText('o\n12\n')).toThrow(/origin, a size and a root/);
  });

  it('R-35 a witness cosignature (type 0x04, timestamped) verifies under the witness key and fails on a changed checkpoint', () => {
    const log = generateSigningKey();
    const witness = generateSigningKey();
    const signed = signNote(checkpointText('b-0123', 7, Buffer.alloc(32, 7)), 'b-0123', log);
    const cosigned = cosignNote(signed, 'witness.example/w1', witness, 1_700_000_000);
    const wkey = parseVerifierKey(formatVerifierKey('witness.example/w1', COSIGNATURE_V1, rawPublicKey(witness)));
    expect(verifyNote(cosigned, wkey).signatures).toHaveLength(2);
    const raw = parseNote(cosigned).signatures[1]!.bytes;
    expect(raw.readBigUInt64BE(0)).toBe(1_700_000_000n);
    expect(() => verifyNote(cosigned.replace('\n7\n', '\n8\n'), wkey)).toThrow(/does not verify/);
    // The log's own key does not verify as a cosigner key (different key ID: type 0x04).
    expect(() => verifyNote(cosigned, parseVerifierKey(formatVerifierKey('witness.example/w1', ED25519, rawPublicKey(witness))))).toThrow(/no signature/);
  });

  it('R-35 for all checkpoints, any one-bit change anywhere in the signed note (text, signature line) makes it fail to verify or to parse', () => {
    const key = generateSigningKey();
    const vkey = parseVerifierKey(formatVerifierKey('b-0123456789abcdef', ED25519, rawPublicKey(key)));
    fc.assert(fc.property(fc.integer({ min: 1, max: 2 ** 40 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat(), fc.nat(7), (size, root, at, bit) => {
      const note = Buffer.from(signNote(checkpointText('b-0123456789abcdef', size, root), 'b-0123456789abcdef', key), 'utf8');
      expect(parseCheckpointText(verifyNote(note.toString('utf8'), vkey).text).size).toBe(size);
      const changed = Buffer.from(note);
      changed[at % changed.length]! ^= 1 << bit;
      expect(() => parseCheckpointText(verifyNote(changed.toString('utf8'), vkey).text)).toThrow();
    }), { numRuns: 500 });
  });

  it('R-35 malformed notes and keys are refused with a reason', () => {
    expect(() => parseNote('no blank line\n')).toThrow(/no blank line/);
    expect(() => parseNote('text\n\nnot a signature\n')).toThrow(/malformed signature line/);
    expect(() => parseNote('te\u0001xt\n\n\u2014 a AAAAAAA=\n')).toThrow(/control characters/);
    expect(() => parseVerifierKey('a+b')).toThrow(/not <name>/);
    expect(() => parseVerifierKey(C2SP_VKEY.replace('530d903a', '530d903b'))).toThrow(/key ID does not match/);
  });
});
