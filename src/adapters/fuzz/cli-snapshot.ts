/**
 * A V8 start-up snapshot of the CLI for the fuzzer's children (decision 0028): built once per
 * campaign for the Node.js that runs it, from dist/cli.cjs (scripts/bundle.mjs); a case's
 * runs then start with every module loaded and evaluated (`node --snapshot-blob FILE -- run …`),
 * ~45 ms sooner each. Anything that keeps it from being built leaves the children on
 * bin/longbuild.js, with the reason in the report.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { packageFile } from '../package-files.js';

/** The bundle a snapshot is built from. */
export const SNAPSHOT_SOURCE = packageFile('dist', 'cli.cjs');

export const SNAPSHOT_MODES = ['auto', 'on', 'off'] as const;
export type SnapshotMode = (typeof SNAPSHOT_MODES)[number];

/** 'auto' builds a snapshot for at least this many cases (it costs ~0.35 s; each case's two runs save ~45 ms each). */
export const AUTO_SNAPSHOT_CASES = 8;

export type CliSnapshot =
  | { readonly launch: readonly string[]; readonly buildMs: number }
  | { readonly reason: string };

/** Node.js's notices that some built-ins are "not yet fully verified" in a snapshot: expected, not a failure. */
const NOTICE = /Warning: It's not yet fully verified|^It may still work|^To request support|--trace-warnings|^\s*$/;

/** Build the snapshot at `<dir>/cli.blob` with `env`; resolves to the argv that starts the CLI from it, or why not. */
export function buildCliSnapshot(dir: string, env: NodeJS.ProcessEnv, source = SNAPSHOT_SOURCE): Promise<CliSnapshot> {
  if (!existsSync(source)) return Promise.resolve({ reason: `${source} is missing (run \`npm run build\` in the package)` });
  const blob = join(dir, 'cli.blob');
  const t0 = performance.now();
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--snapshot-blob', blob, '--build-snapshot', source], { cwd: dir, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', (e) => done({ reason: `node --build-snapshot could not start: ${e.message}` }));
    child.on('close', (code, signal) => {
      if (code === 0 && existsSync(blob)) {
        done({ launch: ['--snapshot-blob', blob, '--'], buildMs: Math.round(performance.now() - t0) });
        return;
      }
      const said = stderr.split('\n').filter((l) => !NOTICE.test(l)).map((l) => l.trim());
      const line = said.find((l) => /^(longbuild:|\w*Error\b)/.test(l)) ?? said[0] ?? '';
      done({ reason: `node --build-snapshot ${signal !== null ? `was killed (${signal})` : `exited ${code}`}${line ? `: ${line}` : ''}` });
    });
  });
}
