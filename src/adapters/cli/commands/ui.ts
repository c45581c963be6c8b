import { execFile } from 'node:child_process';
import { EffectError, UsageError } from '../../../events/errors.js';
import { pause } from '../../interrupt.js';
import { Viewer } from '../../ui/viewer.js';
import { pathsOf } from '../../app/context.js';
import { openBuildLog } from '../../app/build-log.js';
import type { CommandContext, FlagSpec } from '../types.js';
import { sessionOptions } from '../../app/context.js';
import { openTimeSource } from '../../app/reading.js';
import { packageFile } from '../../package-files.js';

export const flags: Record<string, FlagSpec> = { port: { type: 'int' }, host: { type: 'string' }, open: { type: 'boolean' } };

/** The package's bin/longbuild.js. */
const BIN_PATH = packageFile('bin', 'longbuild.js');

/** The port `longbuild ui` listens on unless --port says otherwise (0: any free port). */
export const DEFAULT_PORT = 4177;

export interface UiOutput {
  readonly url: string;
  readonly position: number;
}

/**
 * `longbuild ui [--port N] [--host H] [--open]`: serve the read-only viewer of this build until
 * SIGINT/SIGTERM. Prints the address first (`--json`: one `{"url":…}` line), so a script can wait for it.
 */
export async function run(ctx: CommandContext): Promise<UiOutput> {
  const port = ctx.flags.port === undefined ? DEFAULT_PORT : Number(ctx.flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`ui: --port must be 0..65535, got ${String(ctx.flags.port)}`);
  const explicitHost = typeof ctx.flags.host === 'string';
  const host = explicitHost ? (ctx.flags.host as string) : '127.0.0.1';
  if (host === '') throw new UsageError('ui: --host must name an address, e.g. 127.0.0.1');
  const paths = pathsOf(ctx);
  const quiet: CommandContext = { ...ctx, json: true, stderr: () => {}, stdout: () => {} };
  const viewer = new Viewer({
    host, port, allowAnyHost: explicitHost, paths,
    openLog: () => openBuildLog(paths),
    openSource: () => openTimeSource(sessionOptions(quiet)),
    // `longbuild verify` in a process of its own: on a big log it folds every event again, which
    // would stall the server's event loop for as long.
    verify: () => verifyInChild(ctx),
  });
  let started: { url: string };
  try {
    started = await viewer.start();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new EffectError(`ui: port ${port} on ${host} is in use; give another with --port N (0: any free port)`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') throw new EffectError(`ui: cannot listen on ${host}: not an address of this machine`);
    throw err;
  }
  ctx.stdout(ctx.json ? `${JSON.stringify({ url: started.url, position: viewer.knownHead })}\n` : `longbuild ui: ${started.url} (read-only; Ctrl-C to stop)\n`);
  if (explicitHost && host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') {
    ctx.stderr(`longbuild: ui: serving on ${host}: anyone who can reach it can read this build's log and evidence (no login)\n`);
  }
  if (ctx.flags.open === true) {
    const [program, ...args] = browserCommand(process.platform, started.url, ctx.env);
    execFile(program!, args, { timeout: 10_000 }, (err) => {
      if (err) ctx.stderr(`longbuild: ui: could not open a browser (${err.message.split('\n')[0]}); open ${started.url}\n`);
    });
  }
  try {
    while (await pause(1000)) { /* serve until SIGINT/SIGTERM */ }
  } finally {
    await viewer.close();
  }
  return { url: started.url, position: viewer.head };
}

/** Everything was said when the server started. */
export function render(): string {
  return '';
}
export function renderJson(): string {
  return '';
}

/** `longbuild verify --json` on this build, in a child process; its result for the badge. */
function verifyInChild(ctx: CommandContext): Promise<{ ok: boolean; events: number; checkpoints?: number; problem?: string }> {
  const args = [BIN_PATH, 'verify', '--json', '--repo', ctx.repo, ...(ctx.flags.dir !== undefined ? ['--dir', ctx.dir] : [])];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ctx.cwd, env: { ...process.env, ...ctx.env } as NodeJS.ProcessEnv, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      try {
        const r = JSON.parse(stdout) as { ok: boolean; events: number; checkpoints: number; problems: { position: number; problem: string }[] };
        const first = r.problems[0];
        resolve({ ok: r.ok, events: r.events, checkpoints: r.checkpoints, ...(first ? { problem: `position ${first.position}: ${first.problem}` } : {}) });
      } catch {
        resolve({ ok: false, events: 0, problem: (stderr || (err?.message ?? 'verify printed nothing')).trim().split('\n')[0]!.replace(/^longbuild: /, '') });
      }
    });
  });
}

/**
 * How this platform opens a URL in the user's browser: `$BROWSER` when set (a program, as
 * Python's webbrowser and xdg-utils read it), else `open` on macOS, `start` on Windows and
 * `xdg-open` elsewhere (WSL included, where wslu makes it reach Windows' browser).
 */
export function browserCommand(platform: NodeJS.Platform, url: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const chosen = env.BROWSER?.split(':').find((b) => b.trim() !== '');
  if (chosen !== undefined) return [chosen.trim(), url];
  if (platform === 'darwin') return ['open', url];
  if (platform === 'win32') return ['cmd', '/c', 'start', '""', url.replaceAll('&', '^&')];
  return ['xdg-open', url];
}
