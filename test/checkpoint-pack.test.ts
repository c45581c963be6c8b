/**
 * Signed checkpoints packed as milestones close (issue 50, decision 0052): a real run of a long
 * blueprint leaves its older checkpoint files in checkpoints/packed.jsonl, and every one of them
 * still verifies — in `verify`, in an audit bundle checked by an auditor's `audit verify`. The
 * states a crash can leave (a torn last line, files both packed and loose) read as the checkpoints
 * that were signed, for all sequences of signatures, packs and crashes (a property against a map
 * of what was signed). The integrator's loose objects are packed by git without losing one.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, tempDir } from './support/cli.js';
import { chainBuild } from './support/random-blueprint.js';
import { buildPaths } from '../src/adapters/build-dir.js';
import { CHECKPOINT_PACK, PACK_AFTER, checkpointFiles, packCheckpoints } from '../src/adapters/transparency/checkpoint-pack.js';
import { LOOSE_OBJECTS_LIMIT, looseObjectsEstimate, packLooseObjects } from '../src/adapters/git/integrator-repo.js';

const looseSizes = (dir: string): number[] => readdirSync(dir).map((f) => /^(\d+)\.checkpoint$/.exec(f)).filter((m) => m !== null).map((m) => Number(m![1]));

describe('checkpoints packed as milestones close (decision 0052)', () => {
  let repo = '';
  let vkey = '';
  let signed = 0;
  beforeAll(() => {
    const made = chainBuild<{ signingKey: { vkey: string } }>(800, 'checkpoint pack');
    repo = made.repo;
    vkey = made.init.signingKey.vkey;
    const run = runCli(['run', '--json'], { cwd: repo });
    expect(run.code, run.stderr).toBe(0);
    signed = checkpointFiles(buildPaths({ repo })).length;
  });

  it('a long run packs its older checkpoints, and verify checks every one of them, packed or not', () => {
    const dir = join(repo, '.longbuild', 'checkpoints');
    const lines = readFileSync(join(dir, CHECKPOINT_PACK), 'utf8').trim().split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(PACK_AFTER);
    expect(looseSizes(dir).length).toBeLessThan(signed - PACK_AFTER + 1);
    // The newest is a file; no size is both packed and loose.
    const packedSizes = lines.map((l) => (JSON.parse(l) as { size: number }).size);
    expect(Math.max(...looseSizes(dir))).toBeGreaterThan(Math.max(...packedSizes));
    expect(packedSizes.filter((s) => looseSizes(dir).includes(s))).toEqual([]);
    const verified = runCli(['verify'], { cwd: repo });
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`${signed} signed checkpoints checked`);
  });

  it('an audit bundle carries every checkpoint, packed ones as files, and an auditor verifies it', () => {
    const bundle = join(tempDir(), 'bundle');
    const out = cliJson<{ checkpoints: number }>(['audit', 'export', '--to', bundle], { cwd: repo });
    expect(out.checkpoints).toBe(signed);
    expect(looseSizes(join(bundle, 'checkpoints'))).toHaveLength(signed);
    const checked = runCli(['audit', 'verify', bundle, '--key', vkey], { cwd: tempDir() });
    expect(checked.code, checked.stderr + checked.stdout).toBe(0);
  });

  it('a packed note changed by one character is named by verify', () => {
    const copy = join(tempDir(), 'repo');
    cpSync(repo, copy, { recursive: true });
    const pack = join(copy, '.longbuild', 'checkpoints', CHECKPOINT_PACK);
    const lines = readFileSync(pack, 'utf8').split('\n');
    const line = JSON.parse(lines[3]!) as { size: number; note: string };
    const at = line.note.lastIndexOf(' ') + 10; // inside the signature's base64
    line.note = line.note.slice(0, at) + (line.note[at] === 'A' ? 'B' : 'A') + line.note.slice(at + 1);
    lines[3] = JSON.stringify(line);
    writeFileSync(pack, lines.join('\n'));
    const verified = runCli(['verify'], { cwd: copy });
    expect(verified.code).not.toBe(0);
    expect(verified.stderr + verified.stdout).toContain(`packed.jsonl (size ${line.size})`);
  });

  it('for all sequences of signatures, packs and crashes, the checkpoints listed are those signed', () => {
    fc.assert(fc.property(
      fc.array(fc.oneof(
        fc.record({ op: fc.constant('sign' as const), note: fc.string({ maxLength: 40 }) }),
        fc.record({ op: fc.constant('pack' as const), after: fc.integer({ min: 1, max: 4 }) }),
        // A crash while the lines were appended: a cut-off line at the end of the pack.
        fc.record({ op: fc.constant('torn' as const), cut: fc.nat() }),
        // A crash after the lines were flushed, before every file was removed: some packed notes loose again.
        fc.record({ op: fc.constant('unremoved' as const), pick: fc.array(fc.nat(), { maxLength: 3 }) }),
      ), { maxLength: 30 }),
      (ops) => {
        const root = tempDir();
        const paths = buildPaths(root);
        mkdirSync(paths.checkpoints, { recursive: true });
        const oracle = new Map<number, string>(); // every note signed, by size
        let size = 0;
        for (const o of ops) {
          if (o.op === 'sign') {
            size += 1 + (o.note.length % 3);
            const note = `cp ${size}\n${o.note}\n— sig\n`;
            writeFileSync(join(paths.checkpoints, `${size}.checkpoint`), note);
            oracle.set(size, note);
          } else if (o.op === 'pack') {
            packCheckpoints(paths, o.after);
          } else if (o.op === 'torn') {
            const line = `${JSON.stringify({ size: size + 1000, note: 'never signed' })}\n`;
            appendFileSync(join(paths.checkpoints, CHECKPOINT_PACK), line.slice(0, o.cut % line.length));
          } else {
            const pack = join(paths.checkpoints, CHECKPOINT_PACK);
            if (!existsSync(pack)) continue;
            const whole = readFileSync(pack, 'utf8').split('\n').slice(0, -1).filter((l) => l.startsWith('{"size":') && l.endsWith('}'));
            for (const i of o.pick) {
              if (whole.length === 0) break;
              const { size: s, note } = JSON.parse(whole[i % whole.length]!) as { size: number; note: string };
              writeFileSync(join(paths.checkpoints, `${s}.checkpoint`), note);
            }
          }
          const listed = checkpointFiles(paths);
          expect(new Map(listed.map((c) => [c.size, c.note()]))).toEqual(oracle);
          expect(listed.map((c) => c.size)).toEqual([...oracle.keys()].sort((a, b) => a - b));
          // The newest is never packed away.
          if (oracle.size > 0) expect(listed.at(-1)!.packed).toBe(false);
        }
        rmSync(root, { recursive: true, force: true });
      },
    ), { numRuns: 150 });
  });
});

describe("the integrator's loose objects packed as milestones close (decision 0052)", () => {
  /** A bare repository with `n` loose blobs and a commit on a ref; returns it and the blobs' ids. */
  function repoWithLooseObjects(n: number): { dir: string; blobs: string[]; head: string } {
    const dir = join(tempDir(), 'integrator.git');
    execFileSync('git', ['init', '-q', '--bare', dir]);
    const input = Array.from({ length: n }, (_, i) => `blob ${i}`).join('\n');
    const src = join(dir, '..', 'blobs');
    mkdirSync(src);
    const files = input.split('\n').map((text, i) => {
      const f = join(src, String(i));
      writeFileSync(f, text);
      return f;
    });
    const blobs = execFileSync('git', ['--git-dir', dir, 'hash-object', '-w', '--stdin-paths'], { input: files.join('\n'), encoding: 'utf8' }).trim().split('\n');
    const tree = execFileSync('git', ['--git-dir', dir, 'mktree'], { input: `100644 blob ${blobs[0]}\tfirst\n`, encoding: 'utf8' }).trim();
    const head = execFileSync('git', ['--git-dir', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit-tree', tree, '-m', 'c'], { encoding: 'utf8' }).trim();
    execFileSync('git', ['--git-dir', dir, 'update-ref', 'refs/heads/longbuild/integration', head]);
    return { dir, blobs, head };
  }
  const countObjects = (dir: string): Record<string, number> => Object.fromEntries(execFileSync('git', ['--git-dir', dir, 'count-objects', '-v'], { encoding: 'utf8' }).trim().split('\n').map((l) => l.split(': ')).map(([k, v]) => [k!, Number(v)]));

  it('past the limit they go into a pack, every object still there (reachable or not); below it nothing is done', async () => {
    const many = repoWithLooseObjects(3000);
    expect(looseObjectsEstimate(many.dir)).toBeGreaterThanOrEqual(LOOSE_OBJECTS_LIMIT);
    expect(await packLooseObjects(many.dir)).toBe(true);
    const after = countObjects(many.dir);
    expect(after.count).toBe(0);
    expect(after['in-pack']).toBe(3002);
    // Every blob readable (unreachable ones too: nothing is pruned), the ref's commit whole.
    const present = execFileSync('git', ['--git-dir', many.dir, 'cat-file', '--batch-check'], { input: many.blobs.join('\n'), encoding: 'utf8' });
    expect(present.trim().split('\n').filter((l) => / blob \d+$/.test(l))).toHaveLength(3000);
    execFileSync('git', ['--git-dir', many.dir, 'fsck', '--no-dangling', '--no-progress']);
    expect(execFileSync('git', ['--git-dir', many.dir, 'rev-parse', 'refs/heads/longbuild/integration'], { encoding: 'utf8' }).trim()).toBe(many.head);

    const few = repoWithLooseObjects(100);
    expect(await packLooseObjects(few.dir)).toBe(false);
    expect(countObjects(few.dir).count).toBe(102);
  });
});
