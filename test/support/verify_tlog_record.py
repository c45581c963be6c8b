#!/usr/bin/env python3
"""An independent check that a commit's provenance note is the one a signed log recorded (issue 47),
written from C2SP signed-note, tlog-checkpoint, tlog-proof and RFC 9162 (Merkle inclusion), with
Debian's python3-cryptography and git only — no longbuild code.
Usage: verify_tlog_record.py REPO VKEY COMMIT PROOF_FILE
The proof file (`longbuild provenance COMMIT --json` gives it as inclusion.proof) holds the log
event that records the note's SHA-256, its index, the audit path and a checkpoint signed with
VKEY's key. Checks: the checkpoint's signature; the event's leaf is in the tree of that checkpoint;
the event is a ProvenanceRecorded naming COMMIT with the SHA-256 of the note git holds for it.
Prints one JSON line and exits 0, or prints why and exits 1."""
import base64, hashlib, json, subprocess, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.exceptions import InvalidSignature

def fail(why):
    print(why); sys.exit(1)

def sha256(b: bytes) -> bytes:
    return hashlib.sha256(b).digest()

def main():
    repo, vkey, commit, proof_file = sys.argv[1:5]
    name, keyid_hex, b64 = vkey.strip().split('+', 2)
    raw = base64.b64decode(b64)
    if raw[0] != 1 or len(raw) != 33: fail('not an Ed25519 verifier key')
    pub = Ed25519PublicKey.from_public_bytes(raw[1:])
    keyid = sha256(name.encode() + b'\n' + raw)[:4]
    if keyid.hex() != keyid_hex: fail('the verifier key\'s key id does not match its key')

    text = open(proof_file, 'rb').read().decode()
    head, note = text.split('\n\n', 1)
    lines = head.split('\n')
    if lines[0] != 'c2sp.org/tlog-proof@v1': fail('not a tlog-proof')
    event_bytes = base64.b64decode(lines[1].removeprefix('extra '))
    index = int(lines[2].removeprefix('index '))
    path = [base64.b64decode(l) for l in lines[3:]]

    # The checkpoint: a signed note (body, blank line, "— name base64(keyid || signature)" lines).
    body, sigs = note.split('\n\n', 1)
    body += '\n'
    good = False
    for line in sigs.strip('\n').split('\n'):
        if not line.startswith('\u2014 '): fail('a signature line is not "— name signature"')
        who, sig = line[2:].rsplit(' ', 1)
        sig = base64.b64decode(sig)
        if who == name and sig[:4] == keyid:
            try:
                pub.verify(sig[4:], body.encode())
                good = True
            except InvalidSignature:
                fail('the checkpoint\'s signature does not verify')
    if not good: fail('the checkpoint is not signed by the key given')
    origin, size, root = body.split('\n')[:3]
    size, root = int(size), base64.b64decode(root)

    # RFC 9162 2.1.3.2: the inclusion of leaf `index` in the tree of `size` leaves.
    leaf = sha256(b'\x00' + sha256(event_bytes))
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0: fail('the audit path is too long')
        if fn & 1 or fn == sn:
            r = sha256(b'\x01' + p + r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1; sn >>= 1
        else:
            r = sha256(b'\x01' + r + p)
        fn >>= 1; sn >>= 1
    if sn != 0 or r != root: fail(f'the event at index {index} is not in the tree the checkpoint signed (size {size})')

    event = json.loads(event_bytes)
    if event.get('type') != 'ProvenanceRecorded' or event.get('position') != index + 1: fail('the proved event is not a ProvenanceRecorded at its index')
    mine = [a for a in event['data']['attestations'] if a['commit'] == commit]
    if not mine: fail(f'the record does not name {commit}')
    note_bytes = subprocess.run(['git', '-C', repo, 'notes', '--ref=refs/notes/longbuild/provenance', 'show', commit], check=True, capture_output=True).stdout
    if hashlib.sha256(note_bytes).hexdigest() != mine[0]['envelopeSha256']: fail(f'{commit}: the note is not the one the log recorded')
    print(json.dumps({'commit': commit, 'origin': origin, 'size': size, 'position': index + 1, 'envelopeSha256': mine[0]['envelopeSha256']}))

main()
