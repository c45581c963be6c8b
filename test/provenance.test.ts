/**
 * Provenance of integrated commits (issue 47, R-62), through the CLI with real git, SQLite and an
 * independent verifier: every commit a promotion put on the integration ref gets a git note (written
 * by `run` as it ends)
 * holding a DSSE envelope of an in-toto Statement v1 (SLSA provenance v1), signed with the build's
 * key. Python's `cryptography` (Debian's python3-cryptography) checks the signatures and subjects
 * without longbuild's code; tampered notes (edited, moved to another commit, re-signed with another
 * key, missing) are refused by `provenance verify`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';
import { events } from './support/outcomes.js';

const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
const PY = join(import.meta.dirname, 'support', 'verify_provenance.py');
const PY_TLOG = join(import.meta.dirname, 'support', 'verify_tlog_record.py');
const REF = 'refs/notes/longbuild/provenance';

const root = tempDir('longbuild-provenance-');
const repo = join(root, 'repo');
let vkey = '';
let integrated: string[] = [];
const gitOut = (...args: string[]): string => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' }).trim();
const note = (commit: string): Record<string, any> => JSON.parse(gitOut('notes', `--ref=${REF}`, 'show', commit));
const setNote = (commit: string, envelope: unknown): void => {
  execFileSync('git', ['-C', repo, 'notes', `--ref=${REF}`, 'add', '-f', '-m', JSON.stringify(envelope), commit], { stdio: 'ignore' });
};
const python = (...commits: string[]) => spawnSync('python3', [PY, repo, vkey, ...commits], { encoding: 'utf8' });

beforeAll(() => {
  vkey = cliJson<{ signingKey: { vkey: string } }>(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root }).signingKey.vkey;
  expect(runCli(['run', '--repo', repo], { cwd: root }).code).toBe(0);
  const base = events(repo).find((e) => e.type === 'BuildInitialized')!.data.baseHead as string;
  integrated = gitOut('rev-list', '--reverse', `${base}..longbuild/integration`).split('\n');
  // `run` wrote the notes as it ended: publishing again (every note checked against the log) writes none.
  expect(gitOut('notes', `--ref=${REF}`, 'list').split('\n')).toHaveLength(integrated.length);
  const pub = cliJson(['provenance', 'publish'], { cwd: repo });
  expect(pub).toMatchObject({ action: 'publish', commits: integrated.length, written: 0 });
}, 120_000);

describe('provenance of integrated commits (issue 47, R-62)', () => {
  it('every integrated commit has a note whose envelope an independent verifier (python3-cryptography) checks, naming its node and the verification that passed', () => {
    const promoted = events(repo).filter((e) => e.type === 'IntegrationPromoted');
    const nodes = promoted.flatMap((e) => e.data.receipt.nodeIds as string[]);
    expect(integrated.length).toBeGreaterThan(2);
    const r = python(...integrated);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const facts = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { commit: string; node: string; attempt: string; predicateType: string; verification: number[]; builder: string });
    expect(facts.map((f) => f.commit)).toEqual(integrated);
    const buildId = events(repo)[0]!.data.buildId as string;
    for (const f of facts) {
      expect(nodes).toContain(f.node);
      expect(f.predicateType).toBe('https://slsa.dev/provenance/v1');
      expect(f.verification.length).toBeGreaterThan(0);
      expect(f.verification.every((code) => code === 0)).toBe(true);
      expect(f.builder).toBe(`urn:longbuild:build:${buildId}`);
    }
    // git shows them; publishing again writes nothing (the envelopes are deterministic).
    expect(gitOut('log', '--notes=longbuild/provenance', '-1', 'longbuild/integration')).toMatch(/Notes \(longbuild\/provenance\):\n\s+\{"payload":/);
    expect(cliJson(['provenance', 'publish'], { cwd: repo })).toMatchObject({ written: 0 });
    const shown = cliJson(['provenance', integrated.at(-1)!], { cwd: repo });
    expect(shown.summary).toMatchObject({ nodeId: facts.at(-1)!.node, verification: [expect.objectContaining({ exitCode: 0 })] });
    expect(shown.envelope).toEqual(note(integrated.at(-1)!));
    expect(cliJson(['provenance', 'verify', integrated[0]!, '--key', vkey], { cwd: repo })).toMatchObject({ ok: true, keyId: vkey.split('+')[1] });
    // Each commit's trailers (git's own parser) name the build, the node and the attempt its statement names.
    for (const f of facts) {
      const trailers = execFileSync('git', ['interpret-trailers', '--parse'], { input: gitOut('log', '-1', '--format=%B', f.commit), encoding: 'utf8' });
      expect(trailers).toBe(`Longbuild-Build: ${buildId}\nLongbuild-Node: ${f.node}\nLongbuild-Attempt: ${f.attempt}\n`);
    }
  });

  it('an agent worker\'s commits will say which agent and model assisted (Assisted-by, recorded in the build\'s settings)', () => {
    const cfg = tempDir('longbuild-provenance-agent-');
    const other = join(cfg, 'repo');
    execFileSync('git', ['init', '-q', other]);
    execFileSync('git', ['-C', other, 'commit', '-q', '--allow-empty', '-m', 'init']);
    const config = join(cfg, 'longbuild.config.json');
    const request = join(cfg, 'request.json');
    execFileSync(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(config)}, JSON.stringify({ planner: { command: ['true'] }, worker: { agent: 'claude', model: 'claude-sonnet-4-5' }, verify: [['true']] })); require('fs').writeFileSync(${JSON.stringify(request)}, '{}')`]);
    cliJson(['init', '--request', request, '--config', config, '--repo', other], { cwd: cfg });
    expect(events(other)[0]!.data.settings.trailers).toEqual({ assistedBy: 'claude (claude-sonnet-4-5)' });
  });

  it('a controller killed before it wrote the notes (real SIGKILL) leaves none missing after the resume, and the work done before the kill is attested as the log said it right after the kill', () => {
    const other = join(tempDir('longbuild-provenance-kill-'), 'repo');
    cliJson(['init', '--blueprint', ORBIT, '--repo', other], { cwd: root });
    const killed = runCli(['run', '--repo', other], { cwd: root, env: { LONGBUILD_CRASH_AT: 'after-append:IntegrationPromoted:2' } });
    expect(killed.signal).toBe('SIGKILL');
    expect(execFileSync('git', ['-C', other, 'notes', `--ref=${REF}`, 'list'], { encoding: 'utf8' }).trim()).toBe('');
    const promotedBefore = execFileSync('git', ['-C', other, 'rev-list', '--reverse', `${events(other)[0]!.data.baseHead}..longbuild/integration`], { encoding: 'utf8' }).trim().split('\n');
    const before = promotedBefore.map((c) => [c, cliJson(['provenance', c], { cwd: other }).statement] as const);
    expect(before.length).toBeGreaterThan(1);
    expect(runCli(['run', '--repo', other], { cwd: root }).code).toBe(0);
    const base = events(other)[0]!.data.baseHead as string;
    const commits = execFileSync('git', ['-C', other, 'rev-list', '--reverse', `${base}..longbuild/integration`], { encoding: 'utf8' }).trim().split('\n');
    expect(commits).toEqual(integrated); // the logical clock: the same work, the same commits
    const r = spawnSync('python3', [PY, other, events(other)[0]!.data.signing.vkey, ...commits], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // What the log said of the work promoted before the kill (asked right after it) is what the notes written after the resume sign.
    for (const [c, statement] of before) {
      expect(JSON.parse(Buffer.from(JSON.parse(execFileSync('git', ['-C', other, 'notes', `--ref=${REF}`, 'show', c], { encoding: 'utf8' })).payload, 'base64').toString('utf8'))).toEqual(statement);
    }
  }, 120_000);

  it('the log records each note\'s SHA-256 once, in a signed checkpoint: an independent verifier (RFC 9162, C2SP) checks the inclusion proof and the note against it', () => {
    const records = events(repo).filter((e) => e.type === 'ProvenanceRecorded').flatMap((e) => e.data.attestations as { commit: string; envelopeSha256: string }[]);
    expect(records.map((r) => r.commit).sort()).toEqual([...integrated].sort()); // each integrated commit, once
    const dir = tempDir('longbuild-provenance-proofs-');
    for (const c of integrated) {
      const shown = cliJson<{ record: { position: number; envelopeSha256: string }; inclusion: { proof: string; checkpointSize: number } }>(['provenance', c], { cwd: repo });
      expect(shown.record.envelopeSha256).toBe(crypto.createHash('sha256').update(execFileSync('git', ['-C', repo, 'notes', `--ref=${REF}`, 'show', c])).digest('hex'));
      const file = join(dir, `${c}.proof`);
      writeFileSync(file, shown.inclusion.proof);
      const r = spawnSync('python3', [PY_TLOG, repo, vkey, c, file], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ commit: c, position: shown.record.position, size: shown.inclusion.checkpointSize });
    }
    // The verifier can fail: one hash of the audit path changed.
    const first = join(dir, `${integrated[0]}.proof`);
    const lines = readFileSync(first, 'utf8').split('\n');
    lines[3] = Buffer.alloc(32, 7).toString('base64');
    writeFileSync(first, lines.join('\n'));
    expect(spawnSync('python3', [PY_TLOG, repo, vkey, integrated[0]!, first], { encoding: 'utf8' }).stdout).toMatch(/is not in the tree the checkpoint signed/);
    const v = cliJson<{ record: { position: number }; inclusion: { checkpointSize: number } }>(['provenance', 'verify', integrated[0]!], { cwd: repo });
    expect(v.inclusion.checkpointSize).toBeGreaterThanOrEqual(v.record.position);
  });

  it('land says the landed commits carry their attestations as notes and how to share them; without the head\'s note it says how to write them', () => {
    const landed = cliJson<{ provenance: { noted: boolean; ref: string } }>(['land', '--into', 'landed'], { cwd: repo });
    expect(landed.provenance).toEqual({ noted: true, ref: REF });
    expect(gitOut('notes', `--ref=${REF}`, 'show', 'landed')).toContain('"payloadType":"application/vnd.in-toto+json"');
    const head = integrated.at(-1)!;
    const saved = gitOut('notes', `--ref=${REF}`, 'show', head);
    execFileSync('git', ['-C', repo, 'notes', `--ref=${REF}`, 'remove', head], { stdio: 'ignore' });
    try {
      const r = runCli(['land', '--into', 'landed'], { cwd: repo });
      expect([r.code, r.stdout]).toEqual([0, expect.stringContaining('no provenance note yet: `longbuild provenance publish` writes them')]);
    } finally {
      execFileSync('git', ['-C', repo, 'notes', `--ref=${REF}`, 'add', '-f', '-m', saved, head], { stdio: 'ignore' });
    }
    expect(runCli(['provenance', 'verify', head], { cwd: repo }).code).toBe(0);
  });

  it('an audit bundle carries every attestation and audit verify (and the standalone verify.mjs) checks each: a rewritten or missing one fails though bundle.json is fixed up', () => {
    const dir = join(tempDir('longbuild-provenance-audit-'), 'bundle');
    expect(cliJson(['audit', 'export', '--to', dir], { cwd: repo })).toMatchObject({ attestations: integrated.length, unnoted: 0 });
    const good = runCli(['audit', 'verify', dir, '--key', vkey], { cwd: root });
    expect(good.code, good.stdout + good.stderr).toBe(0);
    expect(good.stdout).toContain(`ok provenance: ${integrated.length} attestations of integrated commits`);
    expect(spawnSync(process.execPath, [join(dir, 'verify.mjs'), '--key', vkey], { encoding: 'utf8' }).status).toBe(0);
    const fixManifest = (d: string): void => {
      const m = JSON.parse(readFileSync(join(d, 'bundle.json'), 'utf8')) as { files: Record<string, string> };
      for (const f of Object.keys(m.files)) {
        if (existsSync(join(d, f))) m.files[f] = crypto.createHash('sha256').update(readFileSync(join(d, f))).digest('hex');
        else delete m.files[f];
      }
      writeFileSync(join(d, 'bundle.json'), JSON.stringify(m));
    };
    const a = integrated[0]!;
    const tampered = (name: string, change: (d: string) => void): string => {
      const d = join(tempDir(`longbuild-provenance-${name}-`), 'bundle');
      cpSync(dir, d, { recursive: true });
      change(d);
      fixManifest(d);
      const r = runCli(['audit', 'verify', d, '--key', vkey], { cwd: root });
      expect(r.code).toBe(1);
      const standalone = spawnSync(process.execPath, [join(d, 'verify.mjs'), '--key', vkey], { encoding: 'utf8' });
      expect(standalone.status).toBe(1);
      return r.stdout;
    };
    // Rewritten though validly signed (a second signature entry): not the attestation the log recorded.
    expect(tampered('rewritten', (d) => {
      const env = JSON.parse(readFileSync(join(d, 'attestations', `${a}.json`), 'utf8'));
      writeFileSync(join(d, 'attestations', `${a}.json`), `${JSON.stringify({ ...env, signatures: [...env.signatures, { keyid: '00000000', sig: 'AA==' }] })}\n`);
    })).toMatch(new RegExp(`FAILED provenance at position [0-9]+: attestations/${a}.json is not the attestation the log recorded at position [0-9]+ \\(its SHA-256 differs: rewritten\\)`));
    // Missing.
    expect(tampered('missing', (d) => rmSync(join(d, 'attestations', `${a}.json`)))).toMatch(new RegExp(`FAILED provenance at position [0-9]+: the attestation of ${a} the log records at position [0-9]+ is missing from the bundle`));
  });

  it('a tampered note is refused: edited, moved to another commit, re-signed with another key, or missing', () => {
    const [a, b] = integrated as [string, string];
    const original = note(a);
    const verify = (c: string) => runCli(['provenance', 'verify', c], { cwd: repo });
    try {
      // Edited: one field of the statement changed, the signature kept.
      const statement = JSON.parse(Buffer.from(original.payload, 'base64').toString('utf8'));
      statement.predicate.runDetails.byproducts[0].annotations.exitCode = 1;
      setNote(a, { ...original, payload: Buffer.from(JSON.stringify(statement)).toString('base64') });
      let r = verify(a);
      expect([r.code, r.stderr.trim()]).toEqual([1, expect.stringMatching(/^longbuild: provenance verify: [0-9a-f]{12}'s note: the signature by .* does not verify/)]);
      expect(python(a).status).toBe(1);
      // Moved: b's (valid, signed) note put on a — the signature holds, the statement is b's.
      setNote(a, note(b));
      r = verify(a);
      expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/note is signed but its statement is not what the log says of this commit \(at \$\.(predicate|subject)/)]);
      expect(python(a).stdout).toMatch(/the statement is about another commit/);
      // Re-signed with another key (under that key's id): not the build's signature.
      const other = crypto.generateKeyPairSync('ed25519').privateKey;
      const body = Buffer.from(original.payload, 'base64');
      const pae = Buffer.concat([Buffer.from(`DSSEv1 ${original.payloadType.length} ${original.payloadType} ${body.length} `), body]);
      setNote(a, { ...original, signatures: [{ keyid: '0badc0de', sig: crypto.sign(null, pae, other).toString('base64') }] });
      r = verify(a);
      expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/no signature by b-[0-9a-f]+\+[0-9a-f]{8}/)]);
      expect(python(a).stdout).toMatch(/no signature by key/);
      // The same forgery under the build's key id: the signature does not verify.
      setNote(a, { ...original, signatures: [{ keyid: vkey.split('+')[1], sig: crypto.sign(null, pae, other).toString('base64') }] });
      expect(verify(a).stderr).toMatch(/does not verify/);
      expect(python(a).stdout).toMatch(/bad signature/);
      // Rewritten though valid (a second signature entry added): the signature and the statement
      // hold, and the independent verifier passes it; the log's record of the note does not.
      setNote(a, { ...original, signatures: [...original.signatures, { keyid: '00000000', sig: 'AA==' }] });
      expect(python(a).status).toBe(0);
      r = verify(a);
      expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/note is not the attestation the log recorded at position [0-9]+ \(its SHA-256 differs: the note was rewritten\)/)]);
      const proofFile = join(tempDir('longbuild-provenance-rewritten-'), 'a.proof');
      writeFileSync(proofFile, cliJson<{ inclusion: { proof: string } }>(['provenance', a], { cwd: repo }).inclusion.proof);
      expect(spawnSync('python3', [PY_TLOG, repo, vkey, a, proofFile], { encoding: 'utf8' }).stdout).toMatch(/the note is not the one the log recorded/);
      // Missing.
      execFileSync('git', ['-C', repo, 'notes', `--ref=${REF}`, 'remove', a]);
      r = verify(a);
      expect([r.code, r.stderr]).toEqual([1, expect.stringMatching(/has no provenance note \(refs\/notes\/longbuild\/provenance\); `longbuild provenance publish` writes them/)]);
    } finally {
      setNote(a, original);
    }
    expect(verify(a).code).toBe(0);
    // A commit no promotion made is refused in one line.
    const base = events(repo)[0]!.data.baseHead as string;
    const none = runCli(['provenance', base], { cwd: repo });
    expect([none.code, none.stderr.trim().split('\n').length]).toEqual([1, 1]);
    expect(none.stderr).toMatch(/was not put on the integration ref by a promotion of this build/);
  });
});
