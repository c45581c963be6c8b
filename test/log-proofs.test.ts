import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { COSIGNATURE_V1, ED25519, checkpointText, formatVerifierKey, parseNote, parseSignerKey, parseVerifierKey, rawPublicKey, signNote, verifyNote } from '../src/events/signed-note.js';
import { eventLeafHash, hashLeaves } from '../src/events/merkle.js';
import { deriveBuildKey, generateSigningKey } from '../src/adapters/transparency/keys.js';
import { cliJson, runCli } from './support/cli.js';
import { rows as storedRows } from './support/rewrite-log.js';

// Proof files and the witness, driven through the CLI on a real build.

const root = mkdtempSync(join(tmpdir(), 'lb-proofs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const ORBIT = join(import.meta.dirname, 'fixtures', 'orbit.json');
let n = 0;

function build(steps?: number): { repo: string; dir: string; db: string; vkey: string } {
  const repo = join(root, `b${n++}`);
  const init = cliJson<{ signingKey: { vkey: string } }>(['init', '--blueprint', ORBIT, '--repo', repo], { cwd: root });
  const run = runCli(['run', '--repo', repo, ...(steps === undefined ? [] : ['--max-steps', String(steps)])], { cwd: root });
  expect(run.code, run.stderr).toBe(0);
  return { repo, dir: join(repo, '.longbuild'), db: join(repo, '.longbuild', 'events.db'), vkey: init.signingKey.vkey };
}

const latestCheckpoint = (dir: string): string => {
  const f = readdirSync(join(dir, 'checkpoints')).filter((x) => x.endsWith('.checkpoint')).sort((a, b) => parseInt(a) - parseInt(b));
  return join(dir, 'checkpoints', f[f.length - 1]!);
};

/** Flip one base64 character of line `line` (counted from the top) of a text file. */
function flipLine(file: string, line: number, to: string): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  const l = lines[line]!;
  const i = l.length - 5;
  lines[line] = l.slice(0, i) + (l[i] === 'A' ? 'B' : 'A') + l.slice(i + 1);
  writeFileSync(to, lines.join('\n'));
}

describe('R-34 proof files an auditor checks offline', () => {
  it('R-34 inclusion proofs of every position check out against the build\'s key outside the build; a changed event, proof hash or checkpoint byte fails', () => {
    const b = build();
    const total = cliJson<{ events: number }>(['verify', '--repo', b.repo], { cwd: root }).events;
    for (const position of [1, 2, Math.floor(total / 2), total]) {
      const file = join(root, `p${n}-${position}.tlog-proof`);
      cliJson(['prove', '--repo', b.repo, '--position', String(position), '--out', file], { cwd: root });
      const ok = cliJson<{ result: { kind: string; position: number; size: number } }>(['prove', '--check', file, '--key', b.vkey], { cwd: root });
      expect(ok.result).toMatchObject({ kind: 'inclusion', position, size: total });
      // Line 1 is the event (extra), line 3 the first proof hash (when there is one), the checkpoint's root after the blank line.
      const lines = readFileSync(file, 'utf8').split('\n');
      const rootLine = lines.indexOf('') + 3;
      for (const line of [1, ...(lines[3] !== '' ? [3] : []), rootLine]) {
        const bad = join(root, `bad-${n}-${position}-${line}`);
        flipLine(file, line, bad);
        const r = runCli(['prove', '--check', bad, '--key', b.vkey], { cwd: root });
        expect(r.code, `line ${line}`).toBe(1);
        expect(r.stderr).toMatch(/does not verify/);
      }
    }
    const outside = runCli(['prove', '--check', join(root, `p${n}-1.tlog-proof`)], { cwd: root });
    expect(outside.stderr.trim()).toBe("longbuild: prove: --check needs --key VKEY (the log's verifier key) outside a build\nrun `longbuild --help` for usage");
  });

  it('R-34 a consistency proof from a checkpoint held early to the latest verifies; claimed from another size it does not', () => {
    const b = build(4);
    const held = join(root, `held-${n}`);
    copyFileSync(latestCheckpoint(b.dir), held);
    expect(runCli(['run', '--repo', b.repo], { cwd: root }).code).toBe(0);
    const file = join(root, `c-${n}.proof`);
    cliJson(['prove', '--repo', b.repo, '--since', held, '--out', file], { cwd: root });
    const ok = cliJson<{ result: { kind: string; size1: number; size: number } }>(['prove', '--check', file, '--key', b.vkey], { cwd: root });
    expect(ok.result.kind).toBe('consistency');
    expect(ok.result.size).toBeGreaterThan(ok.result.size1);
    const text = readFileSync(file, 'utf8').replace(/^size1 (\d+)$/m, (_m, s) => `size1 ${Number(s) + 1}`);
    writeFileSync(`${file}.bad`, text);
    expect(runCli(['prove', '--check', `${file}.bad`, '--key', b.vkey], { cwd: root }).code).toBe(1);
  });
});

describe('R-35 a witness cosigns only extensions of what it saw', () => {
  it('R-35 cosigns, cosigns again after the build grew (consistent), and its cosignature verifies under its key; a rewrite re-signed by another key and a cut log are refused', () => {
    const b = build(4);
    const wkey = join(root, `w${n}.key`);
    const first = cliJson<{ size: number; from: number | null; witnessKey: string }>(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey, '--log-key', b.vkey, '--name', 'witness.example/w1'], { cwd: root });
    expect(first.from).toBeNull();
    expect(runCli(['run', '--repo', b.repo], { cwd: root }).code).toBe(0);
    const second = cliJson<{ size: number; from: number; witnessKey: string }>(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(second.from).toBe(first.size);
    expect(second.size).toBeGreaterThan(first.size);
    const note = readFileSync(latestCheckpoint(b.dir), 'utf8');
    const parsedKey = parseVerifierKey(second.witnessKey);
    expect(parsedKey.type).toBe(COSIGNATURE_V1);
    expect(verifyNote(note, parsedKey).signatures).toHaveLength(2); // the log's and the witness's
    // Cosigning the same tree again replaces its line: still one per cosigner.
    cliJson(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(parseNote(readFileSync(latestCheckpoint(b.dir), 'utf8')).signatures).toHaveLength(2);
    // The first cosigned tree still verifies in the build: verify ignores the extra signature lines.
    expect(runCli(['verify', '--repo', b.repo], { cwd: root }).code).toBe(0);

    // An attacker rewrites the log (one byte of event 2) and re-signs a checkpoint under a key of their own.
    const rows = storedRows(b.db).map((r) => r.hash);
    const attacker = generateSigningKey();
    const origin = parseVerifierKey(b.vkey).name;
    const forged = hashLeaves(rows.map((h, i) => eventLeafHash(i === 1 ? 'f'.repeat(64) : h)));
    writeFileSync(latestCheckpoint(b.dir), signNote(checkpointText(origin, rows.length, forged), origin, attacker));
    const refused = runCli(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/does not verify.*refusing to cosign/);
    // Even under the genuine log key (an attacker holding it), another root for the tree it cosigned is refused.
    const genuineKeyFile = join(process.env.LONGBUILD_CONFIG_DIR!, 'signing.key');
    expect(readFileSync(genuineKeyFile, 'utf8')).toMatch(/^PRIVATE\+KEY\+/);
    const genuine = deriveBuildKey(parseSignerKey(readFileSync(genuineKeyFile, 'utf8')).privateKey, origin); // the build's own key
    writeFileSync(latestCheckpoint(b.dir), signNote(checkpointText(origin, rows.length, forged), origin, genuine));
    const split = runCli(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(split.code).toBe(1);
    expect(second.size).toBe(rows.length);
    expect(split.stderr).toMatch(/another root than the one this witness cosigned \(a split view\); refusing/);
    // A larger tree under the genuine key whose root does not extend the cosigned one is refused.
    const grow = new Database(b.db);
    const last = storedRows(b.db).at(-1)!;
    grow.prepare('INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)').run(Number(last.position) + 1, last.stream_id, Number(last.revision) + 1, 'BuildBlocked', 1, '{}', last.metadata, last.hash, 'e'.repeat(64));
    grow.close();
    writeFileSync(join(b.dir, 'checkpoints', `${rows.length + 1}.checkpoint`), signNote(checkpointText(origin, rows.length + 1, forged), origin, genuine));
    const diverged = runCli(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(diverged.code).toBe(1);
    expect(diverged.stderr).toMatch(new RegExp(`the tree of size ${rows.length + 1} is not an extension of the tree of size ${rows.length} this witness cosigned`));
    rmSync(join(b.dir, 'checkpoints', `${rows.length + 1}.checkpoint`));
    // A smaller tree than it cosigned (a cut log) is refused.
    const cps = readdirSync(join(b.dir, 'checkpoints')).filter((x) => x.endsWith('.checkpoint')).sort((x, y) => parseInt(x) - parseInt(y));
    for (const f of cps.slice(-2)) rmSync(join(b.dir, 'checkpoints', f));
    const cut = runCli(['witness', 'cosign', '--repo', b.repo, '--witness-key', wkey], { cwd: root });
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/smaller than the \d+ this witness cosigned \(the log was cut\)/);
    expect(formatVerifierKey('x', ED25519, rawPublicKey(attacker))).not.toBe(b.vkey);
  });
});
