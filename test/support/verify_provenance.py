#!/usr/bin/env python3
"""An independent verifier of longbuild's provenance notes (issue 47), written from the DSSE v1.0
and in-toto Statement v1 specifications, with Debian's python3-cryptography and git — no longbuild
code. Usage: verify_provenance.py REPO VKEY COMMIT...
For each commit: its note under refs/notes/longbuild/provenance is a DSSE envelope whose Ed25519
signature (over PAE) verifies with VKEY's key, its payload an in-toto Statement v1 whose subject is
that commit and its tree. Prints one JSON line per commit (the statement's facts) and exits 0, or
prints why and exits 1."""
import base64, json, subprocess, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.exceptions import InvalidSignature

def git(repo, *args):
    return subprocess.run(['git', '-C', repo, *args], check=True, capture_output=True, text=True).stdout.strip()

def pae(payload_type: bytes, body: bytes) -> bytes:
    return b'DSSEv1 %d %s %d %s' % (len(payload_type), payload_type, len(body), body)

def main():
    repo, vkey, commits = sys.argv[1], sys.argv[2], sys.argv[3:]
    name, keyid, b64 = vkey.strip().split('+', 2)
    raw = base64.b64decode(b64)
    assert raw[0] == 1 and len(raw) == 33, 'not an Ed25519 verifier key'
    pub = Ed25519PublicKey.from_public_bytes(raw[1:])
    for commit in commits:
        try:
            note = git(repo, 'notes', '--ref=refs/notes/longbuild/provenance', 'show', commit)
        except subprocess.CalledProcessError:
            print(f'{commit}: no provenance note'); sys.exit(1)
        env = json.loads(note)
        body = base64.b64decode(env['payload'])
        sigs = [s for s in env['signatures'] if s['keyid'] == keyid]
        if not sigs:
            print(f'{commit}: no signature by key {keyid}'); sys.exit(1)
        for s in sigs:
            try:
                pub.verify(base64.b64decode(s['sig']), pae(env['payloadType'].encode(), body))
            except InvalidSignature:
                print(f'{commit}: bad signature'); sys.exit(1)
        st = json.loads(body)
        if env['payloadType'] != 'application/vnd.in-toto+json' or st['_type'] != 'https://in-toto.io/Statement/v1':
            print(f'{commit}: not an in-toto statement'); sys.exit(1)
        subject = st['subject'][0]
        if subject['digest'].get('gitCommit') != commit or subject['digest'].get('gitTree') != git(repo, 'rev-parse', commit + '^{tree}'):
            print(f'{commit}: the statement is about another commit ({subject["digest"]})'); sys.exit(1)
        pred = st['predicate']
        print(json.dumps({
            'commit': commit, 'node': subject['name'], 'predicateType': st['predicateType'],
            'attempt': pred['buildDefinition']['internalParameters']['attemptId'],
            'verification': [b['annotations']['exitCode'] for b in pred['runDetails']['byproducts'] if b['name'].startswith('verify[')],
            'builder': pred['runDetails']['builder']['id'],
        }))

main()
