import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson, type JsonValue } from '../src/events/canonical.js';
import { computeEventHash, type StoredEvent } from '../src/events/envelope.js';
import { GENESIS_HASH } from '../src/events/hash.js';
import { eventLeafHash, hashLeaves } from '../src/events/merkle.js';
import { COSIGNATURE_V1, ED25519, checkpointText, formatVerifierKey, rawPublicKey, signNote } from '../src/events/signed-note.js';
import { generateSigningKey } from '../src/adapters/transparency/keys.js';
import { IN_TOTO_PAYLOAD_TYPE, signEnvelope } from '../src/events/dsse.js';
import { cliJson, runCli } from './support/cli.js';

// The audit bundle checked the way an auditor would: copied to a fresh directory with no
// node_modules, verify.mjs run by `node` with PATH holding nothing but node. Every tamper of
// issue 13, done on the bundle, is caught by the first check it breaks, naming the position.

const root = mkdtempSync(join(tmpdir(), 'lb-bundle-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
const nodeOnly = join(root, 'bin');
let repo = '';
let bundle = '';
let vkey = '';
let n = 0;

beforeAll(() => {
  mkdirSync(nodeOnly);
  symlinkSync(process.execPath, join(nodeOnly, 'node'));
  repo = join(root, 'repo');
  vkey = cliJson<{ signingKey: { vkey: string } }>(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root }).signingKey.vkey;
  expect(runCli(['run', '--repo', repo], { cwd: root }).code).toBe(0);
  bundle = join(root, 'bundle');
  const out = cliJson<{ events: number; commits: number; unvouched: number }>(['audit', 'export', '--repo', repo, '--to', bundle], { cwd: root });
  expect(out.unvouched).toBe(0);
  expect(out.commits).toBeGreaterThan(3);
});

/** A fresh copy of the bundle (in a directory with no node_modules anywhere above it but /tmp). */
function copy(): string {
  const dir = join(root, `copy${n++}`);
  cpSync(bundle, dir, { recursive: true });
  return dir;
}

/** `node verify.mjs ARGS` in the bundle, PATH = only node, no other environment. */
function standalone(dir: string, ...args: string[]): { code: number | null; out: string } {
  const r = spawnSync('node', [join(dir, 'verify.mjs'), ...args], { cwd: dir, env: { PATH: nodeOnly }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout + r.stderr };
}

function events(dir: string): StoredEvent[] {
  return readFileSync(join(dir, 'log.ndjson'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as StoredEvent);
}

/** Write events back, rechaining from `from` (all hashes recomputed) unless `rechain` is false. */
function writeEvents(dir: string, evs: StoredEvent[], rechain = true): void {
  let prev = GENESIS_HASH;
  const out = evs.map((e) => {
    if (!rechain) return e;
    const { hash: _h, ...rest } = { ...e, prevHash: prev };
    const hash = computeEventHash(rest);
    prev = hash;
    return { ...rest, hash };
  });
  writeFileSync(join(dir, 'log.ndjson'), `${out.map((e) => canonicalJson(e as unknown as JsonValue)).join('\n')}\n`);
}

/** The attacker updates bundle.json so transport integrity still holds, and its counts and key agree with what it ships. */
function fixManifest(dir: string): void {
  const m = JSON.parse(readFileSync(join(dir, 'bundle.json'), 'utf8')) as { files: Record<string, string>; events: number; lastCheckpoint: number | null; vkey: string; buildId: string };
  for (const f of Object.keys(m.files)) {
    if (existsSync(join(dir, f))) m.files[f] = createHash('sha256').update(readFileSync(join(dir, f))).digest('hex');
    else delete m.files[f];
  }
  const evs = events(dir);
  const init = evs[0]!.data as { buildId: string; signing: { vkey: string } };
  Object.assign(m, { events: evs.length, vkey: init.signing.vkey, buildId: init.buildId, lastCheckpoint: Math.max(...readdirSync(join(dir, 'checkpoints')).map((f) => parseInt(f))) });
  writeFileSync(join(dir, 'bundle.json'), JSON.stringify(m));
}

/**
 * Re-sign every checkpoint over the bundle's (rewritten) log with `key`, and swap the log's vkey
 * for it; the attestations too, naming the new key, with their digests recorded anew.
 */
function resign(dir: string, evs: StoredEvent[], key = generateSigningKey()): StoredEvent[] {
  const origin = (evs[0]!.data as { buildId: string }).buildId;
  const vkeyNew = formatVerifierKey(origin, ED25519, rawPublicKey(key));
  const digests = new Map<string, string>();
  const att = join(dir, 'attestations');
  for (const f of existsSync(att) ? readdirSync(att) : []) {
    const env = JSON.parse(readFileSync(join(att, f), 'utf8')) as { payload: string };
    const st = JSON.parse(Buffer.from(env.payload, 'base64').toString('utf8'));
    st.predicate.runDetails.builder.version.verifierKeyId = vkeyNew.split('+')[1];
    const text = `${JSON.stringify(signEnvelope(IN_TOTO_PAYLOAD_TYPE, Buffer.from(canonicalJson(st)), origin, key))}\n`;
    writeFileSync(join(att, f), text);
    digests.set(f.replace(/\.json$/, ''), createHash('sha256').update(text).digest('hex'));
  }
  const swapped = evs.map((e, i) => {
    if (i === 0) return { ...e, data: { ...(e.data as object), signing: { vkey: vkeyNew } } as JsonValue };
    if (e.type !== 'ProvenanceRecorded') return e;
    const d = e.data as { attestations: { commit: string; envelopeSha256: string }[] };
    return { ...e, data: { attestations: d.attestations.map((a) => ({ ...a, envelopeSha256: digests.get(a.commit) ?? a.envelopeSha256 })) } as unknown as JsonValue };
  });
  writeEvents(dir, swapped);
  const leaves = events(dir).map((e) => eventLeafHash(e.hash));
  for (const f of readdirSync(join(dir, 'checkpoints'))) {
    const size = parseInt(f);
    writeFileSync(join(dir, 'checkpoints', f), signNote(checkpointText(origin, size, hashLeaves(leaves.slice(0, size))), origin, key));
  }
  return swapped;
}

describe('R-37 the audit bundle and its standalone verifier', () => {
  it('R-37 verify.mjs runs with PATH holding only node in a copy of the bundle, prints one line per check and passes; audit verify agrees', () => {
    const dir = copy();
    const r = standalone(dir, '--key', vkey);
    expect(r.code, r.out).toBe(0);
    expect(r.out.split('\n').filter((l) => l.startsWith('ok ')).map((l) => l.split(':')[0])).toEqual(['ok bundle', 'ok chain', 'ok schemas', 'ok keys', 'ok checkpoints', 'ok coverage', 'ok evidence', 'ok tests', 'ok git', 'ok provenance', 'ok graph']);
    expect(r.out.split('\n')[0]).toBe(`verifier sha256 ${createHash('sha256').update(readFileSync(join(dir, 'verify.mjs'))).digest('hex')} (compare with \`longbuild audit verifier\` from your own install, never with this line alone)`);
    expect(r.out).toMatch(/ok tests: \d+ verifications' test reports read again from their evidence; \d+ promotions held to the ratchet/);
    expect(r.out).toMatch(/ok graph: \d+ graph revisions reconstructed/);
    const same = cliJson<{ ok: boolean; checks: unknown[] }>(['audit', 'verify', dir, '--key', vkey], { cwd: root });
    expect(same.ok).toBe(true);
    expect(same.checks).toHaveLength(11);
    expect(r.out).toMatch(/ok provenance: \d+ attestations of integrated commits: each the one the log recorded/);
  });

  it('R-37 a build that names no commit yet (just initialised, and one of read-only nodes run to its end) exports a bundle holding its base commit, and it verifies', () => {
    const readOnly = join(root, 'read-only.json');
    writeFileSync(readOnly, JSON.stringify({
      request: { goal: 'reviews only' }, verify: [['true']], detailedWindow: 1,
      milestones: [{ id: 'review', title: 'Review', nodes: [{ id: 'r1', kind: 'read-only', deps: [] }, { id: 'r2', kind: 'read-only', deps: ['r1'] }] }],
    }));
    for (const [name, finish] of [['fresh', false], ['reviewed', true]] as const) {
      const r = join(root, `repo-${name}`);
      const key = cliJson<{ signingKey: { vkey: string } }>(['init', '--blueprint', readOnly, '--repo', r], { cwd: root }).signingKey.vkey;
      if (finish) expect(runCli(['run', '--repo', r], { cwd: root }).code).toBe(0);
      const to = join(root, `bundle-${name}`);
      const out = cliJson<{ commits: number }>(['audit', 'export', '--repo', r, '--to', to], { cwd: root });
      expect(out.commits).toBe(1);
      const v = standalone(to, '--key', key);
      expect(v.code, v.out).toBe(0);
      expect(v.out).toMatch(/ok git: 0 commits the log names are in git.bundle/);
    }
  });

  it('R-37 one edited event (manifest fixed up) fails the chain at its position', () => {
    const dir = copy();
    const evs = events(dir);
    (evs[4]!.metadata as Record<string, unknown>).recordedAt = '2020-01-01T00:00:00.000Z';
    writeEvents(dir, evs, false);
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FAILED chain at position 5: hash mismatch/);
  });

  it('R-37 a consistent rewrite (verify command replaced) fails the checkpoints; re-signed under another key it passes only without --key, and fails with --key and with --expect', () => {
    const held = join(root, 'held.checkpoint');
    const sizes = readdirSync(join(bundle, 'checkpoints')).map((f) => parseInt(f)).sort((a, b) => a - b);
    cpSync(join(bundle, 'checkpoints', `${sizes[1]}.checkpoint`), held);
    const dir = copy();
    const evs = events(dir);
    evs[0] = { ...evs[0]!, data: { ...(evs[0]!.data as object), verify: [['true']] } as JsonValue };
    writeEvents(dir, evs);
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FAILED checkpoints at position 1: the log is not the one checkpoints\/1\.checkpoint signed/);
    resign(dir, evs);
    fixManifest(dir);
    expect(standalone(dir).code).toBe(0); // nothing inside the bundle can tell
    const withKey = standalone(dir, '--key', vkey);
    expect(withKey.code).toBe(1);
    expect(withKey.out).toMatch(/FAILED keys at position 1: the log records the signing key .* not the one given with --key/);
    const withHeld = standalone(dir, '--expect', held);
    expect(withHeld.code).toBe(1);
    expect(withHeld.out).toMatch(/FAILED checkpoints: .*held\.checkpoint does not verify/);
  });

  it('R-37 a log cut short (its last events dropped, manifest fixed up) fails the checkpoints: log truncated, at the first missing position', () => {
    const dir = copy();
    const evs = events(dir);
    writeEvents(dir, evs.slice(0, evs.length - 3), false);
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`FAILED checkpoints at position ${evs.length - 2}: log truncated: checkpoints/\\d+\\.checkpoint was signed at size \\d+, the log ends at ${evs.length - 3}`));
  });

  it('R-37 an event that fails its schema (a bogus BuildCompleted), rechained and re-signed, fails the schemas at its position', () => {
    const dir = copy();
    const evs = events(dir);
    const last = evs[evs.length - 1]!;
    evs.push({ ...last, position: last.position + 1, revision: last.revision + 1, type: 'BuildCompleted', data: { bogus: true } });
    resign(dir, evs);
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`FAILED schemas at position ${last.position + 1}: event fails the catalogue`));
  });

  it('R-37 a forged graph record (its SHA-256 changed), rechained and re-signed, fails the graph reconstruction at its position', () => {
    const dir = copy();
    const evs = events(dir);
    const at = evs.findIndex((e) => (e.metadata as { graph?: unknown }).graph !== undefined && e.position > 10);
    const meta = evs[at]!.metadata as unknown as { graph: { revision: number; sha256: string } };
    meta.graph = { ...meta.graph, sha256: 'f'.repeat(64) };
    resign(dir, evs);
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`FAILED graph at position ${at + 1}: .* records graph ffffffff`));
  });

  it('R-37 an edited evidence file and a git bundle without the promoted commits are caught', () => {
    const dir = copy();
    const ev = readdirSync(join(dir, 'evidence'))[0]!;
    writeFileSync(join(dir, 'evidence', ev), 'forged output\n');
    fixManifest(dir);
    const r = standalone(dir);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`FAILED evidence at position \\d+: evidence file ${ev} does not hash to its name`));
    const dir2 = copy();
    // A bundle of the first commit only: the promotions' commits are missing.
    const first = events(dir2).find((e) => e.type === 'BuildInitialized')!.data as { baseHead: string };
    const g = join(root, `g${n}`);
    spawnSync('git', ['clone', '--quiet', '--bare', join(repo, '.longbuild', 'integrator.git'), g]);
    spawnSync('git', ['-C', g, 'update-ref', 'refs/heads/only', first.baseHead]);
    spawnSync('git', ['-C', g, 'bundle', 'create', join(dir2, 'git.bundle'), 'refs/heads/only']);
    fixManifest(dir2);
    const r2 = standalone(dir2);
    expect(r2.code).toBe(1);
    expect(r2.out).toMatch(/FAILED git at position \d+: commit [0-9a-f]{40} \(.*\) is not in git\.bundle/);
  });

  it('R-37 a witness key: refused until the witness cosigned, then verified (and a forged cosignature fails)', () => {
    const wkeyFile = join(root, 'w.key');
    const w = cliJson<{ witnessKey: string }>(['witness', 'cosign', '--repo', repo, '--witness-key', wkeyFile, '--log-key', vkey, '--name', 'witness.example/a'], { cwd: root });
    const before = copy();
    const r = standalone(before, '--key', vkey, '--witness', w.witnessKey);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/no checkpoint in the bundle is cosigned by witness witness\.example\/a/);
    const dir = join(root, `rebundle${n++}`);
    cliJson(['audit', 'export', '--repo', repo, '--to', dir], { cwd: root });
    const ok = standalone(dir, '--key', vkey, '--witness', w.witnessKey);
    expect(ok.code, ok.out).toBe(0);
    expect(ok.out).toMatch(/cosigned by witness\.example\/a up to size \d+/);
    const other = formatVerifierKey('witness.example/a', COSIGNATURE_V1, rawPublicKey(generateSigningKey()));
    expect(standalone(dir, '--witness', other).out).toMatch(/no checkpoint in the bundle is cosigned/);
  });

  /**
   * The attack of issue 44: keep the checkpoints up to `keep`, rewrite every event after it
   * (their recorded times and a read-only node's decision: what an auditor would read), rechain,
   * delete the later checkpoint files and fix the manifest up. Everything inside the bundle agrees.
   */
  function forgeTail(keep: number): { dir: string; forged: number } {
    const dir = copy();
    const evs = events(dir).map((e) => {
      if (e.position <= keep) return e;
      const text = JSON.stringify(e.data).replaceAll('release 1.0', 'release 6.6.6');
      return { ...e, data: JSON.parse(text) as JsonValue, metadata: { ...(e.metadata as object), recordedAt: '2031-01-01T00:00:00.000Z' } as StoredEvent['metadata'] };
    });
    writeEvents(dir, evs);
    for (const f of readdirSync(join(dir, 'checkpoints'))) if (parseInt(f) > keep) rmSync(join(dir, 'checkpoints', f));
    fixManifest(dir);
    return { dir, forged: evs.length - keep };
  }

  it('R-54 a tail rewritten after a kept checkpoint (later checkpoints deleted, manifest fixed up) fails coverage in verify.mjs and in audit verify --key, naming the unsigned span; --allow-unsigned-tail passes, saying what nobody vouches for', () => {
    const sizes = readdirSync(join(bundle, 'checkpoints')).map((f) => parseInt(f)).sort((a, b) => a - b);
    const total = events(bundle).length;
    // Only 1.checkpoint kept (the case: all but one event forged), and a middle one.
    for (const keep of [1, sizes[sizes.length - 3]!]) {
      const { dir, forged } = forgeTail(keep);
      expect(forged).toBe(total - keep);
      expect(readFileSync(join(dir, 'log.ndjson'), 'utf8')).toContain('release 6.6.6');
      const r = standalone(dir, '--key', vkey);
      expect(r.code, r.out).toBe(1);
      expect(r.out).toContain(`FAILED coverage at position ${keep + 1}: events ${keep + 1}..${total} are covered by no signed checkpoint (the last covers ${keep} of ${total})`);
      expect(r.out).not.toContain('verified: every check passed');
      const cli = runCli(['audit', 'verify', dir, '--key', vkey], { cwd: root });
      expect(cli.code).toBe(1);
      expect(cli.stderr.trim().split('\n')).toHaveLength(1);
      expect(cli.stderr).toMatch(new RegExp(`audit verify failed at position ${keep + 1} \\(coverage\\): events ${keep + 1}\\.\\.${total} are covered by no signed checkpoint`));
      // Said out loud, the signed part verifies: the forged events are then only what nobody vouched for.
      const allowed = standalone(dir, '--key', vkey, '--allow-unsigned-tail');
      expect(allowed.code, allowed.out).toBe(0);
      expect(allowed.out).toContain(`ok coverage: events ${keep + 1}..${total} are covered by no signed checkpoint (the last covers ${keep} of ${total}); accepted with --allow-unsigned-tail: only events 1..${keep} are vouched for`);
    }
  });

  it('R-54 a witness that cosigned the whole log makes the forged tail and a cut fail: its checkpoint, passed with --expect, covers the events the bundle leaves unsigned', () => {
    const wkeyFile = join(root, 'w54.key');
    const held = join(root, 'witnessed.checkpoint');
    const w = cliJson<{ witnessKey: string; size: number }>(['witness', 'cosign', '--repo', repo, '--witness-key', wkeyFile, '--log-key', vkey, '--name', 'witness.example/r54', '--out', held], { cwd: root });
    const total = events(bundle).length;
    expect(w.size).toBe(total);
    const { dir } = forgeTail(1);
    const forged = standalone(dir, '--key', vkey, '--expect', held, '--witness', w.witnessKey);
    expect(forged.code).toBe(1);
    expect(forged.out).toMatch(/FAILED checkpoints at position 1: the log is not the one .*witnessed\.checkpoint signed at size \d+ \(its Merkle root differs: rewritten\)/);
    // Cut instead (the tail dropped with its checkpoints): the witness's larger tree says so.
    const cut = copy();
    writeEvents(cut, events(cut).slice(0, 12), false);
    for (const f of readdirSync(join(cut, 'checkpoints'))) if (parseInt(f) > 12) rmSync(join(cut, 'checkpoints', f));
    fixManifest(cut);
    expect(standalone(cut, '--key', vkey).code).toBe(0); // alone, a cut at a checkpoint is a whole log
    const cutHeld = standalone(cut, '--key', vkey, '--expect', held);
    expect(cutHeld.code).toBe(1);
    expect(cutHeld.out).toMatch(/log truncated: .*witnessed\.checkpoint was signed at size \d+, the log ends at 12/);
    // The genuine bundle, checked against the witness: covered, cosigned.
    const ok = standalone(bundle, '--key', vkey, '--expect', held, '--witness', w.witnessKey);
    expect(ok.code, ok.out).toBe(0);
  });

  it('R-54 audit verify runs the install\'s own checks: it names the SHA-256 of its verifier (audit verifier), the genuine bundle\'s verify.mjs is that one, and a forged verify.mjs (manifest fixed up) is named as not this install\'s and never run', () => {
    const mine = cliJson<{ sha256: string; path: string }>(['audit', 'verifier'], { cwd: root });
    expect(mine.sha256).toBe(createHash('sha256').update(readFileSync(join(bundle, 'verify.mjs'))).digest('hex'));
    expect(cliJson<{ verifier: { same: boolean } }>(['audit', 'verify', bundle, '--key', vkey], { cwd: root }).verifier.same).toBe(true);
    const dir = copy();
    // A verify.mjs that says everything passed, whatever the bundle holds.
    writeFileSync(join(dir, 'verify.mjs'), "console.log('verified: every check passed');\n");
    const evs = events(dir);
    writeEvents(dir, evs.slice(0, 5), false); // and a log cut to nothing much
    fixManifest(dir);
    expect(standalone(dir).out).toBe('verified: every check passed\n'); // the forged verifier lies
    const r = runCli(['audit', 'verify', dir, '--key', vkey], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^note: the bundle's verify\.mjs \(sha256 [0-9a-f]{16}…\) is not this install's verifier/);
    expect(r.stderr).toMatch(/audit verify failed/);
  });

  it('R-54 bundle.json\'s counts are checked: an edited event count or last checkpoint (file hashes fixed up) fails the bundle check', () => {
    for (const [field, value] of [['events', 7], ['lastCheckpoint', 1]] as const) {
      const dir = copy();
      const m = JSON.parse(readFileSync(join(dir, 'bundle.json'), 'utf8')) as Record<string, unknown>;
      m[field] = value;
      writeFileSync(join(dir, 'bundle.json'), JSON.stringify(m));
      const r = standalone(dir, '--key', vkey);
      expect(r.code).toBe(1);
      expect(r.out).toContain(`FAILED bundle: bundle.json says ${field} ${value}, the bundle holds`);
    }
  });

  it('R-54 a git bundle holding the commit objects but not their trees and blobs fails the git check, naming the missing object and its path', () => {
    const dir = copy();
    // A pack of exactly the commit objects the log names (git pack-objects, no --revs: no trees, no blobs).
    const named = new Set<string>();
    for (const e of events(dir)) {
      if (e.type === 'IntegrationPromoted') {
        const r = (e.data as { receipt: { resultCommit: string; candidates: { commit: string }[] } }).receipt;
        named.add(r.resultCommit);
        for (const c of r.candidates) named.add(c.commit);
      }
      if (e.type === 'AttemptFinished' && typeof (e.data as { commit?: string }).commit === 'string') named.add((e.data as { commit: string }).commit);
    }
    const integrator = join(repo, '.longbuild', 'integrator.git');
    const g = join(root, `commits-only${n++}`);
    spawnSync('git', ['init', '--quiet', '--bare', g]);
    const pack = spawnSync('git', ['-C', integrator, 'pack-objects', '--stdout'], { input: [...named].join('\n') + '\n' });
    expect(pack.status).toBe(0);
    expect(spawnSync('git', ['-C', g, 'index-pack', '--stdin', '--fix-thin'], { input: pack.stdout }).status).toBe(0);
    const head = [...named][0]!;
    spawnSync('git', ['-C', g, 'update-ref', 'refs/heads/x', head]);
    // git bundle create walks the trees and refuses: write the bundle by hand (v2 header, one ref, the pack).
    writeFileSync(join(dir, 'git.bundle'), Buffer.concat([Buffer.from(`# v2 git bundle\n${head} refs/heads/x\n\n`), pack.stdout]));
    fixManifest(dir);
    const r = standalone(dir, '--key', vkey);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/FAILED git at position \d+: the tree [0-9a-f]{40} \('\(root\)'\) of commit [0-9a-f]{40} \(.*\) is not in git\.bundle: the bundle does not hold what was promoted/);
  });
});
