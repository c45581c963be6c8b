import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { canonicalJson, type JsonValue } from '../../events/canonical.js';
import { NotFoundError, ValidationError } from '../../events/errors.js';
import { sha256Hex } from '../../events/hash.js';
import { git } from '../git/git.js';
import type { StoredEvent } from '../../events/envelope.js';
import type { EventLog } from '../../events/event-log.js';
import { PAGE_SIZE, readPages } from '../log/paging.js';
import { checkpointFiles } from '../transparency/notary.js';
import { AuditFailure, BUNDLE_FORMAT, NAMING_TYPES, attestationFile, commitsNamed, eventSchemas, evidenceNamed, verifyBundle, type CheckLine } from '../audit/verifier.js';
import { readNotes } from '../provenance/attestations.js';
import { pathsOf } from './context.js';
import { openBuildLog } from './build-log.js';
import type { AppContext } from './context.js';
import { packageFile, packageVersion } from '../package-files.js';

export type AuditOutput =
  | { readonly action: 'export'; readonly to: string; readonly events: number; readonly checkpoints: number; readonly evidence: number; readonly commits: number; readonly attestations: number; readonly unnoted: number; readonly bytes: number; readonly unvouched: number }
  | { readonly action: 'verify'; readonly dir: string; readonly ok: boolean; readonly checks: CheckLine[]; readonly failure?: { check: string; position?: number; problem: string }; readonly verifier: VerifierInfo }
  | { readonly action: 'verifier'; readonly path: string; readonly sha256: string; readonly version: string };

/** This install's verifier, and whether the bundle's `verify.mjs` is byte for byte the same. */
export interface VerifierInfo {
  readonly sha256: string;
  /** The bundle's verify.mjs's SHA-256 (null: it has none). */
  readonly bundled: string | null;
  readonly same: boolean;
}

/** The standalone verifier, bundled by `npm run build` into dist/. */
const VERIFY_MJS = packageFile('dist', 'verify.mjs');

/** This install's audit verifier: its path, SHA-256 and version (`audit verifier`). */
export function installedVerifier(): AuditOutput {
  if (!existsSync(VERIFY_MJS)) throw new NotFoundError(`audit verifier: ${VERIFY_MJS} is missing (run \`npm run build\`)`);
  return { action: 'verifier', path: VERIFY_MJS, sha256: sha256Hex(readFileSync(VERIFY_MJS)), version: packageVersion() };
}

/** What `audit verify` checks besides the bundle itself. */
export interface BundleChecks {
  readonly key?: string;
  /** A checkpoint file the bundle's log must extend (absolute). */
  readonly expect?: string;
  readonly allowUnsignedTail?: boolean;
  readonly witnesses: readonly string[];
}

/**
 * a self-contained bundle an auditor checks offline: the log (canonical NDJSON), the signed
 * checkpoints, every evidence file and commit the log names (a git bundle), the driver file, the
 * event schemas as JSON Schema, a manifest, and `verify.mjs`.
 */
export async function exportBundle(ctx: AppContext, to: string): Promise<AuditOutput> {
  if (existsSync(to) && (!statSync(to).isDirectory() || readdirSync(to).length > 0)) throw new ValidationError(`audit export: ${to} is not an empty directory; give a new or empty one`);
  if (!existsSync(VERIFY_MJS)) throw new NotFoundError(`audit export: ${VERIFY_MJS} is missing (run \`npm run build\`)`);
  const paths = pathsOf(ctx);
  const log = await openBuildLog(paths);
  try {
    mkdirSync(join(to, 'checkpoints'), { recursive: true });
    mkdirSync(join(to, 'evidence'));
    mkdirSync(join(to, 'schemas'));
    const evidence = new Set<string>();
    const commits = new Set<string>();
    const attested = new Set<string>();
    let buildId = '';
    let vkey: string | undefined;
    let events = 0;
    const out = openSync(join(to, 'log.ndjson'), 'w');
    try {
      for await (const page of storedLines(log)) {
        let chunk = '';
        for (const { type, line, event } of page) {
          events += 1;
          chunk += `${line}\n`;
          if (type === 'ProvenanceRecorded') {
            for (const a of ((event ?? (JSON.parse(line) as StoredEvent)).data as { attestations: { commit: string }[] }).attestations) attested.add(a.commit);
            continue;
          }
          if (events !== 1 && !NAMING_TYPES.has(type)) continue;
          const e = event ?? (JSON.parse(line) as StoredEvent);
          if (events === 1) {
            const d = e.data as { buildId: string; signing?: { vkey: string }; baseHead?: string };
            buildId = d.buildId;
            vkey = d.signing?.vkey;
            // The commit the build started from: the bundle holds it even before any commit is
            // promoted (a build of read-only nodes names none; git refuses an empty bundle).
            if (typeof d.baseHead === 'string') commits.add(d.baseHead);
          }
          for (const sha of evidenceNamed(e)) evidence.add(sha);
          for (const c of commitsNamed(e)) commits.add(c.commit);
        }
        writeSync(out, chunk);
      }
    } finally {
      closeSync(out);
    }
    if (vkey === undefined) throw new ValidationError('audit export: the log records no signing key (a build from before signed checkpoints): nothing would vouch for the bundle');
    const cps = checkpointFiles(paths);
    for (const c of cps) {
      if (c.size < 0) throw new ValidationError(`audit export: ${c.file} holds a line that is not a signed checkpoint (damaged): run \`longbuild verify\``);
      writeFileSync(join(to, 'checkpoints', `${c.size}.checkpoint`), c.note());
    }
    for (const sha of evidence) {
      const f = join(paths.evidence, sha);
      if (!existsSync(f)) throw new NotFoundError(`audit export: evidence file ${sha} the log names is missing from ${paths.evidence}`);
      copyFileSync(f, join(to, 'evidence', sha));
    }
    copyFileSync(paths.driver, join(to, 'driver.json'));
    for (const [type, text] of Object.entries(eventSchemas())) writeFileSync(join(to, 'schemas', `${type}.json`), text);
    await gitBundle(paths.integrator, [...commits], join(to, 'git.bundle'));
    // each recorded attestation's note, byte for byte, from the user's repository.
    const notes = await readNotes(paths.repo, [...attested]);
    if (notes.size > 0) mkdirSync(join(to, 'attestations'));
    for (const [commit, text] of notes) writeFileSync(join(to, attestationFile(commit)), text);
    copyFileSync(VERIFY_MJS, join(to, 'verify.mjs'));
    const files: Record<string, string> = {};
    let bytes = 0;
    for (const f of listFiles(to)) {
      const body = readFileSync(join(to, f));
      files[f] = sha256Hex(body);
      bytes += body.length;
    }
    const last = cps[cps.length - 1];
    writeFileSync(join(to, 'bundle.json'), `${JSON.stringify({ format: BUNDLE_FORMAT, buildId, vkey, events, lastCheckpoint: last?.size ?? null, files }, null, 1)}\n`);
    return { action: 'export', to, events, checkpoints: cps.length, evidence: evidence.size, commits: commits.size, attestations: notes.size, unnoted: attested.size - notes.size, bytes, unvouched: events - (last?.size ?? 0) };
  } finally {
    await log.close();
  }
}

/**
 * The log as stored, page by page: the backend's stored lines where it has them, else each event
 * re-serialised (then parsed already, so the caller need not parse it again).
 */
async function* storedLines(log: EventLog): AsyncGenerator<{ type: string; line: string; event?: StoredEvent }[]> {
  if (log.readStoredLines === undefined) {
    for await (const page of readPages(log)) yield page.map((e) => ({ type: e.type, line: canonicalJson(e as unknown as JsonValue), event: e }));
    return;
  }
  for (let from = 1; ; from += PAGE_SIZE) {
    const page = await log.readStoredLines(from, PAGE_SIZE);
    if (page.length > 0) yield page;
    if (page.length < PAGE_SIZE) return;
  }
}

/** A git bundle of exactly the named commits (and their history), from the integrator's repository. */
async function gitBundle(integrator: string, commits: readonly string[], file: string): Promise<void> {
  const tmp = mkdtempSync(join(tmpdir(), 'longbuild-audit-git-'));
  try {
    await git(tmp, ['init', '--quiet', '--bare', '.']);
    writeFileSync(join(tmp, 'objects', 'info', 'alternates'), `${join(integrator, 'objects')}\n`);
    const updates = commits.map((c) => `create refs/audit/${c} ${c}\n`).join('');
    await git(tmp, ['update-ref', '--stdin'], { input: updates });
    await git(tmp, ['bundle', 'create', file, '--all'], { allowFail: false });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const f of readdirSync(dir).sort()) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) out.push(...listFiles(p, base));
    else out.push(relative(base, p));
  }
  return out;
}

/** Check a bundle with this install's verifier (the bundle's own verify.mjs is only compared, never run). */
export async function verifyBundleDir(dir: string, opts: BundleChecks): Promise<AuditOutput> {
  if (!existsSync(join(dir, 'bundle.json'))) throw new NotFoundError(`audit verify: ${dir} holds no audit bundle (bundle.json missing)`);
  const checks: CheckLine[] = [];
  // The checks are this install's code; the bundle's verify.mjs is only compared, never run.
  const mine = existsSync(VERIFY_MJS) ? sha256Hex(readFileSync(VERIFY_MJS)) : '';
  const bundled = existsSync(join(dir, 'verify.mjs')) ? sha256Hex(readFileSync(join(dir, 'verify.mjs'))) : null;
  const verifier = { sha256: mine, bundled, same: bundled === mine };
  try {
    await verifyBundle(dir, opts, (l) => checks.push(l));
    return { action: 'verify', dir, ok: true, checks, verifier };
  } catch (err) {
    if (!(err instanceof AuditFailure)) throw err;
    return { action: 'verify', dir, ok: false, checks, verifier, failure: { check: err.check, ...(err.position !== undefined ? { position: err.position } : {}), problem: err.message } };
  }
}
