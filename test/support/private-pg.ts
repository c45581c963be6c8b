import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A PostgreSQL cluster of a test's own, on its own port (issue 17): tests that stop the database
 * hard must never stop the shared one. initdb + pg_ctl of the installed PostgreSQL, run as the
 * `postgres` user (the server refuses to run as root); trust authentication on 127.0.0.1.
 */
export interface PrivateCluster {
  readonly url: string;
  readonly port: number;
  /** Stop the server: 'immediate' is a hard stop (no shutdown checkpoint, connections cut). */
  stop(mode?: 'immediate' | 'fast'): void;
  start(): void;
  destroy(): void;
}

const BIN_DIRS = ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin'];

/** The server binaries, or null when PostgreSQL is not installed here. */
export function postgresBin(): string | null {
  return BIN_DIRS.find((d) => existsSync(join(d, 'initdb'))) ?? null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function asPostgres(argv: readonly string[]): void {
  const cmd = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...argv] : [...argv];
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr || r.stdout}`);
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = postgresBin();
  if (bin === null) throw new Error('PostgreSQL is not installed (no initdb under /usr/lib/postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'longbuild-pgcluster-'));
  if (process.getuid?.() === 0) {
    const pgUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const pgGid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, pgUid, pgGid);
  }
  const data = join(dir, 'data');
  asPostgres([join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40`;
  const start = () => asPostgres([join(bin, 'pg_ctl'), '-D', data, '-o', opts, '-l', join(dir, 'log'), '-w', '-t', '60', 'start']);
  const stop = (mode: 'immediate' | 'fast' = 'immediate') => asPostgres([join(bin, 'pg_ctl'), '-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    destroy() {
      try {
        stop('immediate');
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
