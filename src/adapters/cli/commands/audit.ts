import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { canonicalJson, type JsonValue } from '../../../events/canonical.js';
import { NotFoundError, UsageError, ValidationError } from '../../../events/errors.js';
import { sha256Hex } from '../../../events/hash.js';
import { git } from '../../git/git.js';
import type { StoredEvent } from '../../../events/envelope.js';
import type { EventLog } from '../../../events/event-log.js';
import { PAGE_SIZE, readPages } from '../../log/paging.js';
import { checkpointFiles } from '../../transparency/notary.js';
import { AuditFailure, BUNDLE_FORMAT, NAMING_TYPES, attestationFile, commitsNamed, eventSchemas, evidenceNamed, verifyBundle, type CheckLine } from '../../audit/verifier.js';
import { readNotes } from '../../provenance/attestations.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { packageFile, packageVersion } from '../../package-files.js';

export const flags: Record<string, FlagSpec> = { to: { type: 'string' }, key: { type: 'string' }, expect: { type: 'string' }, witness: { type: 'string', repeatable: true }, 'allow-unsigned-tail': { type: 'boolean' } };
export const positionals = { min: 1, max: 2 };

export type AuditOutput =
  | { readonly action: 'export'; readonly to: string; readonly events: number; readonly checkpoints: number; readonly evidence: number; readonly commits: number; readonly attestations: number; readonly unnoted: number; readonly bytes: number; readonly unvouched: number }
  | { readonly action: 'verify'; readonly dir: string; readonly ok: boolean; readonly checks: CheckLine[]; readonly failure?: { check: string; position?: number; problem: string }; readonly verifier: VerifierInfo }
  | { readonly action: 'verifier'; readonly path: string; readonly sha256: string; readonly version: string };

/** This install's verifier, and whether the bundle's `verify.mjs` is byte for byte the same. */
interface VerifierInfo {
  readonly sha256: string;
  /** The bundle's verify.mjs's SHA-256 (null: it has none). */
  readonly bundled: string | null;
  readonly same: boolean;
}

/** The standalone verifier, bundled by `npm run build` into dist/. */
const VERIFY_MJS = packageFile('dist', 'verify.mjs');

export async function run(ctx: CommandContext): Promise<AuditOutput> {
  const action = ctx.positionals[0];
  if (action === 'export') {
    if (ctx.positionals.length > 1) throw new UsageError('audit export: takes --to DIR, no positional directory');
    if (typeof ctx.flags.to !== 'string') throw new UsageError('audit export: --to DIR is required (a new or empty directory)');
    return exportBundle(ctx, resolve(ctx.cwd, ctx.flags.to));
  }
  if (action === 'verify') {
    const dir = ctx.positionals[1];
    if (dir === undefined) throw new UsageError('audit verify: give the bundle directory (audit verify DIR)');
    return verifyDir(ctx, resolve(ctx.cwd, dir));
  }
  if (action === 'verifier') {
    if (ctx.positionals.length > 1) throw new UsageError('audit verifier: takes no directory');
    if (!existsSync(VERIFY_MJS)) throw new NotFoundError(`audit verifier: ${VERIFY_MJS} is missing (run \`npm run build\`)`);
    return { action: 'verifier', path: VERIFY_MJS, sha256: sha256Hex(readFileSync(VERIFY_MJS)), version: packageVersion() };
  }
  throw new UsageError(`audit: unknown action '${action}' (expected: export, verify, verifier)`);
}

/**
 * R-37: a self-contained bundle an auditor checks offline: the log (canonical NDJSON), the signed
 * checkpoints, every evidence file and commit the log names (a git bundle), the driver file, the
 * event schemas as JSON Schema, a manifest, and `verify.mjs`.
 */
async function exportBundle(ctx: CommandContext, to: string): Promise<AuditOutput> {
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
    for (const c of cps) copyFileSync(c.file, join(to, 'checkpoints', `${c.size}.checkpoint`));
    for (const sha of evidence) {
      const f = join(paths.evidence, sha);
      if (!existsSync(f)) throw new NotFoundError(`audit export: evidence file ${sha} the log names is missing from ${paths.evidence}`);
      copyFileSync(f, join(to, 'evidence', sha));
    }
    copyFileSync(paths.driver, join(to, 'driver.json'));
    for (const [type, text] of Object.entries(eventSchemas())) writeFileSync(join(to, 'schemas', `${type}.json`), text);
    await gitBundle(paths.integrator, [...commits], join(to, 'git.bundle'));
    // R-62: each recorded attestation's note, byte for byte, from the user's repository.
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

async function verifyDir(ctx: CommandContext, dir: string): Promise<AuditOutput> {
  if (!existsSync(join(dir, 'bundle.json'))) throw new NotFoundError(`audit verify: ${dir} holds no audit bundle (bundle.json missing)`);
  const checks: CheckLine[] = [];
  const witnesses = Array.isArray(ctx.flags.witness) ? ctx.flags.witness : [];
  const opts = {
    ...(typeof ctx.flags.key === 'string' ? { key: ctx.flags.key } : {}),
    ...(typeof ctx.flags.expect === 'string' ? { expect: resolve(ctx.cwd, ctx.flags.expect) } : {}),
    ...(ctx.flags['allow-unsigned-tail'] === true ? { allowUnsignedTail: true } : {}),
    witnesses,
  };
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

export function render(d: AuditOutput): string {
  if (d.action === 'export') {
    return `exported ${d.events} events, ${d.checkpoints} signed checkpoints, ${d.evidence} evidence files, ${d.commits} commits and ${d.attestations} attestations (${Math.round(d.bytes / 1024)} KiB) to ${d.to}\n`
      + (d.unnoted > 0 ? `note: ${d.unnoted} attestation${d.unnoted === 1 ? '' : 's'} the log records ${d.unnoted === 1 ? 'has' : 'have'} no note in the repository (removed?): \`longbuild provenance publish\` writes them again; then export again\n` : '')
      + (d.unvouched > 0 ? `note: the last ${d.unvouched} events are after the last signed checkpoint (a run was interrupted): an auditor must pass --allow-unsigned-tail; \`longbuild step\` signs them, then export again\n` : '')
      + `an auditor checks it with their own longbuild: longbuild audit verify ${d.to} --key VKEY\n`;
  }
  if (d.action === 'verifier') return `${d.sha256}  ${d.path}\nlongbuild ${d.version}'s audit verifier: a bundle's verify.mjs with another SHA-256 is not this verifier\n`;
  const note = d.verifier.bundled === null ? 'note: the bundle carries no verify.mjs; checked with this install\'s verifier\n'
    : d.verifier.same ? '' : `note: the bundle's verify.mjs (sha256 ${d.verifier.bundled.slice(0, 16)}…) is not this install's verifier (${d.verifier.sha256.slice(0, 16)}…): do not run it; these checks are this install's\n`;
  return note + d.checks.map((c) => `ok ${c.check}: ${c.detail}\n`).join('') + (d.failure ? `FAILED ${d.failure.check}${d.failure.position !== undefined ? ` at position ${d.failure.position}` : ''}: ${d.failure.problem}\n` : 'verified: every check passed\n');
}

export function failure(d: AuditOutput): string | undefined {
  if (d.action !== 'verify' || !d.failure) return undefined;
  return `audit verify failed${d.failure.position !== undefined ? ` at position ${d.failure.position}` : ''} (${d.failure.check}): ${d.failure.problem}`;
}
